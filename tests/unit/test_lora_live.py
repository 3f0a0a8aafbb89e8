"""LoRA live: ``vllm:lora_requests_info`` read per engine (its newest series), summed per
service, and the decision's separation of a queue waiting for an adapter slot from a queue
waiting for compute, shown in the signals. Read through the stand-in Prometheus
(tests/support/prometheus_standin.py), as tests/unit/test_prometheus_answers.py does."""

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import spec
from tests.support.prometheus_standin import PrometheusStandIn, vector
from tests.unit.test_prometheus_answers import _healthy, _labels
from tokenscale.metrics import PrometheusConfig, PrometheusSource
from tokenscale.metrics.lora import engine_state
from tokenscale.metrics.promql import QueryConfig, queries
from tokenscale.scaling import Snapshot
from tokenscale.scaling.signals import signals

NS, SVC = "team", "chat"
Q = queries(QueryConfig(), None)
LORA = {"adapters": [{"name": f"t{i}", "source": f"/a/t{i}", "rank": 8} for i in range(6)]}


@pytest.fixture
def standin() -> Iterator[PrometheusStandIn]:
    server = PrometheusStandIn().start()
    yield server
    server.stop()


def _info(instance: str, at: str, running: str, waiting: str, max_lora: str = "2") -> Any:
    labels = _labels(
        instance=instance,
        running_lora_adapters=running,
        waiting_lora_adapters=waiting,
        max_lora=max_lora,
    )
    return (labels, at)


def test_each_engines_newest_series_is_its_state(standin: PrometheusStandIn) -> None:
    """Engine a's older series (t0 waiting) is stale; its newest has both slots in use and two
    adapters waiting: slot-bound. Engine b runs one adapter of two: not slot-bound."""
    standin.answers = {
        **_healthy(),
        Q["lora_info"]: vector(
            _info("a", "100", "t0", "t1"),
            _info("a", "160", "t0,t1", "t2,t3"),
            _info("b", "150", "t4", ""),
        ),
    }
    source = PrometheusSource(PrometheusConfig(url=standin.url, timeout_s=5))
    snap = source.snapshots(None, time.time())[(NS, SVC)]
    assert snap.lora_engines == 2
    assert snap.lora_waiting_adapters == 2.0
    assert snap.lora_running_adapters == 3.0
    assert snap.lora_slot_bound_engines == 1
    assert source.last_errors == []


def test_a_service_without_lora_reads_none(standin: PrometheusStandIn) -> None:
    standin.answers = _healthy()
    source = PrometheusSource(PrometheusConfig(url=standin.url, timeout_s=5))
    snap = source.snapshots(None, time.time())[(NS, SVC)]
    assert snap.lora_engines is None
    assert snap.lora_slot_bound_engines is None


@pytest.mark.parametrize(
    ("labels", "state"),
    [
        (
            {"running_lora_adapters": "a,b", "waiting_lora_adapters": "c", "max_lora": "2"},
            (2, 1, True),
        ),
        (
            {"running_lora_adapters": "a", "waiting_lora_adapters": "c", "max_lora": "2"},
            (1, 1, False),
        ),
        (
            {"running_lora_adapters": "a,b", "waiting_lora_adapters": "", "max_lora": "2"},
            (2, 0, False),
        ),
        (
            {"running_lora_adapters": "", "waiting_lora_adapters": "c", "max_lora": "x"},
            (0, 1, False),
        ),
    ],
)
def test_an_engine_is_slot_bound_only_with_every_slot_in_use_and_adapters_waiting(
    labels: dict[str, str], state: tuple[int, int, bool]
) -> None:
    assert engine_state(labels) == state


def _snap(bound: int, waiting: float = 40.0) -> Snapshot:
    return Snapshot(
        at=0.0,
        replicas_reporting=4,
        waiting=waiting,
        running=40.0,
        kv_usage_max=0.4,
        lora_engines=4,
        lora_waiting_adapters=float(3 * bound),
        lora_running_adapters=8.0,
        lora_slot_bound_engines=bound,
    )


def test_a_queue_of_adapter_slots_asks_for_one_replica_not_its_ratio() -> None:
    s = spec(lora=LORA)
    policy = s.scaling.policy
    compute = {x.name: x for x in signals(_snap(0), s, policy)}
    slots = {x.name: x for x in signals(_snap(4), s, policy)}
    # the same queue: waiting for compute it asks for its ratio, for slots one more replica
    assert compute["waiting_per_replica"].level == "high"
    assert compute["waiting_per_replica"].replicas > 5
    assert slots["waiting_per_replica"].replicas == 5
    assert "wait for an adapter slot" in slots["waiting_per_replica"].reason
    assert "spec.lora.maxLoras" in slots["waiting_per_replica"].reason
    assert (slots["lora_slot_wait"].value, slots["lora_slot_wait"].level) == (1.0, "normal")
    assert slots["lora_slot_wait"].replicas == 4
    assert (compute["lora_slot_wait"].value, compute["lora_slot_wait"].level) == (0.0, "low")


def test_without_spec_lora_there_is_no_lora_signal() -> None:
    s = spec()
    names = [x.name for x in signals(_snap(4), s, s.scaling.policy)]
    assert "lora_slot_wait" not in names
