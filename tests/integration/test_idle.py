"""Idle is not blindness, against the real API server and real Prometheus.

An idle vLLM emulator (gauges exported, counters flat, histograms not moving): the operator
falls to ``minReplicas``. Before Prometheus scrapes it (no series at all) and after Prometheus
stops, the operator holds.
"""

import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import manifest
from tests.helpers import spec as make_spec
from tests.integration.conftest import Objects
from tests.support.vllm_emulator import VllmMetricsEmulator
from tokenscale.planning import plan_service
from tokenscale.playground.cluster import Cluster
from tokenscale.playground.processes import Process, wait_for
from tokenscale.playground.prometheus import PrometheusServer

pytestmark = pytest.mark.integration
WINDOW_S = 8
SCALING = {
    "minReplicas": 1,
    "maxReplicas": 8,
    "policy": {"scaleDownStabilizationSeconds": WINDOW_S},
}


def _replicas(objects: Objects) -> int | None:
    dep = objects.deployment("test")
    return None if dep is None else dep.spec.replicas


def _metrics(objects: Objects) -> str | None:
    return (objects.condition("test", "MetricsAvailable") or {}).get("status")


@pytest.mark.slow  # two metric windows of idleness and an outage, ≈60 s: `pytest -m slow`
def test_an_idle_service_falls_to_min_replicas_and_a_silent_one_holds(
    cluster: Cluster, objects: Objects, namespace: str, tmp_path: Path
) -> None:
    workload: dict[str, Any] = {"rps": {"mean": 60}}
    start = plan_service(make_spec(workload=workload, scaling=SCALING)).sized.total
    assert start >= 3
    prom = PrometheusServer(tmp_path / "prom").start()
    pod = VllmMetricsEmulator().start()  # idle from the start: nothing recorded, ever
    op: Process | None = None
    try:
        op = cluster.operator(
            "operator-idle",
            namespace,
            2,
            tmp_path,
            "--prometheus-url",
            prom.url,
            "--metrics-gauge-window",
            "5s",
            "--metrics-rate-window",
            "10s",
        )
        objects.create(manifest(workload=workload, scaling=SCALING))
        wait_for(lambda: _replicas(objects) == start, 60, f"the plan's {start} replicas")
        # 1. Prometheus up, but no series for this service: blind, hold
        wait_for(lambda: _metrics(objects) == "False", 60, "MetricsAvailable=False (no series)")
        time.sleep(WINDOW_S + 4)
        assert _replicas(objects) == start
        assert objects.get("test")["status"]["decision"]["source"] == "hold"

        # 2. scraped and idle: zero traffic is a fact → down to minReplicas
        prom.add_target(pod.target, namespace, "test")
        wait_for(lambda: _metrics(objects) == "True", 60, "MetricsAvailable=True")
        wait_for(lambda: _replicas(objects) == 1, 120, "fell to minReplicas at idle")
        decision = objects.get("test")["status"]["decision"]
        assert decision["source"] == "metrics"
        scaled = [e.message for e in objects.events("test") if e.reason == "Scaled"]
        assert scaled, _tail(op)

        # 3. Prometheus stops: blind again — hold, never below the forecast plan, never down
        prom.stop()
        wait_for(lambda: _metrics(objects) == "False", 60, "MetricsAvailable=False (down)")
        time.sleep(WINDOW_S + 4)
        assert _replicas(objects) == start
        assert objects.get("test")["status"]["decision"]["source"] == "hold"
        assert op.alive()
    finally:
        pod.stop()
        prom.stop()
        if op is not None:
            op.stop()


def _tail(op: Process | None) -> str:
    return "" if op is None else op.tail()
