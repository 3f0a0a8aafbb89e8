"""The seat wait (planning/kv_wait.py): one replica's limit, and a fleet's pooled seats."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import spec as make_spec
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.slo import Slo
from tokenscale.planning import Conditions, plan_at, resolve
from tokenscale.planning.kv_wait import KvWait, fleet_replicas, kv_wait_batch
from tokenscale.planning.performance import PerfModel
from tokenscale.planning.planner import perf_at


def _rag(rps: float = 1.0) -> InferenceServiceSpec:
    # the chunk budget pinned at 2,048: the seat wait is the subject here, not the budget choice
    return make_spec(
        model={"name": "meta-llama/Llama-3.1-8B-Instruct", "catalog": "llama-3.1-8b"},
        hardware={"gpu": "H100-SXM-80GB", "tensorParallelSize": 1},
        workload={
            "rps": {"mean": rps},
            "inputTokens": {"mean": 24000, "p99": 28000},
            "outputTokens": {"mean": 200, "p99": 500},
            "maxContextTokens": 65536,
        },
        slo={"ttftP99Seconds": 8.0, "tpotP99Seconds": 0.1},
        serving={"maxNumBatchedTokens": 2048},
    )


def _perf() -> PerfModel:
    spec = _rag()
    return perf_at(resolve(spec), Conditions(workload=spec.workload), 1, 8192)


def _wait() -> tuple[PerfModel, KvWait]:
    perf = _perf()
    wait = kv_wait_batch(perf, _rag().slo, 17.9, 1, 16.0, 24000.0)
    assert wait is not None
    return perf, wait


def test_one_replica_is_held_below_its_pools_room_by_the_seat_wait() -> None:
    perf, wait = _wait()
    assert 1.0 < wait.batch < 16.0
    assert wait.seats_per_rank == 17
    assert wait.rps == pytest.approx(perf.request_rate(wait.batch))
    assert "wait" in wait.describe(1)
    assert "seat" in wait.describe(1)


def test_without_a_ttft_objective_the_room_stands() -> None:
    tpot_only = Slo(tpot_p99_seconds=0.1, e2e_p99_seconds=60.0)
    assert kv_wait_batch(_perf(), tpot_only, 17.9, 1, 16.0, 24000.0) is None


@settings(max_examples=30, deadline=None)
@given(st.floats(2.0, 40.0))
def test_a_fleet_behind_a_load_aware_gateway_carries_more_per_replica_than_one_alone(
    times: float,
) -> None:
    perf, wait = _wait()
    rps = wait.rps * times
    need = fleet_replicas(perf, wait, 1, rps)
    assert 1.0 <= need < times  # pooled seats: each carries more than one replica's limit
    assert fleet_replicas(perf, wait, 1, rps * 1.2) >= need


def test_up_to_one_replicas_limit_the_need_is_linear() -> None:
    perf, wait = _wait()
    assert fleet_replicas(perf, wait, 1, wait.rps / 2) == pytest.approx(0.5)


def test_the_plan_sizes_a_fleet_on_its_pooled_seats_and_says_why() -> None:
    # 2 req/s: replicas alone would take 2 ÷ one replica's seat-wait limit; pooled, fewer (at
    # 4 req/s the TTFT tail of 24k-token prompts caps the batch first: concurrency binds)
    spec = _rag(rps=2.0)
    plan = plan_at(resolve(spec), Conditions(workload=spec.workload, knee="slo"), 1)
    _, wait = _wait()
    assert plan.binding_constraint == "kv"
    assert plan.sized.needed < plan.design_rps / wait.rps
    kv = next(c for c in plan.constraints if c.name == "kv")
    assert "load-aware gateway" in kv.formula
    # the batch each replica carries is the one that sizes the fleet (throughput agrees)
    assert plan.sized.throughput == pytest.approx(plan.sized.kv, rel=1e-6)
