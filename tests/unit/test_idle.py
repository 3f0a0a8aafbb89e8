"""Idle is a fact, not blindness: zero traffic with engines reporting scales to the floor."""

import itertools
import random
from typing import Any

import pytest

from tests.helpers import spec as make_spec
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning import plan_service
from tokenscale.scaling import Decision, EngineInput, ScalingState, Snapshot, decide
from tokenscale.scaling.traffic import is_idle
from tokenscale.simulation import Setup, SimOptions, simulate
from tokenscale.simulation.trace import Trace, TraceRequest

NOW = 1_000_000.0


def _spec(**scaling: Any) -> InferenceServiceSpec:
    return make_spec(
        workload={"rps": {"mean": 60}},
        scaling={"minReplicas": 1, "maxReplicas": 20, **scaling},
    )


def _idle(n: int, at: float, **extra: Any) -> Snapshot:
    """What an idle vLLM fleet exports: gauges at zero, counters flat, histograms empty."""
    values: dict[str, Any] = {
        "at": at,
        "replicas_reporting": n,
        "waiting": 0.0,
        "running": 0.0,
        "kv_usage_max": 0.0,
        "kv_usage_mean": 0.0,
        "request_rate_rps": 0.0,
        "prompt_tps": 0.0,
        "generation_tps": 0.0,
        "newest_sample_age_s": 1.0,
        "problems": ["ttft_p99_s: NaN (no data in the window)"],
    }
    values.update(extra)
    return Snapshot(**values)


def _run(spec: InferenceServiceSpec, snaps: list[Snapshot], start: int) -> list[Decision]:
    state = ScalingState(decided_replicas=start)
    out: list[Decision] = []
    for s in snaps:
        d = decide(
            EngineInput(
                spec=spec,
                forecast=plan_service(spec),
                snapshot=s,
                state=state,
                now_s=s.at,
                interval_s=15.0,
            )
        )
        out.append(d)
        state = d.state
    return out


def test_idle_is_zero_traffic_with_engines_reporting() -> None:
    assert is_idle(_idle(3, NOW))
    assert not is_idle(_idle(0, NOW))  # nobody reports: blind
    assert not is_idle(_idle(3, NOW, request_rate_rps=None))  # no counter series: blind
    assert not is_idle(_idle(3, NOW, running=2.0))  # one long request in flight
    assert not is_idle(_idle(3, NOW, waiting=1.0))
    assert not is_idle(_idle(3, NOW, request_rate_rps=0.01))


def test_an_idle_fleet_falls_to_min_replicas_one_step_at_a_time() -> None:
    spec = _spec(policy={"scaleDownStabilizationSeconds": 300})
    start = plan_service(spec).sized.total
    assert start >= 3
    decisions = _run(spec, [_idle(start, NOW + 15 * k) for k in range(240)], start)
    replicas = [d.replicas for d in decisions]
    assert replicas[0] == start  # not before the stabilisation window
    assert replicas[-1] == 1
    assert all(a >= b for a, b in itertools.pairwise(replicas))  # never back up
    assert all(d.metrics_available for d in decisions)
    latency = [s for s in decisions[-1].signals if s.name.endswith("_p99_s")]
    assert latency
    assert all(s.level == "low" and "idle" in s.reason for s in latency)


def test_min_replicas_zero_keeps_one_engine_to_report_by_the_ordinary_policy() -> None:
    """The engine's own idle floor is one replica; zero comes only from the idle window of
    the stepper (tests/unit/test_scale_to_zero.py)."""
    spec = _spec(
        minReplicas=0,
        activation={"query": "vector(0)"},
        policy={"scaleDownStabilizationSeconds": 60},
    )
    start = plan_service(spec).sized.total
    decisions = _run(spec, [_idle(start, NOW + 15 * k) for k in range(200)], start)
    assert decisions[-1].replicas == 1


def test_no_series_is_blindness_not_idleness() -> None:
    spec = _spec(policy={"scaleDownStabilizationSeconds": 60})
    start = plan_service(spec).sized.total
    blind = [
        Snapshot(at=NOW + 15 * k, replicas_reporting=0, problems=["no series"]) for k in range(100)
    ]
    decisions = _run(spec, blind, start)
    assert {d.replicas for d in decisions} == {start}
    assert all(d.source == "hold" and not d.metrics_available for d in decisions)


def test_forecast_workload_source_keeps_the_forecast_at_idle() -> None:
    spec = _spec(policy={"scaleDownStabilizationSeconds": 60, "workloadSource": "forecast"})
    start = plan_service(spec).sized.total
    decisions = _run(spec, [_idle(start, NOW + 15 * k) for k in range(100)], start)
    last = decisions[-1]
    assert last.model_replicas is not None
    assert last.replicas == last.model_replicas > 1  # the model at the forecast, not the floor


@pytest.mark.parametrize("gap_h", [4.0])
def test_the_simulated_idle_service_falls_to_min_replicas(gap_h: float) -> None:
    """200 requests, then nothing for hours, then one: the fleet falls to minReplicas."""
    rng = random.Random(0)
    rows, t = [], 0.0
    for _ in range(200):
        t += rng.expovariate(20.0)
        rows.append(TraceRequest(t, 1000, 200))
    rows.append(TraceRequest(t + gap_h * 3600, 1000, 200))
    setup = Setup(_spec(), Trace(tuple(rows), "idle"), SimOptions(), "idle")
    start = setup.forecast.sized.total
    assert start >= 3
    r = simulate(setup, "tokenscale")
    assert r.slo_attainment == 1.0
    assert r.timeline[-1].replicas_target == 1
    assert r.gpu_hours <= 1.25 * r.oracle_gpu_hours
