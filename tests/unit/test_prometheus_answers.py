"""Every Prometheus answer is data to judge: odd shapes and absurd values, from a stand-in.

The stand-in (tests/support/prometheus_standin.py, a fake) answers the instant-query API with
crafted bodies that a real Prometheus cannot be made to send.
"""

import math
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.prometheus_standin import PrometheusStandIn, vector
from tokenscale.controller.resync import FleetMetrics
from tokenscale.controller.telemetry import Telemetry
from tokenscale.metrics import PrometheusConfig, PrometheusSource
from tokenscale.metrics.answers import judge_vector
from tokenscale.metrics.bounds import RANGES, judged, value_range
from tokenscale.metrics.promql import QueryConfig, queries, running_per_pod
from tokenscale.metrics.source import QueryError
from tokenscale.render.names import label_value
from tokenscale.scaling import Snapshot

NS, SVC = "team", "chat"
CFG = QueryConfig()
Q = queries(CFG, None)


def _labels(svc: str = SVC, **extra: str) -> dict[str, str]:
    return {"namespace": NS, "inferenceservice": svc, **extra}


def _healthy(svc: str = SVC) -> dict[str, Any]:
    """A service with two engines, a short queue and half-full KV caches."""
    return {
        Q["replicas"]: vector((_labels(svc), "2")),
        Q["waiting"]: vector((_labels(svc), "1")),
        Q["running"]: vector((_labels(svc), "8")),
        Q["kv_max"]: vector((_labels(svc), "0.5")),
        Q["ttft_p99"]: vector((_labels(svc), "0.3")),
        Q["request_rate"]: vector((_labels(svc), "4")),
        Q["cache_info"]: vector(
            (_labels(svc, instance="a", num_gpu_blocks="1000"), "1"),
        ),
        Q["kv_per_instance"]: vector((_labels(svc, instance="a"), "0.5")),
    }


@pytest.fixture
def standin() -> Iterator[PrometheusStandIn]:
    server = PrometheusStandIn().start()
    yield server
    server.stop()


def _read(standin: PrometheusStandIn) -> tuple[PrometheusSource, dict[Any, Snapshot]]:
    source = PrometheusSource(PrometheusConfig(url=standin.url, timeout_s=5))
    return source, source.snapshots(None, time.time())


def test_a_well_formed_answer_is_read(standin: PrometheusStandIn) -> None:
    standin.answers = _healthy()
    source, snaps = _read(standin)
    snap = snaps[(NS, SVC)]
    assert (snap.replicas_reporting, snap.waiting, snap.kv_usage_max) == (2, 1.0, 0.5)
    assert snap.kv_blocks_total == 1000
    assert source.last_errors == []


BAD_SHAPES = {
    "status error": {"status": "error", "errorType": "execution", "error": "query timed out"},
    "result null": {"status": "success", "data": {"resultType": "vector", "result": None}},
    "scalar result": {"status": "success", "data": {"resultType": "scalar", "result": [1, "3"]}},
    "metric null": {
        "status": "success",
        "data": {"resultType": "vector", "result": [{"metric": None, "value": [1, "3"]}]},
    },
    "no data": {"status": "success"},
    "a list": [1, 2, 3],
    "not JSON": "<html>proxy error</html>",
}


@pytest.mark.parametrize("shape", list(BAD_SHAPES))
def test_an_answer_that_is_not_a_vector_is_a_named_problem_for_that_query(
    standin: PrometheusStandIn, shape: str
) -> None:
    standin.answers = {**_healthy(), Q["waiting"]: BAD_SHAPES[shape]}
    source, snaps = _read(standin)
    snap = snaps[(NS, SVC)]
    assert snap.waiting is None
    assert snap.kv_usage_max == 0.5  # the other queries still count
    assert any(p.startswith("waiting: waiting: ") for p in snap.problems), snap.problems
    assert [p.kind for p in source.last_errors] == ["answer"]
    assert source.last_error is not None
    assert "waiting" in source.last_error


def test_every_query_malformed_still_returns(standin: PrometheusStandIn) -> None:
    standin.answers = dict.fromkeys(Q.values(), BAD_SHAPES["metric null"])
    standin.answers[running_per_pod(CFG, None)] = BAD_SHAPES["scalar result"]
    source, snaps = _read(standin)
    assert snaps == {}
    assert len(source.last_errors) == len(Q)
    assert source.running_by_pod(None) == {}


@pytest.mark.parametrize(
    ("query", "value", "field"),
    [
        ("kv_max", "1.5", "kv_usage_max"),
        ("kv_max", "-1", "kv_usage_max"),
        ("waiting", "-3", "waiting"),
        ("ttft_p99", "-3", "ttft_p99_s"),
        ("ttft_p99", "+Inf", "ttft_p99_s"),
        ("request_rate", "1e308", "request_rate_rps"),
        ("request_rate", "1e400", "request_rate_rps"),
        ("running", "many", "running"),
        ("replicas", "1e30", "replicas_reporting"),
        ("replicas", "-2", "replicas_reporting"),
    ],
)
def test_an_absurd_value_is_a_problem_not_a_signal(
    standin: PrometheusStandIn, query: str, value: str, field: str
) -> None:
    standin.answers = {**_healthy(), Q[query]: vector((_labels(), value))}
    source, snaps = _read(standin)
    snap = snaps[(NS, SVC)]
    if field == "replicas_reporting":
        assert snap.replicas_reporting == 0  # no engine counted: the engine holds
    else:
        assert getattr(snap, field) is None
    assert any(p.startswith(f"{field}:") for p in snap.problems), snap.problems
    assert [p.kind for p in source.last_errors] == ["value"]


@pytest.mark.parametrize("blocks", ["Inf", "1e400", "-5", "nan", "lots"])
def test_an_absurd_num_gpu_blocks_is_not_used(standin: PrometheusStandIn, blocks: str) -> None:
    standin.answers = {
        **_healthy(),
        Q["cache_info"]: vector((_labels(instance="a", num_gpu_blocks=blocks), "1")),
    }
    _, snaps = _read(standin)
    snap = snaps[(NS, SVC)]
    assert snap.kv_blocks_total is None
    assert any("num_gpu_blocks" in p for p in snap.problems)


def test_one_services_bad_data_leaves_anothers_alone(standin: PrometheusStandIn) -> None:
    good, bad = _healthy("good"), _healthy("bad")
    merged = {}
    for q in set(good) | set(bad):
        rows = good.get(q, vector())["data"]["result"] + bad.get(q, vector())["data"]["result"]
        merged[q] = {"status": "success", "data": {"resultType": "vector", "result": rows}}
    merged[Q["kv_max"]]["data"]["result"][1]["value"] = [1, "-1"]  # "bad"'s KV usage
    standin.answers = merged
    _, snaps = _read(standin)
    assert snaps[(NS, "good")].kv_usage_max == 0.5
    assert snaps[(NS, "bad")].kv_usage_max is None


def _counted(telemetry: Telemetry, kind: str) -> float:
    value = telemetry.registry.get_sample_value(
        "tokenscale_prometheus_query_errors_total", {"kind": kind}
    )
    return value or 0.0


def test_the_fleet_read_counts_answers_and_values_by_kind(standin: PrometheusStandIn) -> None:
    standin.answers = {
        **_healthy(),
        Q["waiting"]: BAD_SHAPES["result null"],
        Q["kv_max"]: vector((_labels(), "7")),
    }
    telemetry = Telemetry()
    source = PrometheusSource(PrometheusConfig(url=standin.url))
    fleet = FleetMetrics(source, None, 60.0, telemetry, interval_s=15.0)
    fleet.refresh()
    assert _counted(telemetry, "answer") == 1
    assert _counted(telemetry, "value") == 1


def test_a_source_that_raises_leaves_the_fleet_holding() -> None:
    class Broken(PrometheusSource):
        def snapshots(self, namespaces: list[str] | None, now_s: float) -> dict[Any, Snapshot]:
            raise KeyError("data")

    telemetry = Telemetry()
    fleet = FleetMetrics(
        Broken(PrometheusConfig(url="http://x")), None, 60.0, telemetry, interval_s=15.0
    )
    fleet.refresh()
    view = fleet.view((NS, SVC))
    assert view is not None
    assert view.snapshot is None
    assert view.source_error is not None
    assert "KeyError" in view.source_error
    assert _counted(telemetry, "other") == 1


def test_metrics_are_found_by_the_label_the_pods_carry(standin: PrometheusStandIn) -> None:
    """A name of 64+ characters is not a label value: its pods carry the derived one."""
    name = "chat-assistant-for-the-customer-support-team-llama-8b-instruct-v2"
    assert label_value(name) != name
    standin.answers = _healthy(label_value(name))
    standin.answers[running_per_pod(CFG, None)] = vector(
        (_labels(label_value(name), pod="p-1"), "3")
    )
    fleet = FleetMetrics(
        PrometheusSource(PrometheusConfig(url=standin.url)), None, 60.0, Telemetry(), 15.0
    )
    fleet.refresh()
    view = fleet.view((NS, name))
    assert view is not None
    assert view.snapshot is not None
    assert view.snapshot.replicas_reporting == 2
    assert view.running_by_pod == {"p-1": 3.0}


def test_a_missing_service_is_named_by_the_label_looked_for(standin: PrometheusStandIn) -> None:
    fleet = FleetMetrics(
        PrometheusSource(PrometheusConfig(url=standin.url)), None, 60.0, Telemetry(), 15.0
    )
    fleet.refresh()
    name = "summarise-the-quarterly-reports-for-the-finance-team-with-llama-8b"
    view = fleet.view((NS, name))
    assert view is not None
    assert view.source_error is not None
    assert f'inferenceservice="{label_value(name)}"' in view.source_error
    assert label_value(name) != name


JSON = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)


@given(JSON)
@settings(max_examples=300, deadline=None)
def test_no_answer_body_raises(body: object) -> None:
    """Any JSON a server may send is judged: a list of samples or a named problem."""
    judged_body = judge_vector("q", body)
    assert isinstance(judged_body, list | QueryError)


@given(st.sampled_from([*sorted(RANGES), "ttft_p99_s", "queue_mean_s"]), JSON)
@settings(max_examples=300, deadline=None)
def test_a_value_is_finite_and_in_range_or_a_problem(field: str, raw: object) -> None:
    value, problem = judged(field, [1e9, raw])
    low, high = value_range(field)
    if value is None:
        assert problem
    else:
        assert problem is None
        assert math.isfinite(value)
        assert low <= value <= high


def test_every_field_read_has_a_plausible_range() -> None:
    """A field without a range would raise out of the fleet read (the speculative acceptance
    rate did: every service lost its metrics once a speculating engine reported)."""
    from tokenscale.metrics.bounds import value_range  # noqa: PLC0415
    from tokenscale.metrics.prometheus import FIELDS  # noqa: PLC0415

    for target in FIELDS.values():
        low, high = value_range(target)
        assert low <= high
