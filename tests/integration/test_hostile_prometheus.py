"""The operator on a real API server reading a Prometheus stand-in (a fake, tests/support/
prometheus_standin.py) that answers odd but possible things: malformed answers and absurd
values are named problems; the other services keep being reconciled on live metrics."""

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.helpers import manifest
from tests.integration.conftest import Objects
from tests.support.prometheus_standin import PrometheusStandIn
from tokenscale.metrics.promql import QueryConfig, queries, running_per_pod
from tokenscale.playground.cluster import Cluster
from tokenscale.playground.processes import free_port, wait_for
from tokenscale.render.names import label_value

pytestmark = pytest.mark.integration
LONG = "chat-assistant-for-the-customer-support-team-llama-8b-instruct-v2"
MALFORMED = {
    "ttft_p50": {"status": "error", "errorType": "execution", "error": "query timed out"},
    "queue_p99": {"status": "success", "data": {"resultType": "vector", "result": None}},
    "e2e_p99": {"status": "success", "data": {"resultType": "scalar", "result": [1, "2"]}},
    "itl_p99": {
        "status": "success",
        "data": {"resultType": "vector", "result": [{"metric": None, "value": [1, "1"]}]},
    },
}
HEALTHY = {"replicas": "1", "waiting": "0", "running": "2", "kv_max": "0.5", "ttft_p99": "0.3"}
ABSURD = {
    "replicas": "1e30",
    "waiting": "-3",
    "running": "2",
    "kv_max": "-1",
    "ttft_p99": "-3",
    "request_rate": "1e308",
}


def _answers(namespace: str) -> dict[str, Any]:
    q = queries(QueryConfig(), [namespace])
    rows: dict[str, list[tuple[dict[str, str], str]]] = {}
    for service, values in (("good", HEALTHY), (label_value(LONG), HEALTHY), ("bad", ABSURD)):
        labels = {"namespace": namespace, "inferenceservice": service}
        for name, value in values.items():
            rows.setdefault(q[name], []).append((labels, value))
        rows.setdefault(q["cache_info"], []).append(
            (
                {**labels, "instance": "a", "num_gpu_blocks": "Inf" if service == "bad" else "900"},
                "1",
            )
        )

    def vector(samples: list[tuple[dict[str, str], str]]) -> Callable[[], dict[str, Any]]:
        return lambda: {
            "status": "success",
            "data": {
                "resultType": "vector",
                "result": [{"metric": m, "value": [time.time(), v]} for m, v in samples],
            },
        }

    answers: dict[str, Any] = {query: vector(samples) for query, samples in rows.items()}
    fresh = [({"namespace": namespace, "inferenceservice": s}, "") for s in ("good", "bad")]
    fresh.append(({"namespace": namespace, "inferenceservice": label_value(LONG)}, ""))
    answers[q["newest_sample"]] = lambda: {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [{"metric": m, "value": [time.time(), str(time.time())]} for m, _ in fresh],
        },
    }
    for name, body in MALFORMED.items():
        answers[q[name]] = body
    answers[running_per_pod(QueryConfig(), [namespace])] = MALFORMED["e2e_p99"]
    return answers


@pytest.fixture
def standin() -> Iterator[PrometheusStandIn]:
    server = PrometheusStandIn().start()
    yield server
    server.stop()


def _condition(objects: Objects, name: str, ctype: str) -> dict[str, Any]:
    return objects.condition(name, ctype) or {}


def _counter(port: int, kind: str) -> float:
    text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    prefix = f'tokenscale_prometheus_query_errors_total{{kind="{kind}"}} '
    line = next((x for x in text.splitlines() if x.startswith(prefix)), None)
    return 0.0 if line is None else float(line.split()[-1])


def test_bad_answers_are_problems_and_the_other_services_go_on(
    cluster: Cluster,
    objects: Objects,
    namespace: str,
    standin: PrometheusStandIn,
    tmp_path: Path,
) -> None:
    standin.answers = _answers(namespace)
    port = free_port()
    op = cluster.operator(
        "operator-standin",
        namespace,
        2,
        tmp_path,
        "--prometheus-url",
        standin.url,
        "--metrics-port",
        str(port),
    )
    try:
        for name in ("good", "bad", LONG):
            body = manifest(scaling={"minReplicas": 1, "maxReplicas": 6})
            body["metadata"]["name"] = name
            objects.create(body)

        def metrics(name: str, status: str) -> Callable[[], bool]:
            def check() -> bool:
                if not op.alive():
                    raise RuntimeError(f"operator exited:\n{op.tail()}")
                return _condition(objects, name, "MetricsAvailable").get("status") == status

            return check

        wait_for(metrics("good", "True"), 90, "good: MetricsAvailable=True")
        wait_for(metrics(LONG, "True"), 60, "the long-named service: MetricsAvailable=True")
        wait_for(metrics("bad", "False"), 60, "bad: MetricsAvailable=False")
        good = objects.get("good")["status"]
        assert good["live"]["kvUsage"] == 0.5
        bad = objects.get("bad")["status"]
        assert "kvUsage" not in bad.get("live", {})  # -1 is not shown as a reading
        assert "-3000ms" not in str(bad.get("ttftP99"))
        assert objects.deployment("bad").spec.replicas <= 6
        wait_for(lambda: _counter(port, "answer") > 0, 30, "answer errors counted")
        own = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        # the operator's own series carry the label the vLLM series do: they join
        assert f'inferenceservice="{label_value(LONG)}"' in own
        assert f'inferenceservice="{LONG}"' not in own
        assert _counter(port, "value") > 0

        def reconciled() -> float:  # every reconcile counts once, by what it did with status
            text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            lines = text.splitlines()
            return sum(float(x.split()[-1]) for x in lines if x.startswith("tokenscale_status_w"))

        before = reconciled()
        time.sleep(6)  # more cycles: the services keep being reconciled, nothing froze (their
        # statuses are written when something a reader acts on moves: controller/status_news)
        assert reconciled() >= before + 3 * 2
        assert op.alive()
        assert "Traceback" not in op.tail()
    finally:
        op.stop()
