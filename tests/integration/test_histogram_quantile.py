"""The operator's quantile (metrics/quantile.py) against a real Prometheus' ``histogram_quantile``
on the same buckets.

A plain HTTP target serves bucket series a test draws (odd ``le`` spellings, duplicate
bounds, counts that decrease, no ``+Inf`` bucket, no observations, negative bounds); the real
Prometheus scrapes it; then, at one evaluation time, Prometheus answers
``histogram_quantile(q, …)`` for every group and the raw buckets, and the operator's answer on
those raw buckets must equal Prometheus' (NaN where it answers NaN).
"""

import http.server
import math
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tokenscale.metrics.quantile import bucket_quantile, le_bound
from tokenscale.playground.processes import wait_for
from tokenscale.playground.prometheus import PrometheusServer

pytestmark = pytest.mark.integration
METRIC = "tokenscale_test_latency_bucket"
QS = (0.0, 0.25, 0.5, 0.9, 0.99, 1.0)
SPELLINGS = {
    -1.0: ["-1", "-1.0"],
    0.0: ["0", "0.0"],
    0.001: ["0.001", "1e-3"],
    0.25: ["0.25", "0x1p-2"],
    0.5: ["0.5"],
    1.0: ["1", "1.0", "1e0"],
    2.5: ["2.5"],
    10.0: ["10"],
    math.inf: ["+Inf", "Inf"],
}
"""Bounds and how an exporter may spell them (two spellings of one bound are two series that
Prometheus merges); ``junk`` is a ``le`` neither can read."""
LE = st.sampled_from([s for spellings in SPELLINGS.values() for s in spellings] + ["junk"])
COUNT = st.integers(min_value=0, max_value=200).map(lambda n: n / 4)
HISTOGRAM = st.dictionaries(LE, COUNT, min_size=1, max_size=9)
"""One group: ``le`` spelling → cumulative count (any order, decreases allowed)."""


class Exposition:
    """A scrape target serving the text a test sets (a plain HTTP server, not an emulator)."""

    def __init__(self) -> None:
        self.text = ""
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                data = outer.text.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="module")
def exposition(prometheus: PrometheusServer) -> Iterator[Exposition]:
    server = Exposition()
    prometheus.add_labelled_target(server.target, {"suite": "histogram-quantile"})
    yield server
    prometheus.remove_target(server.target)
    server.stop()


def _query(prometheus: PrometheusServer, promql: str, at: float) -> list[dict[str, Any]]:
    r = requests.get(
        f"{prometheus.url}/api/v1/query", params={"query": promql, "time": at}, timeout=10
    )
    r.raise_for_status()
    body = r.json()
    assert body["status"] == "success", body
    return list(body["data"]["result"])


@given(st.lists(HISTOGRAM, min_size=20, max_size=20))
@settings(
    max_examples=8,
    deadline=None,
    # no shrinking: each step is a scrape; a failure's message names the group as drawn
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_our_quantile_is_prometheus_histogram_quantile(
    prometheus: PrometheusServer, exposition: Exposition, groups: list[dict[str, float]]
) -> None:
    run = uuid.uuid4().hex[:8]
    lines = [
        f'{METRIC}{{run="{run}",h="{h}",le="{le}"}} {count!r}'
        for h, histogram in enumerate(groups)
        for le, count in histogram.items()
    ]
    exposition.text = "\n".join(lines) + "\n"
    selector = f'{METRIC}{{run="{run}"}}'
    wait_for(lambda: len(prometheus.query(selector)) == len(lines), 30, "the drawn buckets scraped")
    at = time.time()
    raw: dict[str, list[tuple[float, float]]] = {}
    for sample in _query(prometheus, selector, at):
        bound = le_bound(sample["metric"]["le"])
        if bound is not None:
            raw.setdefault(sample["metric"]["h"], []).append((bound, float(sample["value"][1])))
    for q in QS:
        theirs = {
            s["metric"]["h"]: float(s["value"][1])
            for s in _query(prometheus, f"histogram_quantile({q}, {selector})", at)
        }
        assert set(theirs) == set(raw), q  # a group with no readable le has no answer
        for h, buckets in raw.items():
            ours = bucket_quantile(q, buckets)
            if math.isnan(theirs[h]):
                assert math.isnan(ours), (q, groups[int(h)], ours)
            else:
                assert math.isclose(ours, theirs[h], rel_tol=1e-12, abs_tol=1e-12), (
                    q,
                    groups[int(h)],
                    ours,
                    theirs[h],
                )
