"""Fixed mixed fleets in the simulator (a pinned policy through the one loop): each replica its
variant's engine; round-robin and least-loaded routing; replicas taken away and replaced by
hand; ``tokenscale simulate`` on a mixed spec."""

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tests.helpers import BASE, ROOT
from tokenscale.api import InferenceService
from tokenscale.api.manifest import parse_manifests
from tokenscale.cli.app import app
from tokenscale.planning import Plan, plan_service
from tokenscale.simulation.fleet import PoolEngine, SimRouting
from tokenscale.simulation.mix import MixScaleOptions, StaticMix, mix_engines, replay_mix
from tokenscale.simulation.result import FleetRun
from tokenscale.simulation.run import SimulationError
from tokenscale.simulation.trace import Trace, TraceRequest, synthetic_trace

MIXED = ROOT / "deploy" / "examples" / "variants" / "llama-3.1-8b-h100-l40s.yaml"


def _doc(rps: float, load_aware: bool = False) -> dict[str, Any]:
    doc = yaml.safe_load(MIXED.read_text())
    doc["spec"]["workload"]["rps"] = {"mean": rps / 2, "peak": rps}
    doc["spec"]["hardware"]["variants"][0]["maxReplicas"] = 1
    if load_aware:
        doc["spec"]["gateway"] = {"inferencePool": {}}
    return doc


@cache
def _setup(load_aware: bool) -> tuple[InferenceService, Plan, tuple[PoolEngine, ...]]:
    svc = parse_manifests(yaml.safe_dump(_doc(20.0, load_aware)))[0]
    plan = plan_service(svc.spec, "m")
    return svc, plan, tuple(mix_engines(svc.spec, plan, 512))


def _trace(rps: float, seconds: float = 60.0) -> Trace:
    return synthetic_trace(seconds, rps, lambda r: 800, lambda r: 150, seed=3)


def _fixed(
    svc: InferenceService,
    engines: tuple[PoolEngine, ...],
    counts: list[int],
    trace: Trace,
    routing: SimRouting,
    changes: tuple[tuple[float, dict[str, int]], ...] = (),
) -> FleetRun:
    """A fixed fleet: a pinned policy, its counts changed at ``changes``."""
    pinned = StaticMix({e.name: n for e, n in zip(engines, counts, strict=True)}, "fixed", changes)
    return replay_mix(engines, trace, svc.spec, pinned, routing, MixScaleOptions(cold_start_s=30.0))


def test_each_replica_runs_its_own_variants_engine() -> None:
    svc, _, engines = _setup(False)
    h100, l40s = engines
    assert h100.cfg.kv_blocks > l40s.cfg.kv_blocks  # 80 GB vs 48 GB of KV pool
    one = Trace((TraceRequest(0.0, 4000, 200),), "one")
    alone_h = _fixed(svc, engines, [1, 0], one, "round-robin")
    alone_l = _fixed(svc, engines, [0, 1], one, "round-robin")
    # the same request, alone: prefill and decode are faster on the H100
    assert alone_h.ttft_p99_s < alone_l.ttft_p99_s
    assert alone_h.tpot_p99_s < alone_l.tpot_p99_s


def test_round_robin_gives_every_replica_the_same_share() -> None:
    svc, _, engines = _setup(False)
    trace = _trace(10.0)
    r = _fixed(svc, engines, [1, 3], trace, "round-robin")
    got = {v.name: v.requests for v in r.pools}
    n = len(trace.requests)
    assert abs(got["h100-sxm-80gb"] - n / 4) <= 1
    assert abs(got["l40s-48gb"] - 3 * n / 4) <= 1
    assert r.gpu_hours == pytest.approx(4 * trace.duration_s / 3600.0)
    assert r.cost_per_hour == pytest.approx(3.0 + 3 * 1.1)


def test_least_loaded_sends_the_fast_replica_more_than_its_count_share() -> None:
    svc, _, engines = _setup(True)
    trace = _trace(25.0)
    rr = _fixed(svc, engines, [1, 3], trace, "round-robin")
    ll = _fixed(svc, engines, [1, 3], trace, "least-loaded")
    share = {v.name: v.requests for v in ll.pools}
    assert share["h100-sxm-80gb"] > {v.name: v.requests for v in rr.pools}["h100-sxm-80gb"]
    assert ll.slo_attainment >= rr.slo_attainment


def test_the_planners_round_robin_mix_meets_the_slo_and_its_load_aware_mix_too() -> None:
    for load_aware, routing in ((False, "round-robin"), (True, "least-loaded")):
        svc, plan, engines = _setup(load_aware)
        counts = [{v.name: v.replicas for v in plan.variants}[e.name] for e in engines]
        r = _fixed(svc, engines, counts, _trace(20.0, 120.0), routing)  # type: ignore[arg-type]
        assert r.slo_attainment >= 0.99, (routing, counts, r)


def test_replicas_taken_away_drain_and_replacements_serve_after_the_cold_start() -> None:
    svc, _, engines = _setup(True)
    trace = _trace(20.0, 120.0)
    lost = ((40.0, {"h100-sxm-80gb": 0}),)
    moved = ((40.0, {"h100-sxm-80gb": 0, "l40s-48gb": 5}),)
    none = _fixed(svc, engines, [1, 2], trace, "least-loaded", lost)
    back = _fixed(svc, engines, [1, 2], trace, "least-loaded", moved)
    assert none.counts == {"h100-sxm-80gb": 0, "l40s-48gb": 2}
    assert back.counts == {"h100-sxm-80gb": 0, "l40s-48gb": 5}
    assert back.slo_attainment > none.slo_attainment
    # the change falls on the first decision from 40 s (45 s): the H100 drains from then, the
    # three replacements hold their GPUs from then to the end (the cold start included)
    end = trace.duration_s
    h100, l40s = back.pools
    assert l40s.gpu_hours == pytest.approx((2 * end + 3 * (end - 45.0)) / 3600.0)
    assert 45.0 / 3600.0 <= h100.gpu_hours < 75.0 / 3600.0


def test_a_one_gpu_plan_has_no_mix_engines() -> None:
    svc = parse_manifests(yaml.safe_dump(BASE))[0]
    with pytest.raises(SimulationError, match="variants"):
        mix_engines(svc.spec, plan_service(svc.spec, "x"), 512)


def test_cli_simulate_on_a_mixed_spec(tmp_path: Path) -> None:
    trace = _trace(20.0, 60.0)
    csv_path = tmp_path / "t.csv"
    csv_path.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        + "".join(f"{r.arrival_s},{r.input_tokens},{r.output_tokens}\n" for r in trace.requests)
    )
    spec = tmp_path / "mixed.yaml"
    spec.write_text(yaml.safe_dump(_doc(20.0, load_aware=True)))
    args = ["simulate", str(spec), "--trace", str(csv_path)]
    result = CliRunner().invoke(app, [*args, "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data[0]["fleet"] == "planner's mix"
    assert data[0]["routing"] == "least-loaded"
    assert data[0]["requests"] == len(trace.requests)
    assert {"l40s-48gb alone"} <= {d["fleet"] for d in data}
    table = CliRunner().invoke(app, args)
    assert table.exit_code == 0, table.output
    assert "planner's mix" in table.output
