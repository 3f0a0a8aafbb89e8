"""What a replica is observed to carry: measured when the fleet is loaded, else the planner's."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.test_engine import FAST, _spec, run, snap
from tokenscale.api.scaling import ScalingPolicy
from tokenscale.scaling import ScalingState
from tokenscale.scaling.carried import LOADED_SHARE, MEASURED_BOUNDS, carried, replicas_for

POLICY = ScalingPolicy()


def test_a_loaded_fleet_is_rated_by_what_it_carries() -> None:
    # 2 replicas at 20 RPS in all, KV at 0.72 of the pool: 0.8 of the 0.9 target
    s = snap(n=2, kv=0.72, started_rps=20.0)
    c = carried(s, POLICY, planner_rps_per_replica=8.0, slo_batch=1000.0)
    assert c.source == "measured"
    assert c.occupancy == pytest.approx(0.8)
    assert c.rps_per_replica == pytest.approx(10.0 / 0.8)
    assert "measured" in c.reason


def test_a_light_fleet_keeps_the_planner() -> None:
    s = snap(n=2, kv=0.1, started_rps=2.0)
    c = carried(s, POLICY, planner_rps_per_replica=8.0, slo_batch=1000.0)
    assert c.source == "planner"
    assert c.rps_per_replica == 8.0
    assert c.occupancy is not None
    assert c.occupancy < LOADED_SHARE


def test_the_batch_counts_as_occupancy_too() -> None:
    # KV nearly empty but the batch at the SLO batch: loaded
    s = snap(n=2, kv=0.05, started_rps=20.0)  # running 16 (8 per replica)
    c = carried(s, POLICY, planner_rps_per_replica=8.0, slo_batch=8.0)
    assert c.source == "measured"
    assert c.occupancy == pytest.approx(1.0)
    assert c.rps_per_replica == pytest.approx(10.0)


@FAST
@given(st.floats(0.0, 1.0), st.floats(0.1, 500.0), st.floats(0.1, 100.0), st.integers(1, 8))
def test_the_measure_stays_within_its_bounds(kv: float, rps: float, planner: float, n: int) -> None:
    c = carried(snap(n=n, kv=kv, started_rps=rps), POLICY, planner, 1e6)
    lo, hi = MEASURED_BOUNDS
    assert lo * planner - 1e-9 <= c.rps_per_replica <= hi * planner + 1e-9
    more = carried(snap(n=n, kv=kv, started_rps=rps * 1.5), POLICY, planner, 1e6)
    assert more.rps_per_replica >= c.rps_per_replica - 1e-9  # more carried at the same occupancy


def test_replicas_for_the_demand_at_the_carried_rate() -> None:
    c = carried(snap(n=2, kv=0.72, started_rps=20.0), POLICY, 8.0, 1000.0)
    assert replicas_for(30.0, c, _spec()) == 3  # 30 ÷ 12.5 = 2.4
    assert replicas_for(0.0, c, _spec()) == 0
    spare = _spec(scaling={"redundancy": {"factor": 1.5, "spareReplicas": 1}})
    assert replicas_for(30.0, c, spare) == 5  # ceil(2.4 × 1.5) + 1


def test_the_decision_says_which_capacity_it_used() -> None:
    spec = _spec()
    light = run(spec, snap(n=2, kv=0.1), ScalingState(decided_replicas=2))
    assert light.capacity is not None
    assert light.capacity.source == "planner"
    loaded = run(spec, snap(n=2, kv=0.8, started_rps=40.0), ScalingState(decided_replicas=2))
    assert loaded.capacity is not None
    assert loaded.capacity.source == "measured"
    assert loaded.capacity.rps_per_replica == pytest.approx(20.0 / (0.8 / 0.9))
