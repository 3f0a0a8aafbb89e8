"""What a replica is observed to carry: measured when the fleet is loaded, else the planner's."""

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.test_engine import FAST, _spec, run, snap
from tokenscale.api.scaling import ScalingPolicy
from tokenscale.scaling import ScalingState, Snapshot
from tokenscale.scaling.carried import (
    LOADED_SHARE,
    MEASURED_BOUNDS,
    carried,
    replicas_for,
    window_batch,
)

POLICY = ScalingPolicy()


def loaded(n: int, rps: float, batch: float, **extra: Any) -> Snapshot:
    """``n`` replicas at ``rps`` in all whose window batch is ``batch`` per replica (Little's
    law: generated tokens/s per replica × the TPOT mean)."""
    tpot = 0.02
    extra.setdefault("output_tokens_mean", 200.0)
    return snap(n=n, started_rps=rps, tpot_mean_s=tpot, **extra).model_copy(
        update={"generation_tps": batch * n / tpot, "request_rate_rps": rps}
    )


def test_the_batch_is_the_windows_not_the_gauges() -> None:
    s = loaded(2, 20.0, 8.0)
    assert s.running == 16.0  # the gauge: 8 per replica as it happens; the window's is its own
    assert window_batch(s.model_copy(update={"generation_tps": 2 * 3.0 / 0.02})) == (
        pytest.approx(3.0)
    )


def test_a_loaded_fleet_is_rated_by_what_it_carries() -> None:
    # 2 replicas at 20 RPS in all, a window batch of 8 against an SLO batch of 10: 0.8
    c = carried(loaded(2, 20.0, 8.0), POLICY, planner_rps_per_replica=8.0, slo_batch=10.0)
    assert c.source == "measured"
    assert c.occupancy == pytest.approx(0.8)
    assert c.rps_per_replica == pytest.approx(10.0 / 0.8)
    assert "measured" in c.reason


def test_a_light_fleet_keeps_the_planner() -> None:
    c = carried(loaded(2, 2.0, 2.0), POLICY, planner_rps_per_replica=8.0, slo_batch=10.0)
    assert c.source == "planner"
    assert c.rps_per_replica == 8.0
    assert c.occupancy == pytest.approx(0.2)
    assert c.occupancy < LOADED_SHARE


def test_without_a_tpot_mean_the_planner_stands() -> None:
    c = carried(snap(n=2, kv=0.95, started_rps=20.0), POLICY, 8.0, 10.0)
    assert (c.source, c.rps_per_replica) == ("planner", 8.0)


def test_the_kv_the_window_batch_holds_counts_as_occupancy() -> None:
    # 8 sequences of a 1,000-token prompt and half a 200-token answer: 8,800 of 11,000 tokens
    s = loaded(2, 20.0, 8.0).model_copy(update={"prompt_tps": 20.0 * 1000.0})
    c = carried(s, POLICY, 8.0, slo_batch=1000.0, kv_capacity_tokens=11_000.0)
    assert c.source == "measured"
    assert c.occupancy == pytest.approx(0.8 / 0.9)


@FAST
@given(st.floats(0.0, 50.0), st.floats(0.1, 500.0), st.floats(0.1, 100.0), st.integers(1, 8))
def test_the_measure_stays_within_its_bounds(
    batch: float, rps: float, planner: float, n: int
) -> None:
    c = carried(loaded(n, rps, batch), POLICY, planner, 20.0)
    lo, hi = MEASURED_BOUNDS
    assert lo * planner - 1e-9 <= c.rps_per_replica <= hi * planner + 1e-9
    more = carried(loaded(n, rps * 1.5, batch), POLICY, planner, 20.0)
    assert more.rps_per_replica >= c.rps_per_replica - 1e-9  # more carried at the same batch


def test_replicas_for_the_demand_at_the_carried_rate() -> None:
    c = carried(loaded(2, 20.0, 8.0), POLICY, 8.0, 10.0)
    assert replicas_for(30.0, c, _spec()) == 3  # 30 ÷ 12.5 = 2.4
    assert replicas_for(0.0, c, _spec()) == 0
    spare = _spec(scaling={"redundancy": {"factor": 1.5, "spareReplicas": 1}})
    assert replicas_for(30.0, c, spare) == 5  # ceil(2.4 × 1.5) + 1


def test_the_decision_says_which_capacity_it_used() -> None:
    spec = _spec(scaling={"policy": {"measuredCapacity": True}})
    light = run(spec, loaded(2, 2.0, 1.0), ScalingState(decided_replicas=2))
    assert light.capacity is not None
    assert light.capacity.source == "planner"
    busy = run(spec, loaded(2, 40.0, 150.0), ScalingState(decided_replicas=2))
    assert busy.capacity is not None
    assert busy.capacity.source == "measured"
    assert busy.capacity.occupancy is not None
    assert busy.capacity.occupancy >= LOADED_SHARE


def test_measured_capacity_off_shows_the_measure_and_uses_the_planner() -> None:
    spec = _spec()  # measuredCapacity defaults to false (docs/performance.md)
    on_spec = _spec(scaling={"policy": {"measuredCapacity": True}})
    on = run(on_spec, loaded(2, 40.0, 150.0), ScalingState(decided_replicas=2))
    off = run(spec, loaded(2, 40.0, 150.0), ScalingState(decided_replicas=2))
    assert on.capacity is not None
    assert on.capacity.source == "measured"
    assert on.capacity is not None
    assert off.capacity is not None
    assert off.capacity.source == "planner"
    assert off.capacity.rps_per_replica == pytest.approx(on.capacity.planner_rps_per_replica)
    assert "measuredCapacity false" in off.capacity.reason
    assert "measured" in off.capacity.reason
