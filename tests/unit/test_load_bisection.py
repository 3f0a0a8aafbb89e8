"""The steady-state batch at a rate: exact for an almost idle replica, never above the batch
the fleet was sized at (planning/load.py ``batch_at_rate``)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import spec
from tokenscale.planning import plan_service
from tokenscale.planning.load import batch_at_rate
from tokenscale.planning.planner import replica_perf_model

# One 5,578-token prompt every 16 s per replica of an 8B model on 4 × A10: the replica is
# busy 0.7 % of the time, so its batch is 0.007 — below the bisection's old absolute step.
EDGE = {
    "model": {"name": "llama-3.1-8b", "catalog": "llama-3.1-8b"},
    "hardware": {"gpu": "A10-24GB", "tensorParallelSize": 4},
    "workload": {
        "rps": {"mean": 3.0},
        "inputTokens": {"mean": 5578.0, "p99": 5578.0},
        "outputTokens": {"mean": 10.0, "p99": 10.0},
        "maxContextTokens": 32768,
        "prefixCacheHitRate": 0.0,
    },
    "slo": {"ttftP99Seconds": 0.5, "tpotP99Seconds": 0.5},
    "scaling": {"minReplicas": 1, "maxReplicas": 10000},
}


def test_a_fleet_sized_to_the_ttft_slo_meets_it_at_its_own_load() -> None:
    plan = plan_service(spec(**EDGE))
    assert plan.replicas is not None
    # the sizing's operating batch met the SLO; the load each replica carries is below that
    # batch's rate, so its TTFT P99 is too (it read 0.50012 s with a 1e-4 absolute step)
    assert plan.feasible, plan.infeasible_reasons
    assert plan.ttft_p99_estimate_s is not None
    assert plan.ttft_p99_estimate_s <= 0.5


@settings(max_examples=40, deadline=None)
@given(st.floats(1e-3, 0.9))
def test_batch_is_exact_to_a_ten_thousandth_of_itself(share: float) -> None:
    s = spec(**EDGE)
    plan = plan_service(s)
    perf = replica_perf_model(s, plan)
    top = float(plan.max_num_seqs)
    rps = share * perf.request_rate(top)
    batch = batch_at_rate(perf, rps, top)
    assert batch is not None
    assert perf.request_rate(batch) >= rps  # it covers the rate
    assert perf.request_rate(batch / (1 + 2e-4)) < rps  # and is not larger than it needs


@settings(max_examples=40, deadline=None)
@given(st.floats(1e-3, 1.0), st.floats(1e-3, 1.0))
def test_batch_never_exceeds_a_batch_known_to_cover_the_rate(share: float, within: float) -> None:
    s = spec(**EDGE)
    plan = plan_service(s)
    perf = replica_perf_model(s, plan)
    top = float(plan.max_num_seqs)
    rps = share * perf.request_rate(within * top)
    batch = batch_at_rate(perf, rps, top, within=within * top)
    assert batch is not None
    assert batch <= within * top
