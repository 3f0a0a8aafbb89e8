"""The live need's per-replica capacity: the planner's rate at the batch the SLOs allow (the
knee lifted live), not the launch plan's knee; the reason says which."""

from typing import Any

from tests.unit.test_engine import _spec, run, snap
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning import Conditions, layout_of, plan_at, plan_service, resolve
from tokenscale.planning.planner import as_planned
from tokenscale.scaling import ScalingState, Snapshot
from tokenscale.scaling.carried import planner_basis
from tokenscale.scaling.engine import live_conditions


def reasoning(**patch: Any) -> InferenceServiceSpec:
    """Long answers at a gentle rate (the autoscaling suite's ``reasoning`` shape's spec): the
    knee (batch ~53) binds the launch plan long before the SLOs or the KV pool do."""
    base: dict[str, Any] = {
        "workload": {
            "rps": {"mean": 1.5, "burstFactor": 1.5},
            "inputTokens": {"mean": 500, "p99": 1500},
            "outputTokens": {"mean": 4000, "p99": 8000},
        },
        "slo": {"ttftP99Seconds": 3.0, "tpotP99Seconds": 0.08},
    }
    return _spec(**{**base, **patch})


def steady(rps: float, n: int = 2) -> Snapshot:
    """``n`` replicas serving ``rps`` in all with the spec's token means, well inside the SLOs."""
    return snap(n=n, kv=0.15, ttft=0.05, tpot=0.025, started_rps=rps).model_copy(
        update={
            "request_rate_rps": rps,
            "prompt_tps": rps * 500.0,
            "generation_tps": rps * 4000.0,
            "tpot_mean_s": 0.012,
            "output_tokens_mean": 4000.0,
        }
    )


def test_the_live_rate_is_the_slo_batchs_not_the_knees() -> None:
    spec = reasoning()
    forecast = plan_service(spec)
    d = run(spec, steady(1.5), ScalingState(decided_replicas=3), forecast=forecast)
    assert d.capacity is not None
    assert d.capacity.source == "planner"
    # the same question (the observed workload, the same calibration) at the knee rates less
    r = as_planned(resolve(spec, forecast.name), forecast)
    at = live_conditions(spec, steady(1.5), d.calibration, d.prefill_calibration)
    at_knee = plan_at(
        r, Conditions(workload=at.workload, calibration=at.calibration), layout_of(forecast)
    )
    assert at_knee.operating_batch < forecast.concurrency_limits.slo  # type: ignore[operator]
    assert d.capacity.rps_per_replica > 1.2 * at_knee.rps_per_replica
    assert d.capacity.rps_per_replica > 1.2 * forecast.rps_per_replica
    # and the reason names the batch, that it lies within the SLO batch, and the launch rate
    assert "within the SLO batch" in d.capacity.reason
    assert "the knee lifted live" in d.capacity.reason
    assert f"the launch plan rates {forecast.rps_per_replica:.3g}" in d.capacity.reason


def test_without_an_slo_the_knee_stays_and_the_reason_says_so() -> None:
    spec = reasoning(slo={"ttftP99Seconds": None, "tpotP99Seconds": None})
    forecast = plan_service(spec)
    d = run(spec, steady(1.5), ScalingState(decided_replicas=3), forecast=forecast)
    assert d.capacity is not None
    assert "no SLO set: the knee is the only latency limit" in d.capacity.reason
    live = plan_at(
        as_planned(resolve(spec, forecast.name), forecast),
        live_conditions(spec, steady(1.5), d.calibration, d.prefill_calibration),
        layout_of(forecast),
    )
    assert live.operating_batch <= live.concurrency_limits.knee
    assert planner_basis(live, live).startswith(f"at batch {live.operating_batch:,.3g}")
