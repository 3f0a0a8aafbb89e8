"""To zero and back (scaling/zero.py through the shared stepper): idle for the window goes to 0,
never on missing metrics; demand in front of the engines wakes at once; no activation source
is a validation error."""

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tests.helpers import spec as make_spec
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning import plan_service
from tokenscale.scaling import ScalingState, Snapshot
from tokenscale.scaling.cause import Cause
from tokenscale.scaling.stepper import Observation, Stepper
from tokenscale.scaling.zero import wake_replicas

NOW = 1_000_000.0
QUERY = 'sum(keda_http_pending_requests{host="chat"})'


def _spec(idle_s: int = 120, **scaling: Any) -> InferenceServiceSpec:
    return make_spec(
        workload={"rps": {"mean": 20}},
        scaling={
            "minReplicas": 0,
            "maxReplicas": 20,
            "scaleToZero": {"idleSeconds": idle_s},
            "activation": {"query": QUERY},
            "policy": {"scaleDownStabilizationSeconds": 60},
            **scaling,
        },
    )


def _idle(n: int, at: float, demand: float | None = 0.0, **extra: Any) -> Snapshot:
    """An idle vLLM fleet (gauges at zero, counters flat) and the activation query's value."""
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
        "activation_demand": demand,
    }
    values.update(extra)
    return Snapshot(**values)


def _zero(at: float, demand: float | None, **extra: Any) -> Snapshot:
    """What the metrics say at zero replicas: no engine, only the activation source."""
    return Snapshot(at=at, replicas_reporting=0, activation_demand=demand, **extra)


def _run(
    spec: InferenceServiceSpec, snaps: list[Snapshot], start: int | None
) -> list[tuple[int, Cause, ScalingState]]:
    stepper = Stepper(spec, plan_service(spec), 15.0)
    state = ScalingState(decided_replicas=start)
    out = []
    for s in snaps:
        step = stepper.step(state, Observation(s.at, s), s.at)
        assert step.decision is not None
        state = step.state
        out.append((step.decision.replicas, step.decision.cause, state))
    return out


def test_idle_for_the_window_goes_to_zero_at_once() -> None:
    spec = _spec(idle_s=120)
    runs = _run(spec, [_idle(3, NOW + 15 * k) for k in range(12)], 3)
    counts = [r for r, _, _ in runs]
    first_zero = counts.index(0)
    # idle since the first observation: 120 s later (the 9th, at +120 s) it is zero, from 3
    assert first_zero == 8
    assert counts[first_zero - 1] >= 1
    assert runs[first_zero][1] is Cause.SCALE_TO_ZERO
    assert all(c == 0 for c in counts[first_zero:])
    assert all(cause is Cause.AT_ZERO for _, cause, _ in runs[first_zero + 1 :])


def test_missing_metrics_never_count_as_idle() -> None:
    spec = _spec(idle_s=60)
    blind = [
        Snapshot(at=NOW + 15 * k, replicas_reporting=0, problems=["no series"]) for k in range(40)
    ]
    runs = _run(spec, blind, 2)
    assert {r for r, _, _ in runs} == {2}
    assert all(cause is Cause.BLIND for _, cause, _ in runs)


def test_an_unread_activation_source_never_lets_it_go_to_zero() -> None:
    spec = _spec(idle_s=60)
    runs = _run(spec, [_idle(1, NOW + 15 * k, demand=None) for k in range(40)], 1)
    assert {r for r, _, _ in runs} == {1}
    assert all(s.idle_since_s is None for _, _, s in runs)


def test_a_blind_observation_restarts_the_window() -> None:
    spec = _spec(idle_s=120)
    snaps = [_idle(1, NOW + 15 * k) for k in range(6)]
    snaps.append(Snapshot(at=NOW + 90, replicas_reporting=0, problems=["scrape failed"]))
    snaps += [_idle(1, NOW + 105 + 15 * k) for k in range(12)]
    runs = _run(spec, snaps, 1)
    counts = [r for r, _, _ in runs]
    assert runs[6][2].idle_since_s is None
    # the window restarts at +105 s: zero at +225 s, not at +120 s
    assert counts.index(0) == 7 + 8


def test_demand_at_zero_wakes_at_once_with_the_plan_for_the_queue() -> None:
    spec = _spec()
    plan = plan_service(spec)
    per = plan.max_concurrency_per_replica
    queued = 2.5 * per
    runs = _run(spec, [_zero(NOW, 0.0), _zero(NOW + 15, queued)], 0)
    assert runs[0][:2] == (0, Cause.AT_ZERO)
    assert runs[1][:2] == (3, Cause.WAKE)
    assert runs[1][2].decided_replicas == 3


def test_one_request_wakes_one_replica() -> None:
    runs = _run(_spec(), [_zero(NOW, 1.0)], 0)
    assert runs[0][:2] == (1, Cause.WAKE)


def test_the_gateway_queue_wakes_a_service_with_an_inference_pool() -> None:
    spec = make_spec(scaling={"minReplicas": 0, "maxReplicas": 8}, gateway={"inferencePool": {}})
    runs = _run(spec, [Snapshot(at=NOW, replicas_reporting=0, gateway_queued=4.0)], 0)
    assert runs[0][:2] == (1, Cause.WAKE)


def test_at_zero_an_unread_source_holds_zero() -> None:
    runs = _run(_spec(), [_zero(NOW + 15 * k, None, problems=["timeout"]) for k in range(5)], 0)
    assert {r for r, _, _ in runs} == {0}
    assert all(cause is Cause.BLIND for _, cause, _ in runs)


def test_waking_pods_do_not_jump_to_the_forecast_while_they_load() -> None:
    """After a wake the engines do not report yet (blind): hold the woken count, not the
    forecast plan's, and never go down."""
    spec = _spec()
    assert plan_service(spec).sized.total > 1
    snaps = [_zero(NOW, 1.0)] + [_zero(NOW + 15 * k, 1.0) for k in range(1, 6)]
    runs = _run(spec, snaps, 0)
    assert [r for r, _, _ in runs] == [1] * 6


def test_a_gateway_queue_with_engines_running_asks_for_more() -> None:
    spec = make_spec(scaling={"minReplicas": 0, "maxReplicas": 8}, gateway={"inferencePool": {}})
    snap = _idle(2, NOW, demand=None, gateway_queued=12.0)
    runs = _run(spec, [snap], 2)
    replicas, cause, _ = runs[0]
    assert replicas > 2
    assert cause is Cause.PRESSURE


def test_min_replicas_zero_without_an_activation_source_is_invalid() -> None:
    with pytest.raises(ValidationError) as err:
        make_spec(scaling={"minReplicas": 0})
    text = str(err.value)
    assert "spec.scaling.minReplicas=0" in text
    assert "nothing could ever wake" in text
    assert "spec.scaling.activation.query" in text
    assert "spec.gateway.inferencePool" in text


def test_a_schedule_window_at_zero_needs_an_activation_source_too() -> None:
    window = {"cron": "0 0 * * *", "durationSeconds": 3600, "minReplicas": 0}
    with pytest.raises(ValidationError, match="nothing could ever wake"):
        make_spec(scaling={"minReplicas": 1, "schedule": [window]})
    make_spec(scaling={"minReplicas": 1, "schedule": [window], "activation": {"query": QUERY}})


def test_a_pin_at_zero_needs_no_activation_source() -> None:
    assert make_spec(scaling={"minReplicas": 0, "replicas": 0}).scaling.replicas == 0


@settings(max_examples=60, deadline=None)
@given(
    demand=st.floats(0.001, 1e5, allow_nan=False),
    step=st.integers(1, 16),
    most=st.integers(1, 64),
)
def test_a_wake_is_at_least_one_and_within_the_step_and_bounds(
    demand: float, step: int, most: int
) -> None:
    spec = _spec(maxReplicas=most, policy={"maxScaleUpStep": step})
    n = wake_replicas(spec, plan_service(spec), demand)
    assert 1 <= n <= min(step, most)


@settings(max_examples=40, deadline=None)
@given(
    pattern=st.lists(st.sampled_from(["idle", "busy", "blind", "unread"]), min_size=1, max_size=40),
    idle_s=st.integers(0, 300),
)
def test_never_zero_without_a_whole_idle_window_of_facts(pattern: list[str], idle_s: int) -> None:
    """Whatever the sequence, a step to zero comes only after ``idleSeconds`` of consecutive
    idle observations with the activation source read at 0."""
    spec = _spec(idle_s=idle_s)
    snaps = []
    for k, kind in enumerate(pattern):
        at = NOW + 15 * k
        if kind == "idle":
            snaps.append(_idle(2, at))
        elif kind == "busy":
            snaps.append(_idle(2, at, running=3.0, request_rate_rps=1.0))
        elif kind == "blind":
            snaps.append(Snapshot(at=at, replicas_reporting=0, problems=["no series"]))
        else:
            snaps.append(_idle(2, at, demand=None))
    runs = _run(spec, snaps, 2)
    for k, (replicas, cause, _) in enumerate(runs):
        if cause is Cause.SCALE_TO_ZERO:
            assert replicas == 0
            run_start = k
            while run_start > 0 and pattern[run_start - 1] == "idle":
                run_start -= 1
            assert all(p == "idle" for p in pattern[run_start : k + 1])
            assert 15 * (k - run_start) >= idle_s
        if k > 0 and runs[k - 1][0] > 0 and replicas == 0:
            assert cause is Cause.SCALE_TO_ZERO


def test_a_growing_gateway_queue_adds_replicas_while_the_woken_ones_load() -> None:
    spec = _spec(policy={"maxScaleUpStep": 2})
    per = plan_service(spec).max_concurrency_per_replica
    snaps = [_zero(NOW, 1.0), _zero(NOW + 15, 3.5 * per), _zero(NOW + 30, 3.5 * per)]
    runs = _run(spec, snaps, 0)
    assert [r for r, _, _ in runs] == [1, 3, 4]  # at most maxScaleUpStep at a time
    assert all(cause is Cause.WAKE for _, cause, _ in runs)


def test_a_queue_never_lowers_a_blind_hold() -> None:
    spec = _spec()
    runs = _run(spec, [_zero(NOW, 0.5), _zero(NOW + 15, 0.0), _zero(NOW + 30, None)], 3)
    assert [r for r, _, _ in runs] == [3, 3, 3]


def test_at_zero_a_failed_activation_read_is_named_before_the_engines_missing_series() -> None:
    """At zero no engine reports, so its series are all missing: the reason a hold gives is the
    activation query's failure, not the first three engine problems."""
    engines = [f"{name}: no series for the service" for name in ("ttft_p50_s", "tpot_p99_s", "kv")]
    failed = "activation query failed: HTTP 500 from Prometheus"
    snap = _zero(NOW, None, problems=[*engines, failed])
    stepper = Stepper(_spec(), plan_service(_spec()), 15.0)
    step = stepper.step(ScalingState(decided_replicas=0), Observation(NOW, snap), NOW)
    assert step.decision is not None
    assert step.decision.replicas == 0
    assert failed in step.decision.why
    assert step.decision.metrics_reason.startswith(f"activation source unread: {failed}")
