"""spec.scaling.maxReplicasForSheddable (scaling/sheddable.py): a sheddable backlog alone adds
replicas only up to the cap; a guaranteed request in the gateway's queue, or an unread queue,
lifts it; the query reads the queue's negative priorities."""

from typing import Any

import pytest
import yaml

from tests.helpers import spec as make_spec
from tests.unit.test_classes import agent, batch, chat
from tests.unit.test_engine import NOW, snap
from tokenscale.api.errors import SpecError
from tokenscale.api.manifest import parse_manifests
from tokenscale.metrics.demand import DemandQuery, assemble
from tokenscale.metrics.promql import QueryConfig, gateway_queries
from tokenscale.planning import plan_service
from tokenscale.scaling import ScalingState
from tokenscale.scaling.cause import Cause
from tokenscale.scaling.engine import EngineInput, decide

CLASSES: dict[str, Any] = {
    "rps": None,
    "inputTokens": None,
    "outputTokens": None,
    "classes": [chat(), agent(), batch()],
}


def _spec(cap: int | None) -> Any:
    scaling: dict[str, Any] = {"minReplicas": 1, "maxReplicas": 40}
    if cap is not None:
        scaling["maxReplicasForSheddable"] = cap
    return make_spec(
        workload=CLASSES, scaling=scaling, gateway={"inferencePool": {"endpointPicker": "e"}}
    )


def _decide(cap: int | None, **extra: Any) -> Any:
    spec = _spec(cap)
    forecast = plan_service(spec)
    n = forecast.replica_count
    state = ScalingState(decided_replicas=n, peak_at_s=NOW - 15, pressure_since_s=NOW - 600)
    # every engine full and waiting: the signals ask for many more replicas
    s = snap(n=n, kv=0.99, waiting=40.0 * n, ttft=5.0, **extra)
    return decide(
        EngineInput(
            spec=spec, forecast=forecast, snapshot=s, state=state, now_s=NOW, interval_s=15.0
        )
    ), n


def test_a_sheddable_backlog_alone_stops_at_the_cap() -> None:
    free, n = _decide(None, gateway_queued=500.0, gateway_queued_sheddable=500.0)
    assert free.replicas > n + 1  # without a cap the backlog scales like any other
    capped, _ = _decide(n + 1, gateway_queued=500.0, gateway_queued_sheddable=500.0)
    assert capped.replicas == n + 1
    assert "maxReplicasForSheddable" in capped.why
    held, _ = _decide(1, gateway_queued=500.0, gateway_queued_sheddable=500.0)
    assert held.replicas == n  # never below the plan, never down
    assert held.cause is Cause.SHEDDABLE_CAP


@pytest.mark.parametrize(
    "queue",
    [
        {"gateway_queued": 500.0, "gateway_queued_sheddable": 400.0},  # a guaranteed one waits
        {"gateway_queued": 500.0},  # the sheddable part unread
        {},  # the queue unread
    ],
)
def test_a_guaranteed_request_or_an_unread_queue_lifts_the_cap(queue: dict[str, float]) -> None:
    free, n = _decide(n_cap := 1, **queue)
    assert n_cap < n
    assert free.replicas > n
    assert free.cause is not Cause.SHEDDABLE_CAP


def test_the_cap_needs_a_sheddable_class_and_a_pool() -> None:
    doc = {
        "apiVersion": "tokenscale.io/v1alpha1",
        "kind": "InferenceService",
        "metadata": {"name": "x"},
        "spec": {
            "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
            "hardware": {"gpu": "H100-SXM-80GB", "tensorParallelSize": 1},
            "workload": {
                "rps": {"mean": 1},
                "inputTokens": {"mean": 100},
                "outputTokens": {"mean": 10},
            },
            "scaling": {"maxReplicasForSheddable": 3},
        },
    }
    with pytest.raises(SpecError) as err:
        parse_manifests(yaml.safe_dump(doc))
    assert "maxReplicasForSheddable" in str(err.value)


def test_the_query_reads_negative_priorities_and_a_pool_without_them_has_none() -> None:
    q = gateway_queries(QueryConfig(), None)["gateway_queued_sheddable"]
    assert 'priority=~"-[0-9]+"' in q
    wanted = {("ns", "svc"): DemandQuery(pool="svc", activation=None)}
    got = assemble(wanted, {("ns", "svc"): 7.0}, {}, None, {}, {})
    (d,) = got.values()
    assert d.gateway_queued_sheddable == 0.0
    unread = assemble(wanted, {("ns", "svc"): 7.0}, {}, None, {}, None)
    assert next(iter(unread.values())).gateway_queued_sheddable is None
