"""The simulated engine under vLLM's priority scheduling (simulation/replica.py): a waiting
request of a higher class priority goes first, a preemption takes the lowest; the gateway sheds
sheddable requests while every engine has a queue; per-class figures in the result."""

import dataclasses

import yaml

from tests.unit.test_classes import batch, chat, doc
from tokenscale.api.manifest import parse_manifests
from tokenscale.planning import plan_service
from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import Replica, ReplicaConfig, SimRequest, replica_config
from tokenscale.simulation.run import Setup, SimOptions, static_fleet
from tokenscale.simulation.trace import Trace, TraceRequest


def _config() -> tuple[ReplicaConfig, object]:
    (service,) = parse_manifests(yaml.safe_dump(doc([chat(), batch()])))
    plan = plan_service(service.spec, "t")
    return replica_config(service.spec, plan, 16), service.spec


def _ttfts(cfg: ReplicaConfig) -> tuple[float, float]:
    """Mean TTFT of 4 chat requests arriving just after 200 batch requests, (chat, batch)."""
    rec = Recorder()
    r = Replica(cfg, rec, 0.0)
    for i in range(200):
        r.add(SimRequest(0.0 + i * 1e-4, 1500, 200, priority=-10), 0.0)
    for i in range(4):
        r.add(SimRequest(0.05 + i * 1e-4, 500, 100, priority=10), 0.05)
    r.run_until(3600.0)
    chat_t = [o.ttft_s for o in rec.outcomes if o.priority == 10]
    batch_t = [o.ttft_s for o in rec.outcomes if o.priority == -10]
    assert len(chat_t) == 4
    assert len(batch_t) == 200
    return sum(chat_t) / 4, sum(batch_t) / 200


def test_priority_scheduling_serves_the_critical_class_first() -> None:
    cfg, _ = _config()
    assert cfg.priority_scheduling  # classes render --scheduling-policy priority
    chat_prio, batch_prio = _ttfts(cfg)
    chat_fcfs, _ = _ttfts(dataclasses.replace(cfg, priority_scheduling=False))
    assert chat_prio < batch_prio
    assert chat_prio < chat_fcfs / 3  # behind 200 prompts first come, first served


def test_a_preemption_takes_the_lowest_priority() -> None:
    cfg, _ = _config()
    tight = dataclasses.replace(cfg, kv_blocks=400)  # room for few long sequences
    rec = Recorder()
    r = Replica(tight, rec, 0.0)
    r.add(SimRequest(0.0, 2000, 2000, priority=10), 0.0)
    r.add(SimRequest(0.0001, 2000, 2000, priority=-10), 0.0)
    r.add(SimRequest(0.0002, 2000, 2000, priority=10), 0.0)
    r.run_until(3600.0)
    assert r.preemptions > 0
    done = sorted(rec.outcomes, key=lambda o: o.e2e_s)
    assert done[-1].priority == -10  # the sheddable one was put back and finished last


def test_a_saturated_fleet_sheds_the_sheddable_and_the_result_has_per_class_rows() -> None:
    _, spec = _config()
    reqs = [TraceRequest(i * 0.02, 800, 200, priority=10) for i in range(3000)]
    reqs += [TraceRequest(10 + i * 0.002, 1500, 300, priority=-10) for i in range(5000)]
    trace = Trace(tuple(sorted(reqs, key=lambda r: r.arrival_s)), "two classes")
    setup = Setup(spec, trace, SimOptions(capacity_requests=200, timeline=False), "t")  # type: ignore[arg-type]
    result = static_fleet(setup, 1)
    rows = {r.priority: r for r in result.classes}
    assert set(rows) == {10, -10}
    assert rows[-10].shed > 0
    assert result.shed == rows[-10].shed
    assert rows[-10].slo_attainment is None
    assert rows[10].slo_attainment is not None
    assert rows[10].shed == 0
    assert abs(sum(r.gpu_hours for r in rows.values()) - result.gpu_hours) < 1e-9


def test_a_csv_trace_carries_an_optional_priority_column() -> None:
    from tokenscale.simulation.errors import TraceError  # noqa: PLC0415
    from tokenscale.simulation.trace import parse_csv  # noqa: PLC0415

    t = parse_csv("t,in,out,priority\n1.0,10,5,10\n2.0,10,5,-10\n3.0,10,5,\n", "t", "in", "out")
    assert [r.priority for r in t.requests] == [10, -10, 0]
    assert [r.arrival_s for r in t.requests] == [0.0, 1.0, 2.0]  # rebased, priority kept
    import pytest  # noqa: PLC0415

    with pytest.raises(TraceError, match="priority"):
        parse_csv("t,in,out,priority\n1.0,10,5,high\n", "t", "in", "out")


def test_simulate_prints_a_row_per_class_priority(tmp_path: object) -> None:
    from pathlib import Path  # noqa: PLC0415

    from typer.testing import CliRunner  # noqa: PLC0415

    from tests.helpers import ROOT  # noqa: PLC0415
    from tokenscale.cli.app import app  # noqa: PLC0415

    rows = ["t,in,out,priority"]
    rows += [f"{i * 0.2:.2f},400,100,10" for i in range(150)]
    rows += [f"{5 + i * 0.05:.2f},800,150,-10" for i in range(150)]
    trace = Path(str(tmp_path)) / "t.csv"
    trace.write_text("\n".join(rows) + "\n")
    example = ROOT / "deploy" / "examples" / "tenants" / "llama-3.1-8b-h100-tenants.yaml"
    args = ["simulate", str(example), "--trace", str(trace), "--format", "csv"]
    args += ["--columns", "arrival=t,input=in,output=out", "--policy", "static"]
    out = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.stdout
    assert "static: chat (priority 10): 150 of 150 served" in out.stdout
    assert "static: agent (priority 0): no request of this priority" in out.stdout
    assert "static: batch (priority -10):" in out.stdout
    assert "no SLO (sheddable)" in out.stdout


def test_simulate_json_carries_the_per_class_rows(tmp_path: object) -> None:
    import json  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    from typer.testing import CliRunner  # noqa: PLC0415

    from tests.helpers import ROOT  # noqa: PLC0415
    from tokenscale.cli.app import app  # noqa: PLC0415

    rows = ["t,in,out,priority"]
    rows += [f"{i * 0.2:.2f},400,100,10" for i in range(150)]
    rows += [f"{5 + i * 0.05:.2f},800,150,-10" for i in range(150)]
    trace = Path(str(tmp_path)) / "t.csv"
    trace.write_text("\n".join(rows) + "\n")
    example = ROOT / "deploy" / "examples" / "tenants" / "llama-3.1-8b-h100-tenants.yaml"
    args = ["simulate", str(example), "--trace", str(trace), "--format", "csv", "-o", "json"]
    args += ["--columns", "arrival=t,input=in,output=out", "--policy", "static"]
    out = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.stdout
    doc_ = json.loads(out.stdout)
    by = {c["priority"]: c for c in doc_["classes"]}
    assert [c["priority"] for c in doc_["classes"]] == [10, 0, -10]
    assert by[10]["classes"] == "chat"
    assert by[10]["requests"] == 150
    assert by[10]["completed"] == 150
    assert 0.0 <= by[10]["slo_attainment"] <= 1.0
    assert by[0]["requests"] == 0
    assert by[0]["ttft_p99_s"] is None  # no request: no percentile (NaN written as null)
    assert by[-10]["requests"] == 150
    assert by[-10]["slo_attainment"] is None  # sheddable: no SLO promised
    assert by[-10]["completed"] + by[-10]["shed"] <= 150
    assert abs(sum(c["gpu_hours"] for c in doc_["classes"]) - doc_["gpu_hours"]) < 1e-9
