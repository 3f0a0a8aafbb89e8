"""End to end: real API server + operator + real Prometheus scraping vLLM metrics emulators."""

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import manifest
from tests.integration.conftest import Objects
from tests.support.vllm_emulator import Load, VllmMetricsEmulator
from tokenscale.playground.cluster import Cluster
from tokenscale.playground.processes import Process, free_port, wait_for
from tokenscale.playground.prometheus import PrometheusServer

pytestmark = pytest.mark.integration
WINDOW_S = 12  # the scale-down stabilisation window under test


def _spec() -> dict[str, Any]:
    return manifest(
        workload={"rps": {"mean": 0.5}},
        scaling={
            "minReplicas": 1,
            "maxReplicas": 6,
            "policy": {"scaleDownStabilizationSeconds": WINDOW_S},
        },
    )


@pytest.fixture
def start_metrics_operator(cluster: Cluster, tmp_path: Path) -> Iterator[Callable[..., Process]]:
    started: list[Process] = []

    def start(namespace: str, prometheus_url: str, *extra: str) -> Process:
        proc = cluster.operator(
            f"operator-metrics-{len(started)}",
            namespace,
            2,
            tmp_path,
            "--prometheus-url",
            prometheus_url,
            "--metrics-gauge-window",
            "5s",
            "--metrics-rate-window",
            "10s",
            *extra,
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()


def _replicas(objects: Objects) -> int | None:
    dep = objects.deployment("test")
    return None if dep is None else dep.spec.replicas


def test_kv_pressure_scales_up_and_relief_scales_down_after_the_window(
    start_metrics_operator: Callable[..., Process],
    prometheus: PrometheusServer,
    objects: Objects,
    namespace: str,
    emulators: Callable[..., VllmMetricsEmulator],
    tmp_path: Path,
) -> None:
    pod = emulators(namespace, "test")
    pod.set_state(running=4, waiting=0, kv_usage=0.3)
    pod.set_load(Load(rps=1, ttft_s=0.2, tpot_s=0.02))
    op = start_metrics_operator(namespace, prometheus.url)
    objects.create(_spec())
    wait_for(lambda: _replicas(objects) == 1, 60, "Deployment at the plan's 1 replica")
    wait_for(
        lambda: (objects.condition("test", "MetricsAvailable") or {}).get("status") == "True",
        60,
        "MetricsAvailable=True",
    )

    pod.set_state(running=40, waiting=0, kv_usage=0.95)  # KV pressure on the one replica
    wait_for(lambda: _replicas(objects) == 2, 60, "scaled up to 2")
    scaled = [e for e in objects.events("test") if e.reason == "Scaled"]
    assert scaled, op.tail()
    assert scaled[-1].message.startswith("Scaled 1→2: kv_usage 0.95")
    # the event and the replicas are written before the status in the same reconcile
    wait_for(
        lambda: (objects.get("test")["status"].get("live") or {}).get("kvUsage") == 0.95,
        30,
        "status.live updated",
    )
    status = objects.get("test")["status"]
    assert status["live"]["kvUsage"] == 0.95
    assert status["ttftP99"].endswith(" live")  # the TTFT column: live when metrics exist
    assert status["decision"]["source"] == "metrics"
    assert any(d.startswith("KV cache near full") for d in status["diagnosis"])
    template_hash = objects.deployment("test").spec.template.metadata.annotations[
        "tokenscale.io/config-hash"
    ]

    pod.set_state(running=2, waiting=0, kv_usage=0.1)  # relief: every signal low
    relieved = time.monotonic()
    wait_for(
        lambda: (
            (objects.get("test")["status"].get("scaling") or {}).get("lowSinceSeconds") is not None
        ),
        30,
        "low streak started",
    )
    time.sleep(WINDOW_S / 2)
    assert _replicas(objects) == 2  # not before the window
    wait_for(lambda: _replicas(objects) == 1, 60, "scaled back down to 1")
    assert time.monotonic() - relieved >= WINDOW_S
    assert (
        objects.deployment("test").spec.template.metadata.annotations["tokenscale.io/config-hash"]
        == template_hash
    )  # replicas only: no pod restart


def test_prometheus_down_holds_replicas_and_says_why(
    start_metrics_operator: Callable[..., Process],
    objects: Objects,
    namespace: str,
    tmp_path: Path,
    emulators: Callable[..., VllmMetricsEmulator],
) -> None:
    own = PrometheusServer(tmp_path / "prom").start()
    try:
        pod = VllmMetricsEmulator().start()
        own.add_target(pod.target, namespace, "test")
        pod.set_state(running=40, waiting=0, kv_usage=0.97)
        op = start_metrics_operator(namespace, own.url)
        objects.create(_spec())
        wait_for(lambda: (_replicas(objects) or 0) >= 2, 60, "scaled up under pressure")
        own.stop()  # Prometheus goes away while the load (unseen) continues
        pod.set_state(running=0, waiting=0, kv_usage=0.0)
        wait_for(
            lambda: (objects.condition("test", "MetricsAvailable") or {}).get("status") == "False",
            60,
            "MetricsAvailable=False",
        )
        # from the moment it is blind (a decision made just before the stop may still land)
        held = _replicas(objects)
        assert held is not None
        assert held >= 2
        cond = objects.condition("test", "MetricsAvailable")
        assert cond is not None
        assert "unreachable" in cond["message"]
        time.sleep(WINDOW_S + 4)
        assert _replicas(objects) == held  # nothing lost, nothing scaled down blind
        status = objects.get("test")["status"]
        assert status["decision"]["source"] == "hold"
        assert "live" not in status  # the status is replaced whole: no stale snapshot
        assert status["ttftP99"].endswith(" estimate")
        assert op.alive()
        pod.stop()
    finally:
        own.stop()


DOCUMENTED = {
    "tokenscale_replicas_desired": "gauge",
    "tokenscale_replicas": "gauge",
    "tokenscale_binding_constraint_info": "gauge",
    "tokenscale_scale_events": "counter",
    "tokenscale_decisions_held": "counter",
    "tokenscale_reconcile_duration_seconds": "histogram",
    "tokenscale_evaluation_duration_seconds": "histogram",
    "tokenscale_prometheus_query_errors": "counter",
    "tokenscale_latency_p99_seconds": "gauge",
    "tokenscale_kv_cache_usage_ratio": "gauge",
    "tokenscale_cost_per_million_output_tokens": "gauge",
}


def test_the_operators_own_metrics_are_scraped_with_their_types(
    start_metrics_operator: Callable[..., Process],
    prometheus: PrometheusServer,
    objects: Objects,
    namespace: str,
    emulators: Callable[..., VllmMetricsEmulator],
) -> None:
    pod = emulators(namespace, "test")
    pod.set_state(running=4, waiting=0, kv_usage=0.3)
    port = free_port()
    start_metrics_operator(namespace, prometheus.url, "--metrics-port", str(port))
    target = f"127.0.0.1:{port}"
    prometheus.add_target(target, None, None)
    try:
        objects.create(_spec())
        wait_for(lambda: _replicas(objects) == 1, 60, "the plan's replica")
        wait_for(
            lambda: (objects.condition("test", "MetricsAvailable") or {}).get("status") == "True",
            60,
            "metrics in use",
        )
        pod.set_state(running=40, waiting=0, kv_usage=0.97)
        wait_for(lambda: (_replicas(objects) or 0) >= 2, 60, "scaled up under pressure")
        selector = f'namespace="{namespace}", inferenceservice="test"'
        wait_for(
            lambda: prometheus.query(f"tokenscale_scale_events_total{{{selector}}}"),
            60,
            "scale events scraped",
        )
        metadata = prometheus.metadata()
        for family, kind in DOCUMENTED.items():
            names = [n for n in metadata if n in (family, f"{family}_total")]
            assert names, f"{family} was not scraped"
            assert metadata[names[0]][0]["type"] == kind, family
        total = prometheus.query(f'tokenscale_replicas_desired{{{selector}, constraint="total"}}')
        assert float(total[0]["value"][1]) == _replicas(objects)  # type: ignore[index]
        kv = prometheus.query(f"tokenscale_kv_cache_usage_ratio{{{selector}}}")
        assert float(kv[0]["value"][1]) == 0.97  # type: ignore[index]
        up = prometheus.query(f'tokenscale_scale_events_total{{{selector}, direction="up"}}')
        assert float(up[0]["value"][1]) >= 1  # type: ignore[index]
    finally:
        prometheus.remove_target(target)
