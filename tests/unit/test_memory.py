"""Status is output, not input: the engine's memory read back from status is judged, and a
decision moves the workload at most one policy step."""

import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.test_engine import NOW, _spec, snap
from tokenscale.api.base import MAX_RPS
from tokenscale.api.status import InferenceServiceStatus, RateForecast
from tokenscale.controller.status import status_document
from tokenscale.planning import plan_service
from tokenscale.scaling import ScalingState
from tokenscale.scaling.headroom import MAX_SLO_HEADROOM
from tokenscale.scaling.memory import limited, trusted
from tokenscale.scaling.need import CALIBRATION_BOUNDS
from tokenscale.scaling.stepper import Observation, Stepper

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ANY = st.one_of(st.none(), st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False))


@st.composite
def poisoned(draw: st.DrawFn) -> ScalingState:
    """Whatever a client with the status RBAC could write (finite JSON numbers)."""
    rate = None
    if draw(st.booleans()):
        rate = RateForecast(
            level_rps=draw(st.floats(-1e300, 1e300)),
            trend_rps_per_s=draw(st.floats(-1e300, 1e300)),
            variance=draw(st.floats(-1e300, 1e300)),
            last_error_rps=draw(ANY),
            at_s=draw(st.floats(-1e12, 1e12)),
            since_s=draw(ANY),
        )
    fields: dict[str, Any] = {
        "decided_replicas": draw(st.one_of(st.none(), st.integers(-10, 10_000))),
        "observed_at_s": draw(ANY),
        "low_since_s": draw(ANY),
        "peak_load": draw(st.floats(-1e300, 1e300)),
        "peak_at_s": draw(ANY),
        "pressure_since_s": draw(ANY),
        "last_scale_s": draw(ANY),
        "calibration": draw(st.floats(-1e300, 1e300)),
        "prefill_calibration": draw(st.floats(-1e300, 1e300)),
        "slo_headroom": draw(st.floats(-1e300, 1e300)),
        "slo_headroom_raised_s": draw(ANY),
        "backlog_at_s": draw(ANY),
        "lead_time_s": draw(ANY),
        "rate": rate,
    }
    return ScalingState(**fields)


def _within(value: float | None, lo: float, hi: float) -> bool:
    return value is None or (math.isfinite(value) and lo <= value <= hi)


@FAST
@given(poisoned(), st.one_of(st.none(), st.integers(0, 40)))
def test_judged_memory_is_finite_and_within_the_spec(state: ScalingState, live: int | None) -> None:
    spec = _spec(scaling={"minReplicas": 1, "maxReplicas": 20})
    kept, problems = trusted(state, spec, NOW, live)
    times = ("observed_at_s", "low_since_s", "peak_at_s", "pressure_since_s", "last_scale_s")
    for name in (*times, "slo_headroom_raised_s", "backlog_at_s"):
        assert _within(getattr(kept, name), NOW - 86_400, NOW), name
    assert _within(kept.calibration, *CALIBRATION_BOUNDS)
    assert _within(kept.prefill_calibration, *CALIBRATION_BOUNDS)
    assert _within(kept.slo_headroom, 1.0, MAX_SLO_HEADROOM)
    assert _within(kept.peak_load, 0.0, 2.0 * 20)
    if kept.rate is not None:
        assert _within(kept.rate.level_rps, 0.0, MAX_RPS)
        assert _within(kept.rate.last_error_rps, -2 * MAX_RPS, 2 * MAX_RPS)
        # a run's start after its last update would hold the trend off for ever
        assert _within(kept.rate.since_s, NOW - 86_400, kept.rate.at_s)
    if kept.decided_replicas is not None:
        assert 1 <= kept.decided_replicas <= 20
    if live is not None:
        assert kept.decided_replicas == min(max(live, 1), 20)  # the workload, not the memory
    if kept == state.model_copy(update={"decided_replicas": kept.decided_replicas}):
        assert not any("status.scaling" in p for p in problems)


@FAST
@given(
    poisoned(),
    st.integers(1, 20),
    st.floats(0.0, 1.0),
    st.floats(0.0, 40.0),
)
def test_an_edited_memory_never_moves_the_fleet_faster_than_the_policy(
    state: ScalingState, live: int, kv: float, waiting: float
) -> None:
    spec = _spec(scaling={"minReplicas": 1, "maxReplicas": 20, "policy": {"maxScaleUpStep": 2}})
    kept, _ = trusted(state, spec, NOW, live)
    step = Stepper(spec, plan_service(spec), 15.0).step(
        kept, Observation(NOW, snap(n=live, kv=kv, waiting=waiting)), NOW, stored=False
    )
    assert step.decision is not None
    replicas = limited(step.decision.replicas, live, spec)
    assert live - 1 <= replicas <= live + 2  # maxScaleDownStep 1, maxScaleUpStep 2
    # whatever was remembered, the status written after it validates (no crash on write)
    written = status_document(InferenceServiceStatus(decided_replicas=replicas, scaling=step.state))
    InferenceServiceStatus.model_validate(written)


def test_bounds_win_over_the_step_for_a_workload_outside_them() -> None:
    spec = _spec(scaling={"minReplicas": 2, "maxReplicas": 6})
    assert limited(6, 40, spec) == 6  # a manual 40 comes back to maxReplicas at once
    assert limited(9, 4, spec) == 6
    assert limited(1, 5, spec) == 4  # one step down (maxScaleDownStep 1)
    assert limited(3, None, spec) == 3  # no workload yet: the bounds only
