"""The memory of bursts: a count a scale-up decided stands for spec.scaling.burstMemorySeconds."""

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.unit.test_engine import FAST, NOW, _spec, run, snap
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.scaling import ScalingState
from tokenscale.scaling.burst_memory import floor_in_force, remembered
from tokenscale.scaling.cause import Cause
from tokenscale.scaling.memory import trusted

WINDOW_S = 600


def _with_memory(window_s: int = WINDOW_S, **scaling: Any) -> InferenceServiceSpec:
    return _spec(
        scaling={"minReplicas": 1, "maxReplicas": 20, "burstMemorySeconds": window_s, **scaling}
    )


def _quiet(at: float) -> Any:
    return snap(n=3, kv=0.1, waiting=0.0, ttft=0.3, tpot=0.01, at=at)


def _burst_then_quiet(spec: InferenceServiceSpec) -> ScalingState:
    """A scale-up 2 → 3 on a full KV cache at NOW, then a state low since just after it."""
    up = run(spec, snap(n=2, kv=0.95), ScalingState(decided_replicas=2))
    assert (up.replicas, up.cause) == (3, Cause.PRESSURE)
    assert up.state.burst_floor_replicas == 3
    assert up.state.burst_floor_at_s == NOW
    return up.state.model_copy(update={"low_since_s": NOW + 15.0, "peak_load": 0.0})


def test_a_burst_keeps_its_count_standing_for_the_window_then_lets_go() -> None:
    spec = _with_memory()
    state = _burst_then_quiet(spec)
    # every signal low for the whole stabilisation window, the model needs fewer: held
    held = run(spec, _quiet(NOW + 400.0), state, now=NOW + 400.0)
    assert held.model_replicas is not None
    assert held.model_replicas < 3
    assert (held.replicas, held.cause) == (3, Cause.BURST_FLOOR)
    assert "a burst needed 3" in held.reason
    # past the window the floor is gone and the step down goes ahead
    later = run(spec, _quiet(NOW + WINDOW_S + 15.0), held.state, now=NOW + WINDOW_S + 15.0)
    assert (later.replicas, later.cause) == (2, Cause.SCALE_DOWN)
    assert later.state.burst_floor_replicas is None


def test_without_memory_the_same_fleet_steps_down() -> None:
    spec = _with_memory(0)
    state = _burst_then_quiet(_with_memory())
    d = run(spec, _quiet(NOW + 400.0), state, now=NOW + 400.0)
    assert (d.replicas, d.cause) == (2, Cause.SCALE_DOWN)
    assert d.state.burst_floor_replicas is None


def test_a_recurrence_renews_the_floor_and_a_larger_burst_raises_it() -> None:
    spec = _with_memory()
    state = ScalingState(burst_floor_replicas=3, burst_floor_at_s=NOW)
    assert remembered(state, spec, NOW + 500.0, 3) == {
        "burst_floor_replicas": 3,
        "burst_floor_at_s": NOW + 500.0,
    }
    assert remembered(state, spec, NOW + 500.0, 5)["burst_floor_replicas"] == 5
    assert remembered(state, spec, NOW + 500.0, 2) == {}  # a smaller need keeps the larger
    assert remembered(state, spec, NOW + 500.0, None) == {}
    gone = remembered(state, spec, NOW + WINDOW_S + 1.0, None)
    assert gone == {"burst_floor_replicas": None, "burst_floor_at_s": None}


@FAST
@given(
    st.integers(0, 200),
    st.integers(1, 10),
    st.integers(1, 40),
    st.floats(0.0, 2 * WINDOW_S),
)
def test_the_floor_is_never_outside_the_bounds(
    floor: int, min_replicas: int, span: int, age_s: float
) -> None:
    spec = _with_memory(minReplicas=min_replicas, maxReplicas=min_replicas + span)
    state = ScalingState(burst_floor_replicas=floor, burst_floor_at_s=NOW - age_s)
    got = floor_in_force(state, spec, NOW)
    if age_s > WINDOW_S:
        assert got is None
    else:
        assert got is not None
        assert min_replicas <= got <= min_replicas + span


def test_a_floor_outside_the_bounds_in_status_is_reset() -> None:
    spec = _with_memory(maxReplicas=8)
    state = ScalingState(burst_floor_replicas=500, burst_floor_at_s=NOW)
    fixed, problems = trusted(state, spec, NOW, None)
    assert fixed.burst_floor_replicas is None
    assert any("burstFloorReplicas=500" in p for p in problems)
