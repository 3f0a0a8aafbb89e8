"""Demand in front of the engines (metrics/demand.py): the endpoint picker's queue for a pool
and the activation query, every odd answer read as unread, never as 0 — from a stand-in
Prometheus (tests/support/prometheus_standin.py, a fake: it sends the crafted answers a real
one cannot be made to; tests/integration/test_scale_to_zero.py reads a real one)."""

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.prometheus_standin import PrometheusStandIn, vector
from tokenscale.controller.reconcile import MetricsView
from tokenscale.controller.resync import demand_query
from tokenscale.metrics import PrometheusConfig, PrometheusSource
from tokenscale.metrics.demand import Demand, DemandQuery
from tokenscale.metrics.promql import QueryConfig, activation_query, gateway_queries
from tokenscale.metrics.source import QueryErrorKind

NS = "team"
KEY = (NS, "chat")
G = gateway_queries(QueryConfig(), None)
USER = 'keda_http_pending{host="chat"}'
ACT = activation_query(USER)


@pytest.fixture
def standin() -> Iterator[PrometheusStandIn]:
    server = PrometheusStandIn().start()
    yield server
    server.stop()


def _pool(name: str, value: str) -> tuple[dict[str, str], str]:
    return ({"namespace": NS, "inference_pool": name}, value)


def _read(standin: PrometheusStandIn, q: DemandQuery) -> tuple[Demand, list[Any]]:
    source = PrometheusSource(PrometheusConfig(url=standin.url, timeout_s=5))
    out, errors = source.demand({KEY: q}, None)
    return out[KEY], errors


def test_the_pools_queue_and_saturation_are_read(standin: PrometheusStandIn) -> None:
    standin.answers = {
        G["gateway_queued"]: vector(_pool("chat", "7"), _pool("other", "3")),
        G["pool_saturation"]: vector(_pool("chat", "1.2")),
    }
    d, errors = _read(standin, DemandQuery("chat", None))
    assert (d.gateway_queued, d.pool_saturation, d.problems) == (7.0, 1.2, ())
    assert errors == []


def test_a_pool_with_saturation_and_no_queue_series_has_queued_nothing(
    standin: PrometheusStandIn,
) -> None:
    standin.answers = {G["pool_saturation"]: vector(_pool("chat", "0.1"))}
    d, _ = _read(standin, DemandQuery("chat", None))
    assert d.gateway_queued == 0.0


def test_a_pool_the_picker_does_not_report_is_unread(standin: PrometheusStandIn) -> None:
    standin.answers = {G["pool_saturation"]: vector(_pool("other", "0.1"))}
    d, _ = _read(standin, DemandQuery("chat", None))
    assert d.gateway_queued is None
    assert any("inference_pool=chat" in p for p in d.problems)


def test_the_activation_query_is_read(standin: PrometheusStandIn) -> None:
    standin.answers = {ACT: vector(({}, "4"))}
    d, _ = _read(standin, DemandQuery(None, USER))
    assert d.activation_demand == 4.0


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (vector(), "no series"),
        (vector(({}, "NaN")), "NaN"),
        (vector(({}, "+Inf")), "not a finite number"),
        (vector(({}, "-3")), "outside"),
        ((500, {"status": "error", "error": "boom"}), "failed"),
    ],
)
def test_an_odd_activation_answer_is_unread_never_zero(
    standin: PrometheusStandIn, answer: Any, why: str
) -> None:
    standin.answers = {ACT: answer}
    d, _ = _read(standin, DemandQuery(None, USER))
    assert d.activation_demand is None
    assert any(why in p for p in d.problems), d.problems


def test_a_failed_gateway_query_is_a_typed_error(standin: PrometheusStandIn) -> None:
    standin.answers = {G["gateway_queued"]: (503, {"status": "error", "error": "down"})}
    d, errors = _read(standin, DemandQuery("chat", None))
    assert d.gateway_queued is None
    assert [e.kind for e in errors] == [QueryErrorKind.HTTP]


def test_nothing_wanted_runs_no_query(standin: PrometheusStandIn) -> None:
    source = PrometheusSource(PrometheusConfig(url="http://127.0.0.1:9", timeout_s=1))
    assert source.demand({}, None) == ({}, [])


def test_the_demand_query_comes_from_the_manifest() -> None:
    body: dict[str, Any] = {"metadata": {"name": "chat"}, "spec": {}}
    assert demand_query(body) is None
    body["spec"] = {"gateway": {"inferencePool": {}}}
    assert demand_query(body) == DemandQuery("chat", None)
    body["spec"] = {
        "gateway": {"inferencePool": {"name": "pool-a"}},
        "scaling": {"activation": {"query": USER}},
    }
    assert demand_query(body) == DemandQuery("pool-a", USER)


def test_the_observation_carries_the_demand_and_its_problems() -> None:
    view = MetricsView(
        snapshot=None,
        source_error=None,
        now_s=time.time(),
        interval_s=15.0,
        read_at_s=time.time(),
        demand=Demand(gateway_queued=None, activation_demand=2.0, problems=("gateway: x",)),
    )
    obs = view.observation
    assert obs is not None
    assert obs.snapshot is not None
    assert obs.snapshot.replicas_reporting == 0
    assert obs.snapshot.demand == 2.0
    assert "gateway: x" in obs.snapshot.problems


class _Recorder(PrometheusSource):
    """A source with no engines that records which services' demand it was asked for."""

    def __init__(self) -> None:
        super().__init__(PrometheusConfig(url="http://127.0.0.1:9"))
        self.asked: list[set[tuple[str, str]]] = []
        self.dispersion: list[bool] = []

    def snapshots(
        self, namespaces: list[str] | None, now_s: float, dispersion: bool = False
    ) -> dict[Any, Any]:
        self.dispersion.append(dispersion)
        return {}

    def running_by_pod(self, namespaces: list[str] | None) -> dict[Any, dict[str, float]]:
        return {}

    def demand(
        self, wanted: dict[tuple[str, str], DemandQuery], namespaces: list[str] | None
    ) -> tuple[dict[tuple[str, str], Demand], list[Any]]:
        self.asked.append(set(wanted))
        return {k: Demand(gateway_queued=1.0) for k in wanted}, []


def test_the_fleet_reads_the_demand_of_services_reconciled_lately_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tokenscale.controller import resync  # noqa: PLC0415
    from tokenscale.controller.telemetry import Telemetry  # noqa: PLC0415

    source = _Recorder()
    fleet = resync.FleetMetrics(source, None, 60.0, Telemetry(), interval_s=15.0)
    clock = [1000.0]
    monkeypatch.setattr(resync.time, "time", lambda: clock[0])
    fleet.view(KEY, DemandQuery("chat", None))
    fleet.view((NS, "plain"), None)
    fleet.refresh()
    assert source.asked[-1] == {KEY}
    view = fleet.view(KEY, DemandQuery("chat", None))
    assert view is not None
    assert view.demand == Demand(gateway_queued=1.0)
    clock[0] += resync.FORGET_AFTER_INTERVALS * 15.0 + 1  # the service was deleted
    fleet.refresh()
    assert source.asked[-1] == set()


def test_the_dispersion_subqueries_are_read_only_while_a_service_sizes_for_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three 30-minute subqueries per fleet read: asked for only while a service reconciled
    lately has ``dispersionSizing`` on, and forgotten like a demand source."""
    from tokenscale.controller import resync  # noqa: PLC0415
    from tokenscale.controller.telemetry import Telemetry  # noqa: PLC0415

    source = _Recorder()
    fleet = resync.FleetMetrics(source, None, 60.0, Telemetry(), interval_s=15.0)
    clock = [1000.0]
    monkeypatch.setattr(resync.time, "time", lambda: clock[0])
    on = {"spec": {"scaling": {"policy": {"dispersionSizing": True}}}}
    off = {"spec": {"scaling": {"policy": {"dispersionSizing": False}}}}
    assert resync.dispersion_wanted(on)
    assert not resync.dispersion_wanted(off)
    assert not resync.dispersion_wanted({"spec": {"scaling": None}})
    fleet.view((NS, "plain"), None, resync.dispersion_wanted(off))
    fleet.refresh()
    assert source.dispersion[-1] is False
    fleet.view(KEY, None, resync.dispersion_wanted(on))
    fleet.refresh()
    assert source.dispersion[-1] is True
    fleet.view(KEY, None, False)  # turned off
    fleet.refresh()
    assert source.dispersion[-1] is False
    fleet.view(KEY, None, True)
    clock[0] += resync.FORGET_AFTER_INTERVALS * 15.0 + 1  # the service was deleted
    fleet.refresh()
    assert source.dispersion[-1] is False


def test_the_fleet_read_has_the_dispersion_subqueries_only_when_asked() -> None:
    from tokenscale.metrics.promql import QueryConfig, queries  # noqa: PLC0415

    plain, with_counts = queries(QueryConfig(), None), queries(QueryConfig(), None, True)
    added = set(with_counts) - set(plain)
    assert added == {"arrivals_mean", "arrivals_allan", "arrival_windows"}
    assert all(":15s])" in with_counts[k] for k in added)
