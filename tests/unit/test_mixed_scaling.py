"""A GPU mix autoscaled in the simulator (the one fleet, ``simulation/fleet.py``, one pool per
variant; ``simulation/mix.py``): pods pending in a stockout, the ReplicaSet's removal order,
the operator's mix policy within every variant's room, a stockout moving the need, the best
static mix, and ``tokenscale simulate --stockout``."""

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tests.helpers import BASE, ROOT
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.manifest import parse_manifests
from tokenscale.cli.app import app
from tokenscale.planning import Plan, plan_service
from tokenscale.simulation.fleet import Fleet, GpuStockout, PoolEngine
from tokenscale.simulation.mix import (
    MixScaleOptions,
    MixTokenscale,
    StaticMix,
    VariantTokenscale,
    best_static_mix,
    mix_engines,
    replay_mix,
)
from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import SimRequest
from tokenscale.simulation.trace import Trace, synthetic_trace
from tokenscale.simulation.workloads import CONVERSATION, diurnal

MIXED = ROOT / "deploy" / "examples" / "variants" / "llama-3.1-8b-h100-l40s.yaml"
H100, L40S = "h100-sxm-80gb", "l40s-48gb"


def _doc(quiet_rps: float) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(MIXED.read_text())
    doc["spec"]["hardware"]["variants"][0]["maxReplicas"] = 2
    doc["spec"]["gateway"] = {"inferencePool": {"name": "pool"}}
    doc["spec"]["workload"]["rps"] = {"mean": quiet_rps, "burstFactor": 1.5}
    doc["spec"]["scaling"]["minReplicas"] = 1
    return doc


@cache
def _setup() -> tuple[InferenceServiceSpec, Plan, tuple[PoolEngine, ...]]:
    spec = parse_manifests(yaml.safe_dump(_doc(6.5)))[0].spec
    plan = plan_service(spec, "mixed")
    return spec, plan, tuple(mix_engines(spec, plan, 16))


@cache
def _ramp() -> Trace:
    """6 RPS, a ramp to 36 RPS over 5 minutes and back, 14 minutes in all."""
    return diurnal(6.0, CONVERSATION, factor=6.0, flat_s=120.0, ramp_s=300.0, seed=5)


def _fleet(stockouts: tuple[GpuStockout, ...] = ()) -> Fleet:
    _, _, engines = _setup()
    rec = Recorder()
    initial = [1 if e.name == L40S else 0 for e in engines]
    return Fleet(engines, [rec for _ in engines], 30.0, initial, "least-loaded", stockouts)


def test_a_stocked_out_variants_new_pods_pend_without_gpus_and_start_when_it_ends() -> None:
    fleet = _fleet((GpuStockout(H100, 10.0, 100.0),))
    fleet.advance(20.0)
    fleet.set_counts({H100: 1, L40S: 1}, 20.0)
    assert fleet.in_phase("pending") == {H100: 1, L40S: 0}
    pods = fleet.variant_pods()
    assert [p.unschedulable_since_s for p in pods if p.variant == H100] == [20.0]
    assert fleet.next_event_s() == 100.0
    fleet.advance(100.0)
    assert fleet.gpu_seconds_by_pool[0] == 0.0  # pending: no GPU held
    assert fleet.in_phase("starting")[H100] == 1
    fleet.advance(fleet.next_event_s())
    assert fleet.in_phase("ready")[H100] == 1
    assert fleet.gpu_seconds_by_pool[0] == pytest.approx(30.0)  # from its placement, one cold start
    assert fleet.lead_times_s[-1] == pytest.approx(110.0)  # creation → Ready, pending included
    # the median with the launch L40S's cold start (30 s), which it showed from the start
    assert fleet.lead_time_s() == pytest.approx(70.0)


def test_a_lower_count_removes_pending_then_starting_then_drains_the_least_loaded() -> None:
    fleet = _fleet((GpuStockout(H100, 50.0),))
    fleet.set_counts({H100: 2, L40S: 2}, 0.0)  # 2 H100 and 1 L40S starting
    fleet.advance(40.0)
    fleet.set_counts({H100: 3, L40S: 2}, 60.0)  # the third H100 pends
    assert fleet.in_phase("pending")[H100] == 1
    fleet.set_counts({H100: 2, L40S: 2}, 61.0)
    assert fleet.in_phase("pending")[H100] == 0  # the pending pod went first
    assert fleet.in_phase("ready")[H100] == 2
    busy = next(p for p in fleet.members if p.phase == "ready" and p.pool == 1)
    busy.replica.add(SimRequest(61.0, 500, 400), 61.0)
    fleet.set_counts({H100: 2, L40S: 1}, 62.0)  # of two ready L40S the idle one drains
    assert busy.phase == "ready"
    assert fleet.in_phase("draining")[L40S] == 1
    fleet.set_counts({H100: 2, L40S: 0}, 63.0)
    fleet.advance(64.0)
    assert busy.phase == "draining"  # still serving its request; the idle one is released
    assert fleet.in_phase("draining")[L40S] == 1
    fleet.advance(400.0)
    assert fleet.in_phase("draining")[L40S] == 0  # released once idle


def test_the_mix_policy_scales_within_each_variants_bound_and_meets_the_slo() -> None:
    spec, plan, engines = _setup()
    trace = _ramp()
    sizer = MixTokenscale(spec, plan, 15.0)
    opts = MixScaleOptions(cold_start_s=60.0)
    run = replay_mix(engines, trace, spec, sizer, "least-loaded", opts, timeline=True)
    bound = {v.name: v.max_replicas for v in plan.variants}
    assert run.timeline
    for point in run.timeline:
        assert all(point.asked[v] <= bound[v] for v in bound)
    assert run.replicas_max[H100] == 2  # the cheapest capacity is used to its bound
    assert run.replicas_max[L40S] >= 2
    assert run.slo_attainment >= 0.99
    prices = {e.name: e.gpu_hour_price or 0.0 for e in engines}
    assert run.cost == pytest.approx(sum(prices[v] * h for v, h in run.gpu_hours_by_pool.items()))
    assert run.marked == []


def test_a_stockout_marks_the_variant_moves_the_need_and_retries_it() -> None:
    spec, plan, engines = _setup()
    trace = _ramp()
    grace, retry = 60.0, 240.0
    sizer = MixTokenscale(spec, plan, 15.0, grace_s=grace, retry_s=retry)
    opts = MixScaleOptions(cold_start_s=60.0)
    out = (GpuStockout(H100, 60.0),)
    run = replay_mix(engines, trace, spec, sizer, "least-loaded", opts, out, timeline=True)
    assert run.marked, "the pending H100 pods should have marked the H100 exhausted"
    first = run.marked[0][0]
    assert run.marked[0][1] == H100
    placed_then = None
    for point in run.timeline:
        placed = point.asked[H100] - point.pending[H100]
        if first <= point.t_s < first + retry:  # exhausted: nothing new until the retry
            placed_then = placed if placed_then is None else placed_then
            assert point.pending[H100] == 0
            assert point.asked[H100] == placed <= placed_then
    # no H100 placed after 60 s: the L40S carried the ramp
    assert run.replicas_max[L40S] > MixTokenscale(spec, plan, 15.0).initial()[L40S]
    # retried: an H100 asked again after the retry period, pending, and marked again
    again = [p for p in run.timeline if p.t_s >= first + retry and p.pending[H100] > 0]
    assert again
    assert any(t >= again[0].t_s + grace for t, v, _ in run.marked[1:] if v == H100)


def test_one_variant_alone_runs_only_that_variant() -> None:
    spec, plan, engines = _setup()
    run = replay_mix(
        engines, _ramp(), spec, VariantTokenscale(spec, plan, L40S, 15.0), "least-loaded"
    )
    assert run.gpu_hours_by_pool[H100] == 0.0
    assert run.replicas_max[H100] == 0
    assert run.replicas_max[L40S] > 1


def test_the_best_static_mix_meets_the_target_and_one_fewer_does_not() -> None:
    spec, _, engines = _setup()
    trace = synthetic_trace(120.0, 25.0, lambda r: 800, lambda r: 150, seed=7)
    best = best_static_mix(engines, trace, spec, "least-loaded", {H100: 1, L40S: 6})
    assert best is not None
    assert best.slo_attainment >= 0.99
    counts = best.replicas_max
    if counts[L40S] > (0 if counts[H100] else 1):
        fewer = {**counts, L40S: counts[L40S] - 1}
        r = replay_mix(engines, trace, spec, StaticMix(fewer), "least-loaded")
        assert r.slo_attainment < 0.99
    alone = replay_mix(engines, trace, spec, StaticMix({L40S: 6}), "least-loaded")
    assert best.cost is not None
    assert alone.cost is not None
    assert best.cost <= alone.cost + 1e-9 or alone.slo_attainment < 0.99


def _csv(tmp_path: Path, trace: Trace) -> Path:
    path = tmp_path / "t.csv"
    path.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        + "".join(f"{r.arrival_s},{r.input_tokens},{r.output_tokens}\n" for r in trace.requests)
    )
    return path


def test_cli_simulate_autoscales_a_mix_under_a_stockout(tmp_path: Path) -> None:
    trace = synthetic_trace(240.0, 20.0, lambda r: 800, lambda r: 150, seed=3)
    spec = tmp_path / "mixed.yaml"
    spec.write_text(yaml.safe_dump(_doc(3.0)))
    args = ["simulate", str(spec), "--trace", str(_csv(tmp_path, trace)), "--cold-start", "30"]
    result = CliRunner().invoke(app, [*args, "--stockout", f"{H100}@0:10", "-o", "json"])
    assert result.exit_code == 0, result.output
    rows = {d["fleet"]: d for d in json.loads(result.stdout)}
    assert {"planner's mix", "tokenscale (mix)", f"tokenscale, {L40S} alone"} <= set(rows)
    ours = rows["tokenscale (mix)"]
    assert ours["requests"] == len(trace.requests)
    assert {p["name"]: p["gpu_hours"] for p in ours["pools"]}[L40S] > 0
    table = CliRunner().invoke(app, [*args, "--stockout", f"{H100}@0:10-2:00"])
    assert table.exit_code == 0, table.output
    assert "autoscaled" in table.output
    assert "tokenscale (mix)" in table.output


@pytest.mark.parametrize(
    ("flag", "words"),
    [
        ("nope@0:10", ["no variant", H100, L40S]),
        (f"{H100}", ["VARIANT@MM:SS"]),
        (f"{H100}@2:00-1:00", ["end must come after"]),
        (f"{H100}@99:00:00", ["last request arrives at", "a stockout after it changes nothing"]),
    ],
)
def test_cli_a_bad_stockout_exits_2_naming_the_flag(
    tmp_path: Path, flag: str, words: list[str]
) -> None:
    trace = synthetic_trace(30.0, 5.0, lambda r: 800, lambda r: 150, seed=3)
    spec = tmp_path / "mixed.yaml"
    spec.write_text(yaml.safe_dump(_doc(3.0)))
    args = ["simulate", str(spec), "--trace", str(_csv(tmp_path, trace)), "--stockout", flag]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "--stockout" in result.output
    assert "Traceback" not in result.output
    for w in words:
        assert w in result.output


def test_cli_a_stockout_on_one_gpu_type_exits_2(tmp_path: Path) -> None:
    trace = synthetic_trace(30.0, 5.0, lambda r: 800, lambda r: 150, seed=3)
    spec = tmp_path / "one.yaml"
    spec.write_text(yaml.safe_dump(BASE))
    args = ["simulate", str(spec), "--trace", str(_csv(tmp_path, trace))]
    result = CliRunner().invoke(app, [*args, "--stockout", "h100@0:10"])
    assert result.exit_code == 2, result.output
    assert "spec.hardware.variants" in result.output
