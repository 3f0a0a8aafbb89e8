"""A plan is a set of pools with one coordination rule, and every view shows the pools it
planned: one pool, a GPU mix and a prefill/decode pair.

The defects these reproduce (on the code before ``Plan.pools``): a mix's ``-o short`` named one
variant's fleet (``26×TP1 L40S-48GB (26 GPUs)`` for 24 L40S + 2 A100) at that variant's
latency alone (TPOT 51.7 ms over a 50 ms SLO) while ``feasible`` was true; a P/D plan's
headline read ``6 × 1 GPU = 4 GPUs`` and its latency lines were the aggregated plan's.
"""

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from typer.testing import CliRunner

from tests.helpers import ROOT
from tokenscale.api.crd import build_crd
from tokenscale.api.manifest import parse_manifests
from tokenscale.api.status import InferenceServiceStatus
from tokenscale.cli.app import app
from tokenscale.cli.plan_figures import duration_text
from tokenscale.controller.status import plan_summary, status_document
from tokenscale.planning import plan_service
from tokenscale.planning.advice import advise
from tokenscale.planning.pools import totals, with_pools
from tokenscale.planning.result import MixCoordination, Plan
from tokenscale.scaling.variant_order import mix_counts

runner = CliRunner()
ONE_POOL = ROOT / "deploy" / "examples" / "llama-3.1-8b-l4.yaml"
MIX = ROOT / "tests" / "fixtures" / "variants" / "llama-3.1-8b-three-gpus.yaml"
PD = ROOT / "tests" / "fixtures" / "disaggregated" / "llama-3.1-8b-h100-pd.yaml"
SPECS = {"one-pool": ONE_POOL, "mix": MIX, "pd": PD}
POOL_KEYS = {
    "name",
    "role",
    "variant",
    "replicas",
    "load_rps",
    "rps_per_replica",
    "capacity_rps_per_replica",
    "ttft_p99_s",
    "tpot_p99_s",
    "e2e_p99_s",
    "binding_constraint",
    "gpus",
    "cost_per_hour",
}


def _doc(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    assert isinstance(doc, dict)
    return doc


def _plan(doc: dict[str, Any]) -> Plan:
    s = parse_manifests(yaml.safe_dump(doc))[0]
    return plan_service(s.spec, s.metadata.name)


def _cli(*args: str, width: int = 100) -> str:
    result = runner.invoke(app, list(args), env={"COLUMNS": str(width)})
    assert result.exit_code in (0, 1), result.output
    return result.stdout


def _running(p: Plan) -> list[str]:
    return [f"{x.replicas}×TP{x.variant.tensor_parallel_size} {x.variant.gpu}" for x in p.pools]


def _assert_sums(p: Plan) -> None:
    assert p.pools, "every plan has its pools"
    if p.gpus_total is None:
        return
    assert sum(x.gpus for x in p.pools) == p.gpus_total
    for x in p.pools:
        assert x.gpus == x.replicas * x.variant.gpus_per_replica
    if p.cost_per_hour is None:
        return
    pool_costs = [x.cost_per_hour for x in p.pools if x.replicas > 0]
    assert all(c is not None for c in pool_costs)
    assert math.isclose(sum(c or 0.0 for c in pool_costs), p.cost_per_hour, rel_tol=1e-9)


def _assert_one_rule(p: Plan) -> None:
    """``feasible`` agrees with the SLO checks, and the checks are the pools' maxima."""
    if p.feasible:
        assert all(c.met for c in p.slo_checks), p.slo_checks
    t = totals(p.pools)
    checks = {c.name: c for c in p.slo_checks}
    if p.replicas is not None and t.ttft_p99_s is not None and "ttft_p99" in checks:
        assert checks["ttft_p99"].estimate_s == pytest.approx(t.ttft_p99_s)
        assert p.ttft_p99_estimate_s == pytest.approx(t.ttft_p99_s)
    if p.replicas is not None and t.tpot_p99_s is not None and "tpot_p99" in checks:
        assert checks["tpot_p99"].estimate_s == pytest.approx(t.tpot_p99_s)


@settings(max_examples=6, deadline=None)
@given(
    shape=st.sampled_from(sorted(SPECS)),
    rps=st.floats(min_value=2.0, max_value=200.0),
    price=st.floats(min_value=0.5, max_value=5.0),
)
def test_the_pools_gpus_and_cost_sum_to_the_plans(shape: str, rps: float, price: float) -> None:
    doc = _doc(SPECS[shape])
    doc["spec"]["workload"]["rps"] = {"mean": rps}
    if shape == "mix":
        doc["spec"]["hardware"]["variants"][1]["gpuHourPrice"] = price
    else:
        doc["spec"]["cost"] = {"gpuHourPrice": price}
    p = _plan(doc)
    _assert_sums(p)
    _assert_one_rule(p)
    expected = {"one-pool": "none", "mix": "mix", "pd": "disaggregated"}[shape]
    if shape != "pd" or (p.disaggregation is not None and p.disaggregation.enabled):
        assert p.coordination is not None
        assert p.coordination.rule == expected


def test_one_pool_is_the_degenerate_case() -> None:
    p = _plan(_doc(ONE_POOL))
    assert [(x.name, x.role) for x in p.pools] == [("serve", "serve")]
    (x,) = p.pools
    assert p.replicas is not None
    assert x.replicas == p.replicas.total
    assert x.load_rps == p.design_rps
    assert x.ttft_p99_s == p.ttft_p99_estimate_s
    assert x.tpot_p99_s == p.tpot_p99_estimate_s
    assert p.coordination is not None
    assert p.coordination.rule == "none"


def test_a_mix_plans_one_pool_per_variant_at_its_share() -> None:
    p = _plan(_doc(MIX))
    assert p.mix is not None
    assert p.coordination is not None
    assert p.coordination.rule == "mix"
    assert [x.name for x in p.pools] == [v.name for v in p.variants]
    used = [x for x in p.pools if x.replicas > 0]
    assert len(used) >= 2, "the fixture's load needs two GPU types"
    assert sum(x.load_rps for x in p.pools) == pytest.approx(p.design_rps)
    for x, v in zip(p.pools, p.variants, strict=True):
        assert x.replicas == v.replicas
        assert x.ttft_p99_s == v.ttft_p99_at_share_s
    assert p.coordination.scale_order[0] in {x.name for x in used}
    # the top-level TPOT is the slowest pool's at its share, not one variant alone
    assert p.tpot_p99_estimate_s == max(x.tpot_p99_s or 0.0 for x in used)


def test_a_pd_plan_plans_a_prefill_and_a_decode_pool() -> None:
    p = _plan(_doc(PD))
    d = p.disaggregation
    assert d is not None
    assert d.enabled
    assert d.prefill is not None
    assert d.decode is not None
    assert [x.role for x in p.pools] == ["prefill", "decode"]
    prefill, decode = p.pools
    assert (prefill.replicas, decode.replicas) == (d.prefill.replicas, d.decode.replicas)
    assert prefill.tpot_p99_s is None
    assert decode.ttft_p99_s is None
    assert p.coordination is not None
    assert p.coordination.rule == "disaggregated"
    assert p.coordination.ratio == pytest.approx(d.ratio)
    lo, hi = p.coordination.ratio_low, p.coordination.ratio_high
    assert lo is not None
    assert hi is not None
    assert lo < (d.ratio or 0) < hi
    # latencies at the load each pool carries, never above the operating point's
    assert prefill.ttft_p99_s is not None
    assert d.ttft_p99_estimate_s is not None
    assert prefill.ttft_p99_s <= d.ttft_p99_estimate_s + 1e-9
    assert decode.tpot_p99_s is not None
    assert d.tpot_p99_estimate_s is not None
    assert decode.tpot_p99_s <= d.tpot_p99_estimate_s + 1e-9


@pytest.mark.parametrize("shape", sorted(SPECS))
def test_json_has_pools_with_every_field(shape: str) -> None:
    data = json.loads(_cli("plan", str(SPECS[shape]), "-o", "json"))
    assert data["pools"]
    assert all(set(x) == POOL_KEYS for x in data["pools"])
    assert sum(x["gpus"] for x in data["pools"]) == data["gpus_total"]
    assert data["coordination"]["rule"] in ("none", "mix", "disaggregated")
    if data["feasible"]:
        assert all(c["met"] for c in data["slo_checks"])


def test_a_mix_short_line_names_the_fleet_that_runs() -> None:
    p = _plan(_doc(MIX))
    line = _cli("plan", str(MIX), "-o", "short").strip()
    used = [x for x in p.pools if x.replicas > 0]
    fleet = " + ".join(f"{x.replicas}×TP1 {x.variant.gpu}" for x in used)
    assert f"{fleet} ({p.gpus_total} GPUs)" in line
    assert f"TPOT {p.tpot_p99_estimate_s * 1e3:.1f}ms/50.0ms" in line
    assert " ok " in line
    assert all(c.met for c in p.slo_checks)


def test_a_mix_csv_and_markdown_describe_the_mix() -> None:
    p = _plan(_doc(MIX))
    used = [x for x in p.pools if x.replicas > 0]
    (row,) = list(csv.DictReader(io.StringIO(_cli("plan", str(MIX), "-o", "csv"))))
    assert row["gpu"] == "+".join(x.variant.gpu for x in used)
    assert row["replicas"] == str(sum(x.replicas for x in used))
    assert row["gpus"] == str(p.gpus_total)
    assert all(x.name in row["pools"] for x in p.pools)
    assert row["requests_s_per_replica"] == ""  # no one replica's figure for two GPU types
    md = _cli("plan", str(MIX), "-o", "markdown")
    assert "+".join(x.variant.gpu for x in used) in md
    assert all(f"- {x.name}: " in md for x in p.pools)


def test_a_pd_headline_counts_the_pools() -> None:
    p = _plan(_doc(PD))
    prefill, decode = p.pools
    out = _cli("plan", str(PD))
    head = (
        f"{prefill.replicas}×TP1 H100-SXM-80GB prefill + {decode.replicas}×TP1 H100-SXM-80GB "
        f"decode ({p.gpus_total} GPUs)"
    )
    assert head in " ".join(out.split())
    assert p.replicas is not None
    assert f"{p.replicas.total} × 1 GPU" not in out  # the aggregated count is not the fleet


def test_a_pd_plan_latency_lines_are_the_pools() -> None:
    p = _plan(_doc(PD))
    prefill, decode = p.pools
    assert prefill.ttft_p99_s is not None
    assert decode.tpot_p99_s is not None
    checks = {c.name: c for c in p.slo_checks}
    assert checks["ttft_p99"].estimate_s == prefill.ttft_p99_s
    assert checks["tpot_p99"].estimate_s == decode.tpot_p99_s
    out = " ".join(_cli("plan", str(PD)).split())
    assert f"TTFT P99 {duration_text(prefill.ttft_p99_s)}" in out
    assert f"TPOT P99 {duration_text(decode.tpot_p99_s)}" in out


def test_a_pd_short_line_names_the_pools() -> None:
    line = _cli("plan", str(PD), "-o", "short")
    assert " prefill + " in line
    assert " decode (" in line


def test_an_slo_a_pool_misses_makes_the_plan_infeasible() -> None:
    """One rule: a plan whose pools miss an SLO at their loads is not feasible, and says which
    (the mix's top level used to say feasible beside a TPOT check it missed)."""
    p = _plan(_doc(MIX))
    assert p.feasible
    target = next(c.target_s for c in p.slo_checks if c.name == "tpot_p99")
    slow = [
        x.model_copy(update={"tpot_p99_s": target * 1.2}) if x.replicas > 0 else x for x in p.pools
    ]
    assert p.coordination is not None
    q = with_pools(p, slow, p.coordination)
    assert not q.feasible
    assert [c.met for c in q.slo_checks if c.name == "tpot_p99"] == [False]
    assert any(r.startswith("TPOT P99") for r in q.infeasible_reasons)
    assert with_pools(p, p.pools, p.coordination).feasible  # the same pools: unchanged


@pytest.mark.parametrize("width", [80, 100, 120])
@pytest.mark.parametrize("fmt", ["table", "wide"])
@pytest.mark.parametrize("shape", sorted(SPECS))
def test_the_pool_views_fit_the_terminal(shape: str, fmt: str, width: int) -> None:
    out = _cli("plan", str(SPECS[shape]), "-o", fmt, width=width)
    for line in out.splitlines():
        assert cell_len(line) <= width, f"{cell_len(line)} > {width}: {line!r}"
    assert "…" not in out


@pytest.mark.parametrize("shape", sorted(SPECS))
def test_status_plan_names_the_pools_and_fits_the_crd(shape: str) -> None:
    p = _plan(_doc(SPECS[shape]))
    summary = plan_summary(p, 2.0, 0.05)
    assert [(x.name, x.role, x.replicas, x.gpus) for x in summary.pools] == [
        (x.name, x.role, x.replicas, x.gpus) for x in p.pools
    ]
    assert p.coordination is not None
    assert summary.coordination == p.coordination.rule
    doc = status_document(InferenceServiceStatus(plan=summary))
    assert doc["plan"]["pools"][0]["gpusPerReplica"] >= 1
    version = build_crd()["spec"]["versions"][0]
    schema = version["schema"]["openAPIV3Schema"]["properties"]["status"]
    jsonschema.Draft4Validator(schema).validate(doc)


def test_check_judges_a_pd_pairs_rollout_capacity_per_pool() -> None:
    """``check`` counted a P/D service's replicas as the aggregated plan's (6 for a need of
    5.57): each pool has its own count and need."""
    p = _plan(_doc(PD))
    d = p.disaggregation
    assert d is not None
    assert d.prefill is not None
    assert d.decode is not None
    out = json.loads(_cli("check", str(PD), "-o", "json"))
    (item,) = [i for i in out["items"] if i["item"] == "rollout-capacity"]
    assert f"prefill: {d.prefill.replicas} replica(s) for a need of " in item["why"]
    assert f"{d.prefill.replicas_needed:.2f}" in item["why"]
    assert f"decode: {d.decode.replicas} replica(s) for a need of " in item["why"]
    assert p.replicas is not None  # the aggregated alternative's count and need, not named
    assert f"{p.replicas.total} replica(s) for a need of {p.replicas.needed:.2f}" not in item["why"]


def test_check_names_a_mix_pools() -> None:
    p = _plan(_doc(MIX))
    out = json.loads(_cli("check", str(MIX), "-o", "json"))
    (item,) = [i for i in out["items"] if i["item"] == "rollout-capacity"]
    for x in p.pools:
        assert f"{x.name} {x.replicas} × {x.variant.gpu}" in item["why"]


def test_advice_on_a_pd_plan_compares_the_pools_gpus() -> None:
    """The FP8 advice on a P/D plan said '4 GPUs (4 × TP 1) instead of 6': 6 was the
    aggregated alternative's count, the plan runs its GPUs in two pools. The advice names the
    alternative's own shape: two pools when FP8 runs them too, one when it does not."""
    doc = _doc(PD)
    p = _plan(doc)
    assert p.role_pools is not None
    s = parse_manifests(yaml.safe_dump(doc))[0]
    lines = [a for a in advise(s.spec, p, s.metadata.name) if a.startswith("FP8 weights")]
    assert lines, "an H100 has FP8 cores and FP8 weights need fewer GPUs here"
    doc["spec"]["model"]["weightDtype"] = "fp8"
    fp8 = _plan(doc)
    for line in lines:
        assert f"instead of {p.gpus_total}" in line
        assert f"{fp8.gpus_total} GPUs" in line
        assert (" prefill × TP " in line) == (fp8.role_pools is not None)


def test_a_pd_markdown_and_wide_view_show_the_pools() -> None:
    p = _plan(_doc(PD))
    md = _cli("plan", str(PD), "-o", "markdown")
    summary = next(line for line in md.splitlines() if line.startswith("| llama-8b-pd |"))
    assert f"| {sum(x.replicas for x in p.pools)} | {p.gpus_total} |" in summary
    assert "- prefill: " in md
    assert "- decode: " in md
    assert "aggregated alternative" in md
    wide = " ".join(_cli("plan", str(PD), "-o", "wide", width=120).split())
    assert "Pools (disaggregated):" in wide
    assert "One shared pool instead (the alternative)" in wide


@pytest.mark.parametrize("gateway", [False, True], ids=["round-robin", "load-aware"])
def test_a_mix_scale_order_is_the_order_the_operator_scales_in(gateway: bool) -> None:
    """One more replica than planned lands on the first pool of ``scale_order`` with room;
    one fewer comes off the last that runs (``scaling/variant_order.mix_counts``)."""
    doc = _doc(MIX)
    if gateway:
        doc["spec"]["gateway"] = {"inferencePool": {}}
    p = _plan(doc)
    assert isinstance(p.coordination, MixCoordination)
    assert p.coordination.routing == ("load-aware" if gateway else "round-robin")
    order = p.coordination.scale_order
    assert sorted(order) == sorted(x.name for x in p.pools)
    rows = {v.name: v for v in p.variants}
    planned = {v.name: v.replicas for v in p.variants}
    total = sum(planned.values())
    room = [n for n in order if planned[n] < rows[n].max_replicas]
    up = mix_counts(p, total + 1).counts
    assert {n: up[n] - planned[n] for n in planned if up[n] != planned[n]} == {room[0]: 1}
    down = mix_counts(p, total - 1).counts
    last = [n for n in order if planned[n] > 0][-1]
    assert {n: down[n] - planned[n] for n in planned if down[n] != planned[n]} == {last: -1}
