"""Standing headroom learned from SLO breaches, and bursts that drain on their own."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.test_engine import NOW, _spec, run, snap, waiting_for
from tokenscale.planning import plan_service
from tokenscale.scaling import ScalingState
from tokenscale.scaling.headroom import (
    DECAY_HALF_LIFE_S,
    MAX_SLO_HEADROOM,
    RAISE,
    RAISE_INTERVAL_S,
    decayed,
    drain_seconds,
    raised,
)


def test_a_breach_raises_once_per_interval_up_to_the_cap() -> None:
    h, at = raised(1.0, None, 100.0)
    assert (h, at) == (pytest.approx(RAISE), 100.0)
    assert raised(h, at, 100.0 + RAISE_INTERVAL_S - 1) == (h, at)  # the same breach, lingering
    h2, at2 = raised(h, at, 100.0 + RAISE_INTERVAL_S)
    assert h2 == pytest.approx(RAISE * RAISE)
    assert at2 == 100.0 + RAISE_INTERVAL_S
    assert raised(MAX_SLO_HEADROOM, None, 0.0)[0] == MAX_SLO_HEADROOM


def test_decay_halves_the_excess_per_half_life() -> None:
    assert decayed(1.8, DECAY_HALF_LIFE_S) == pytest.approx(1.4)
    assert decayed(1.0, 1e9) == 1.0
    assert decayed(1.5, 0.0) == 1.5


@given(st.floats(1.0, MAX_SLO_HEADROOM), st.floats(0.0, 1e6))
def test_decay_stays_between_one_and_where_it_was(h: float, dt: float) -> None:
    assert 1.0 <= decayed(h, dt) <= h


def test_drain_time_is_the_backlog_over_the_spare_capacity() -> None:
    assert drain_seconds(300.0, 40.0, 10.0) == pytest.approx(10.0)
    assert drain_seconds(0.0, 1.0, 5.0) == 0.0
    assert math.isinf(drain_seconds(10.0, 20.0, 20.0))


def test_a_queue_seen_once_that_drains_before_a_replica_starts_is_a_burst() -> None:
    spec = _spec()
    per_replica = plan_service(spec).rps_per_replica
    # 2 replicas, arrivals at half their capacity: a queue of 1.5 × the SLO's drains in
    # well under a cold start
    # a light fleet (KV 0.1): rated by the planner, not by its own rate (scaling/carried.py)
    calm = snap(n=2, kv=0.1, started_rps=per_replica)
    s = calm.model_copy(
        update={"waiting": waiting_for(spec, calm, ScalingState(decided_replicas=2), 1.5)}
    )
    d = run(spec, s, ScalingState(decided_replicas=2))
    assert d.replicas == 2
    waiting = next(x for x in d.signals if x.name == "queue_s")
    assert waiting.level == "normal"
    assert "a burst" in waiting.reason
    # the next decision still sees it: no burst, a step up in load
    again = run(spec, s, d.state, now=NOW + 15.0)
    assert again.replicas > 2
    assert again.reason.startswith("scale up 2→")


def test_a_queue_that_cannot_drain_within_the_lead_time_scales_up_at_once() -> None:
    spec = _spec()
    per_replica = plan_service(spec).rps_per_replica
    rate = 10 * per_replica  # arrivals beyond two replicas' capacity at the forecast's tokens
    w = spec.workload
    s = snap(n=2).model_copy(
        update={
            "started_rps": rate,
            "request_rate_rps": rate,
            "prompt_tps": rate * w.input_tokens.mean,
            "generation_tps": rate * w.output_tokens.mean,
        }
    )
    s = s.model_copy(
        update={"waiting": waiting_for(spec, s, ScalingState(decided_replicas=2), 1.5)}
    )
    d = run(spec, s, ScalingState(decided_replicas=2))
    assert d.replicas > 2
    waiting = next(x for x in d.signals if x.name == "queue_s")
    assert waiting.level == "high"


def test_an_slo_breach_raises_the_standing_count_and_it_stays() -> None:
    spec = _spec(slo={"ttftP99Seconds": 2.0})
    calm = run(spec, snap(n=2, ttft=0.5), ScalingState(decided_replicas=2))
    breach = run(spec, snap(n=2, ttft=4.0), calm.state, now=NOW + 15.0)
    assert breach.state.slo_headroom == pytest.approx(RAISE)
    assert breach.model_replicas is not None
    assert calm.model_replicas is not None
    assert breach.model_replicas >= math.ceil(calm.model_replicas * RAISE - 1e-9)
    # the breach lingers in the P99 window: no second raise for the same burst
    later = run(spec, snap(n=2, ttft=4.0), breach.state, now=NOW + 60.0)
    assert later.state.slo_headroom == pytest.approx(RAISE)
    # once the latency reads low again the headroom decays, slowly
    low = run(spec, snap(n=2, ttft=0.2, tpot=0.005), later.state, now=NOW + 600.0)
    assert 1.0 < low.state.slo_headroom < RAISE


def test_a_burst_queue_on_a_full_cache_never_asks_for_fewer_than_the_cache_alone() -> None:
    # found by the monotonicity property: a full KV cache alone scaled 1 → 2, and the same
    # cache with a two-request burst queue on top of it held at 1
    spec = _spec()
    state = ScalingState(decided_replicas=1)
    full = snap(n=1, waiting=0.0, kv=1.0)
    queued = full.model_copy(update={"waiting": 2.0})
    alone = run(spec, full, state)
    both = run(spec, queued, state)
    assert alone.replicas == 2
    assert both.replicas >= alone.replicas
    kv = next(x for x in both.signals if x.name == "kv_usage")
    assert kv.level == "high"
