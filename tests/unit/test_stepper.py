"""One decision per observation: the stepper the operator and the simulator share."""

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.test_engine import NOW, _spec, snap, waiting_for
from tokenscale.planning import plan_service
from tokenscale.scaling import ScalingState, Snapshot
from tokenscale.scaling.cause import Cause
from tokenscale.scaling.need import CALIBRATION_HALF_LIFE_S, smoothed
from tokenscale.scaling.stepper import Observation, Stepper
from tokenscale.simulation.policies import TokenscalePolicy

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _stepper(interval_s: float = 15.0) -> Stepper:
    spec = _spec()
    return Stepper(spec, plan_service(spec), interval_s)


@st.composite
def observations(draw: st.DrawFn) -> list[Snapshot]:
    """A run of snapshots 15 s apart, loads drawn per observation."""
    count = draw(st.integers(1, 6))
    return [
        snap(
            n=draw(st.integers(1, 6)),
            kv=draw(st.floats(0.0, 1.0)),
            waiting=draw(st.floats(0.0, 30.0)),
            ttft=draw(st.floats(0.05, 5.0)),
            tpot=draw(st.floats(0.005, 0.1)),
            at=NOW + 15.0 * k,
        )
        for k in range(count)
    ]


@FAST
@given(observations(), st.lists(st.integers(0, 3), min_size=6, max_size=6))
def test_re_stepping_an_observation_changes_nothing(
    snaps: list[Snapshot], repeats: list[int]
) -> None:
    """Each observation stepped once, or again and again at later clocks (events between two
    reads): the same decisions and the same memory."""
    stepper = _stepper()
    once = ScalingState(decided_replicas=3)
    again = once
    for k, s in enumerate(snaps):
        obs = Observation(s.at, s)
        first = stepper.step(once, obs, s.at)
        assert first.decision is not None
        once = first.state
        second = stepper.step(again, obs, s.at)
        again = second.state
        for r in range(repeats[k]):
            repeat = stepper.step(again, obs, s.at + 1.0 + r)
            assert repeat.decision is None  # the stored decision stands
            assert repeat.state == again  # the memory does not move
        assert again == once
        assert second.decision == first.decision


@FAST
@given(observations(), st.lists(st.floats(0.0, 10.0), min_size=6, max_size=6))
def test_the_engine_decides_as_of_its_observation_whatever_the_callers_latency(
    snaps: list[Snapshot], latencies: list[float]
) -> None:
    """A caller that steps each observation some seconds after it was read (a reconcile after
    the read; in the compressed-time playground, ``speed`` × that) gets the decisions and the
    memory of one stepping at the observation's time (the simulator): the engine's clocks run
    on observation times."""
    stepper = _stepper()
    prompt = late = ScalingState(decided_replicas=3)
    for k, s in enumerate(snaps):
        obs = Observation(s.at, s)
        a = stepper.step(prompt, obs, s.at)
        b = stepper.step(late, obs, s.at + latencies[k])
        prompt, late = a.state, b.state
        assert b.decision == a.decision
        assert late == prompt


def test_an_older_observation_is_not_decided_on() -> None:
    stepper = _stepper()
    s = snap(n=2, kv=0.95)
    step = stepper.step(ScalingState(decided_replicas=2), Observation(NOW, s), NOW)
    assert step.decision is not None
    older = s.model_copy(update={"at": NOW - 15.0})
    assert stepper.step(step.state, Observation(NOW - 15.0, older), NOW + 1).decision is None


def test_the_real_gap_reaches_the_engine_a_queue_seen_twice_at_60_s_is_no_burst() -> None:
    """With ``--interval 60`` a queue seen at two observations in a row is a step in load (the
    engine no longer assumes 15 s between decisions)."""
    spec = _spec()
    per_replica = plan_service(spec).rps_per_replica
    stepper = Stepper(spec, plan_service(spec), 60.0)
    # a light fleet (KV 0.1): rated by the planner, not by its own rate (scaling/carried.py)
    calm = snap(n=2, kv=0.1, started_rps=per_replica)
    waiting = waiting_for(spec, calm, ScalingState(decided_replicas=2), 1.5)
    queue = calm.model_copy(update={"waiting": waiting})
    first = stepper.step(ScalingState(decided_replicas=2), Observation(NOW, queue), NOW)
    assert first.decision is not None
    assert first.decision.replicas == 2  # seen once, drains before a replica starts: a burst
    later = queue.model_copy(update={"at": NOW + 60.0})
    second = stepper.step(first.state, Observation(NOW + 60.0, later), NOW + 60.0)
    assert second.decision is not None
    assert second.decision.replicas > 2
    assert second.decision.cause is Cause.PRESSURE


@pytest.mark.parametrize("ratio", [0.5, 0.8, 1.3])
def test_calibration_smoothing_is_per_unit_of_time(ratio: float) -> None:
    """Four observations 15 s apart move the factor as far as one observation 60 s later."""
    four = 1.0
    for _ in range(4):
        four = smoothed(four, ratio, 15.0)
    assert smoothed(1.0, ratio, 60.0) == pytest.approx(four, abs=2e-4)
    assert smoothed(1.0, ratio, 15.0) == pytest.approx(0.7 + 0.3 * ratio, abs=1e-4)
    assert smoothed(1.0, ratio, 0.0) == 1.0  # no time, no change
    assert pytest.approx(29.15, abs=0.01) == CALIBRATION_HALF_LIFE_S


@FAST
@given(st.floats(0.5, 1.5), st.sampled_from([5.0, 15.0, 30.0, 60.0]))
def test_a_steady_ratio_is_the_steady_state_at_any_interval(ratio: float, dt: float) -> None:
    factor = 1.0
    for _ in range(math.ceil(3600 / dt)):
        factor = smoothed(factor, ratio, dt)
    assert factor == pytest.approx(ratio, abs=2e-3)


def test_a_pin_set_between_two_observations_applies_without_re_deciding() -> None:
    spec = _spec()
    stepper = Stepper(spec, plan_service(spec), 15.0)
    s = snap(n=2)
    step = stepper.step(ScalingState(decided_replicas=2), Observation(NOW, s), NOW)
    pinned = _spec(scaling={"replicas": 5})
    repin = Stepper(pinned, plan_service(pinned), 15.0).step(step.state, Observation(NOW, s), NOW)
    assert repin.decision is not None
    assert (repin.decision.replicas, repin.decision.cause) == (5, Cause.PINNED)
    assert repin.state == step.state  # the engine's memory did not advance


def test_the_simulator_drives_the_engine_through_the_same_stepper() -> None:
    spec = _spec()
    policy = TokenscalePolicy(spec, plan_service(spec), 120.0, 15.0)
    assert isinstance(policy.stepper, Stepper)
    s = snap(n=2, kv=0.95)
    replicas = policy.decide(NOW, s, 2)
    expected = _stepper().step(
        ScalingState(decided_replicas=plan_service(spec).sized.total), Observation(NOW, s), NOW
    )
    assert expected.decision is not None
    assert replicas == expected.decision.replicas
    assert policy.state == expected.state
    # the same observation again (a second call at the same time) is not decided twice
    assert policy.decide(NOW, s, replicas) == replicas
    assert policy.state == expected.state
