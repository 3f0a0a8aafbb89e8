"""The Prometheus MetricsSource against a real Prometheus scraping vLLM metrics emulators."""

import http.server
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from tests.support.vllm_emulator import Load, VllmMetricsEmulator
from tokenscale.metrics import PrometheusConfig, PrometheusSource
from tokenscale.metrics.promql import QueryConfig
from tokenscale.playground.processes import free_port, wait_for
from tokenscale.playground.prometheus import PrometheusServer
from tokenscale.scaling import Snapshot

pytestmark = pytest.mark.integration
# short windows so a test needs seconds, not the production 1m/2m, of scrapes (1 s interval)
WINDOWS = QueryConfig(gauge_window="10s", rate_window="15s")


def _source(url: str, **kwargs: object) -> PrometheusSource:
    return PrometheusSource(PrometheusConfig(url=url, query=WINDOWS, **kwargs))  # type: ignore[arg-type]


def _quantile_in_bucket(q: float, lower: float, upper: float) -> float:
    """histogram_quantile when every observation sits in one bucket: linear interpolation."""
    return lower + q * (upper - lower)


def _ns() -> str:
    return f"m-{uuid.uuid4().hex[:6]}"


def _wait_full_window(prometheus: PrometheusServer, ns: str, pods: int) -> None:
    """Every pod of ``ns`` scraped at least 15 times within the 15 s rate window: a condition
    on the extent of the data, not on the values under test."""
    full = f'count_over_time(vllm:num_requests_running{{namespace="{ns}"}}[15s]) >= 15'
    wait_for(lambda: len(prometheus.query(full)) == pods, 60, f"a full window for {ns}")


def _snapshot(
    source: PrometheusSource,
    ns: str,
    svc: str,
    ready: Callable[[Snapshot], bool],
    timeout: float = 40,
) -> Snapshot:
    found: list[Snapshot] = []

    def check() -> bool:
        snap = source.snapshots([ns], time.time()).get((ns, svc))
        if snap is not None and ready(snap):
            found.append(snap)
            return True
        return False

    wait_for(check, timeout, f"snapshot of {ns}/{svc}", interval_s=1.0)
    return found[-1]


def test_snapshot_fields_equal_the_emulators_state(
    prometheus: PrometheusServer, emulators: Callable[..., VllmMetricsEmulator]
) -> None:
    ns = _ns()
    a = emulators(ns, "svc", num_gpu_blocks=10_000)
    b = emulators(ns, "svc", num_gpu_blocks=10_000)
    a.set_state(running=6, waiting=3, kv_usage=0.8)
    b.set_state(running=4, waiting=1, kv_usage=0.4)
    for e in (a, b):
        e.set_load(
            Load(
                rps=5,
                prompt_tokens=1000,
                generation_tokens=200,
                ttft_s=0.3,
                tpot_s=0.02,
                queue_s=0.1,
            )
        )
    _wait_full_window(prometheus, ns, 2)
    source = _source(prometheus.url)
    snap = _snapshot(
        source,
        ns,
        "svc",
        lambda s: (
            s.replicas_reporting == 2
            and s.ttft_p99_s is not None
            and s.request_rate_rps is not None
        ),
    )
    assert snap.waiting == 3 + 1
    assert snap.waiting_max_per_replica == 3
    assert snap.running == 6 + 4
    assert snap.kv_usage_max == 0.8
    assert snap.kv_usage_mean == pytest.approx((0.8 + 0.4) / 2)
    assert snap.kv_blocks_total == 20_000
    assert snap.kv_blocks_free == pytest.approx(10_000 * 0.2 + 10_000 * 0.6)
    # every TTFT is 0.3 s: bucket (0.25, 0.5]; TPOT 0.02 s: bucket (0.01, 0.025]
    assert snap.ttft_p99_s == pytest.approx(_quantile_in_bucket(0.99, 0.25, 0.5))
    assert snap.ttft_p50_s == pytest.approx(_quantile_in_bucket(0.5, 0.25, 0.5))
    assert snap.tpot_p99_s == pytest.approx(_quantile_in_bucket(0.99, 0.01, 0.025))
    assert snap.tpot_p50_s == pytest.approx(_quantile_in_bucket(0.5, 0.01, 0.025))
    assert snap.tpot_mean_s == pytest.approx(0.02)  # the sum over the count: no bucket error
    assert snap.queue_p99_s == pytest.approx(_quantile_in_bucket(0.99, 0.0, 0.3))
    # exact means (sum over count): what prefill calibration compares with the model
    assert snap.ttft_mean_s == pytest.approx(0.3)
    assert snap.queue_mean_s == pytest.approx(0.1)
    # e2e = 0.1 + 0.3 + 199 × 0.02 = 4.38 s: bucket (2.5, 5]
    assert snap.e2e_p99_s == pytest.approx(_quantile_in_bucket(0.99, 2.5, 5.0))
    assert snap.request_rate_rps == pytest.approx(10, rel=0.25)  # rate() extrapolates
    # requests reaching their first token (the TTFT _count) and finished output lengths
    assert snap.started_rps == pytest.approx(10, rel=0.25)
    assert snap.started_rps_recent == pytest.approx(10, rel=0.25)  # the same over 1m
    assert snap.arrival_rps == snap.started_rps
    assert snap.output_tokens_mean == pytest.approx(200)
    assert snap.mean_input_tokens == pytest.approx(1000, rel=0.02)
    assert snap.mean_output_tokens == pytest.approx(200, rel=0.02)
    assert snap.prefix_cache_hit_rate == 0.0
    assert snap.preemptions_per_s == 0.0
    assert snap.newest_sample_age_s is not None
    assert snap.newest_sample_age_s < 10


def test_a_service_without_series_is_absent_and_nan_is_a_named_problem(
    prometheus: PrometheusServer, emulators: Callable[..., VllmMetricsEmulator]
) -> None:
    ns = _ns()
    idle = emulators(ns, "idle")
    idle.set_state(running=0, waiting=0, kv_usage=0.0)
    _wait_full_window(prometheus, ns, 1)
    source = _source(prometheus.url)
    snap = _snapshot(source, ns, "idle", lambda s: s.replicas_reporting == 1)
    assert snap.core_signals_present
    assert snap.ttft_p99_s is None  # no requests yet: 0/0 in the window
    assert any(p.startswith("ttft_p99_s: NaN") for p in snap.problems), snap.problems
    assert (ns, "nobody") not in source.snapshots([ns], time.time())


def test_legacy_metric_names_are_read(
    prometheus: PrometheusServer, emulators: Callable[..., VllmMetricsEmulator]
) -> None:
    ns = _ns()
    old = emulators(ns, "old", legacy_names=True)
    old.set_state(running=2, waiting=0, kv_usage=0.55)
    old.set_load(Load(rps=4, tpot_s=0.06))
    source = _source(prometheus.url)
    snap = _snapshot(source, ns, "old", lambda s: s.tpot_p99_s is not None)
    assert snap.kv_usage_max == 0.55  # from vllm:gpu_cache_usage_perc
    assert snap.tpot_p99_s == pytest.approx(_quantile_in_bucket(0.99, 0.05, 0.075))


def test_unreachable_server_gives_no_snapshot_and_a_reason() -> None:
    source = PrometheusSource(PrometheusConfig(url=f"http://127.0.0.1:{free_port()}", timeout_s=2))
    assert source.snapshots(None, time.time()) == {}
    assert source.last_error is not None
    assert "unreachable" in source.last_error


def test_http_error_is_reported(prometheus: PrometheusServer) -> None:
    source = PrometheusSource(PrometheusConfig(url=f"{prometheus.url}/no/such/prefix"))
    assert source.snapshots(None, time.time()) == {}
    assert source.last_error is not None
    assert "Prometheus answered" in source.last_error


@pytest.fixture
def silent_server() -> Iterator[int]:
    """Accepts connections and never answers (to provoke client timeouts)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    yield sock.getsockname()[1]
    sock.close()


def test_timeout_is_reported(silent_server: int) -> None:
    source = PrometheusSource(
        PrometheusConfig(url=f"http://127.0.0.1:{silent_server}", timeout_s=1)
    )
    started = time.monotonic()
    assert source.snapshots(None, time.time()) == {}
    assert time.monotonic() - started < 10  # bounded: queries run concurrently
    assert source.last_error is not None
    assert "timed out" in source.last_error


def test_bearer_token_file_is_sent(tmp_path: object) -> None:
    """A recording HTTP endpoint (not Prometheus) checks the Authorization header."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization", ""))
            body = b'{"status":"success","data":{"resultType":"vector","result":[]}}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    token = tmp_path / "token"  # type: ignore[operator]
    token.write_text("s3cret\n")
    try:
        source = PrometheusSource(
            PrometheusConfig(
                url=f"http://127.0.0.1:{server.server_address[1]}", bearer_token_file=str(token)
            )
        )
        assert source.snapshots(["x"], time.time()) == {}
        assert source.last_error is None
    finally:
        server.shutdown()
        server.server_close()
    assert seen
    assert set(seen) == {"Bearer s3cret"}
