"""The production-readiness checklist: each item flips with the spec field that decides it;
`tokenscale check` exit codes and JSON; the chart's alert rules equal the Python ones."""

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tests.helpers import PROFILE, ROOT, deep_merge, manifest, spec
from tests.support.chart_rules import render_prometheus_rule, rule_file_text
from tests.unit.test_status_transitions import SNAP, FakeKube, _body, _condition, _metrics
from tokenscale.api import InferenceService, InferenceServiceSpec
from tokenscale.cli.app import app
from tokenscale.metrics.promql import QueryConfig, alert_rules
from tokenscale.planning import plan_service
from tokenscale.render import render_bundle
from tokenscale.render.readiness import REQUIRED_ALERTS, ReadinessItem, readiness, summary
from tokenscale.scaling.snapshot import Snapshot

runner = CliRunner()
#: A model given by its shapes alone: its checkpoint's precision is unknown.
INLINE: dict[str, Any] = {
    "catalog": None,
    "weightDtype": None,
    "architecture": {
        "layers": 32,
        "hiddenSize": 4096,
        "attentionHeads": 32,
        "kvHeads": 8,
        "intermediateSize": 14336,
        "vocabSize": 128256,
        "maxContextTokens": 131072,
    },
}
ALL_ALERTS = frozenset(REQUIRED_ALERTS.values())
#: A spec every item passes: pinned precision, context and output tail, a profile, redundancy.
READY: dict[str, Any] = {
    "model": {"weightDtype": "bf16"},
    "scaling": {"redundancy": {"spareReplicas": 1}},
    "profile": PROFILE,
}


def _items(s: InferenceServiceSpec, **kw: Any) -> dict[str, ReadinessItem]:
    plan = plan_service(s, "svc")
    objects = (
        render_bundle("svc", "default", s, plan, plan.sized.total).objects
        if plan.replicas is not None
        else []
    )
    return {i.item: i for i in readiness(s, plan, objects, **kw)}


def test_a_ready_spec_passes_every_item() -> None:
    items = _items(spec(**READY), alert_names=ALL_ALERTS)
    assert [k for k, i in items.items() if not i.ok] == []
    assert summary(list(items.values()))[0] is True
    assert len(items) == 13


@pytest.mark.parametrize(
    ("item", "patch", "words"),
    [
        ("weight-precision", {"model": INLINE}, "spec.model.weightDtype"),
        ("max-context", {"workload": {"maxContextTokens": None}}, "maxContextTokens"),
        ("max-output", {"workload": {"outputTokens": {"p99": None}}}, "outputTokens.p99"),
        ("kv-watermark", {"scaling": {"policy": {"kvHighWatermark": 0.99}}}, "preempts"),
        ("kv-watermark", {"scaling": {"replicas": 3}}, "pins the count"),
        ("rollout-capacity", {"scaling": {"redundancy": None}}, "spareReplicas"),
        ("load-tested", {"profile": None}, "tokenscale bench"),
        ("chunked-prefill-budget", {"serving": {"enableChunkedPrefill": False}}, "off"),
        (
            "prefix-caching",
            {"serving": {"enablePrefixCaching": False}, "workload": {"prefixCacheHitRate": 0.5}},
            "enablePrefixCaching",
        ),
        ("rollback", {"serving": {"image": "vllm/vllm-openai:latest"}}, "not pinned"),
        ("rollback", {"serving": {"image": "vllm/vllm-openai"}}, "not pinned"),
    ],
)
def test_each_item_fails_for_its_reason(item: str, patch: dict[str, Any], words: str) -> None:
    merged = deep_merge(manifest(**READY), {"spec": patch})
    items = _items(InferenceService.model_validate(merged).spec, alert_names=ALL_ALERTS)
    assert items[item].ok is False, items[item]
    assert words in items[item].why
    others = [k for k, i in items.items() if not i.ok and k != item]
    assert others == [], others


def test_weight_precision_passes_from_a_known_checkpoint() -> None:
    hf = yaml.safe_load((ROOT / "deploy/examples/qwen2.5-7b-hfconfig.yaml").read_text())
    s = spec(model={**hf["spec"]["model"], "catalog": None}, hardware=hf["spec"]["hardware"])
    assert s.model.weight_dtype is None
    assert _items(s)["weight-precision"].ok is True


def test_alerts_are_judged_only_when_asked_and_name_what_is_missing() -> None:
    assert "alerts" not in _items(spec(**READY))
    partial = ALL_ALERTS - {"TokenscaleVllmPreempting"}
    item = _items(spec(**READY), alert_names=partial)["alerts"]
    assert item.ok is False
    assert "preemption (TokenscaleVllmPreempting)" in item.why
    assert "TokenscaleVllmEngineDown" not in item.why


def test_live_observability_needs_prometheus_to_answer() -> None:
    full = Snapshot(
        at=0,
        replicas_reporting=2,
        ttft_p99_s=0.5,
        tpot_p99_s=0.03,
        queue_p99_s=0.1,
        kv_usage_max=0.4,
        kv_blocks_total=1000,
        preemptions_per_s=0.0,
    )
    items = _items(spec(**READY), live=full)
    assert items["latency-observable"].ok
    assert items["kv-observable"].ok
    missing = full.model_copy(update={"queue_p99_s": None, "preemptions_per_s": None})
    items = _items(spec(**READY), live=missing)
    assert not items["latency-observable"].ok
    assert "queue P99" in items["latency-observable"].why
    assert not items["kv-observable"].ok
    assert "preemptions" in items["kv-observable"].why


def _write(tmp_path: Path, docs: list[dict[str, Any]]) -> Path:
    f = tmp_path / "svc.yaml"
    f.write_text(yaml.safe_dump_all(docs))
    return f


def _chart_rule(for_: str = "5m", window: str = "5m") -> dict[str, Any]:
    return render_prometheus_rule(for_, window)


def test_check_passes_with_the_charts_rules_and_fails_without(tmp_path: Path) -> None:
    ready = manifest(**READY)
    rule = _chart_rule()
    passed = runner.invoke(app, ["check", str(_write(tmp_path, [ready, rule])), "-o", "json"])
    assert passed.exit_code == 0, passed.output
    data = json.loads(passed.output)
    assert data["ready"] is True
    assert {"item", "ok", "why"} == set(data["items"][0])
    failed = runner.invoke(app, ["check", str(_write(tmp_path, [ready])), "-o", "json"])
    assert failed.exit_code == 1
    bad = [i for i in json.loads(failed.output)["items"] if not i["ok"]]
    assert [i["item"] for i in bad] == ["alerts"]
    table = runner.invoke(app, ["check", str(_write(tmp_path, [ready]))])
    assert table.exit_code == 1
    assert "prometheusRules.enabled=true" in table.output


def test_check_invalid_input_exits_2(tmp_path: Path) -> None:
    broken = manifest(workload={"rps": {"mean": -1}})
    result = runner.invoke(app, ["check", str(_write(tmp_path, [broken]))])
    assert result.exit_code == 2
    assert "spec.workload.rps.mean" in result.output
    empty = runner.invoke(app, ["check", str(_write(tmp_path, [{"kind": "ConfigMap"}]))])
    assert empty.exit_code == 2


def test_the_charts_rules_are_the_python_rules() -> None:
    rule = _chart_rule(for_="1m", window="2m")
    chart_rules = rule["spec"]["groups"][0]["rules"]
    assert chart_rules == alert_rules(QueryConfig(), rate_window="2m", for_duration="1m")
    assert {r["alert"] for r in chart_rules} == ALL_ALERTS


def test_promtool_accepts_the_rendered_rules(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if not promtool:
        pytest.skip("promtool is not installed")
    f = tmp_path / "rules.yaml"
    f.write_text(rule_file_text(_chart_rule()))
    done = subprocess.run(
        [promtool, "check", "rules", str(f)], check=False, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_operator_reports_production_ready_with_the_failed_items() -> None:
    kube = FakeKube(_body(**READY))
    kube.run(None)  # plan-only: judged from the rendered objects
    ready = _condition(kube.body, "ProductionReady")
    assert ready["status"] == "True", ready["message"]
    assert ready["reason"] == "ChecklistPassed"
    kube.run(_metrics(SNAP))  # live: this snapshot has no TPOT/queue P99 and no preemptions
    ready = _condition(kube.body, "ProductionReady")
    assert ready["status"] == "False"
    assert ready["reason"] == "ChecklistFailed"
    assert "latency-observable: Prometheus has no TPOT P99, queue P99" in ready["message"]
    assert "kv-observable" in ready["message"]
    assert "alerts" not in ready["message"]
