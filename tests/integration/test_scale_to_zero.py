"""To zero and back, against the real API server and a real Prometheus.

An idle vLLM metrics emulator (gauges exported, counters flat) and an endpoint-picker metrics
emulator (tests/support/epp_emulator.py: the flow-control gauges for the service's
InferencePool), both scraped by Prometheus. The service has ``minReplicas: 0``:

1. idle engines but no endpoint-picker series yet (the activation source unread): never to
   zero, whatever the window;
2. the picker scraped, nothing queued: to zero after ``scaleToZero.idleSeconds``;
3. requests queued at the gateway: woken at once, from zero.
"""

import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import manifest
from tests.integration.conftest import Objects
from tests.support.epp_emulator import EndpointPickerEmulator
from tests.support.vllm_emulator import VllmMetricsEmulator
from tokenscale.playground.cluster import Cluster
from tokenscale.playground.processes import Process, wait_for
from tokenscale.playground.prometheus import PrometheusServer

pytestmark = pytest.mark.integration
IDLE_S = 10
SCALING: dict[str, Any] = {
    "minReplicas": 0,
    "maxReplicas": 8,
    "scaleToZero": {"idleSeconds": IDLE_S},
    "policy": {"scaleDownStabilizationSeconds": 4},
}
GATEWAY = {"inferencePool": {}}


def _replicas(objects: Objects) -> int | None:
    dep = objects.deployment("test")
    return None if dep is None else dep.spec.replicas


def _decision(objects: Objects) -> dict[str, Any]:
    return dict((objects.get("test").get("status") or {}).get("decision") or {})


def test_idle_goes_to_zero_only_on_facts_and_the_gateway_queue_wakes_it(
    cluster: Cluster, objects: Objects, namespace: str, tmp_path: Path
) -> None:
    prom = PrometheusServer(tmp_path / "prom").start()
    pod = VllmMetricsEmulator().start()  # idle: nothing recorded, ever
    epp = EndpointPickerEmulator(pool="test").start()
    op: Process | None = None
    try:
        op = cluster.operator(
            "operator-zero",
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
        objects.create(manifest(scaling=SCALING, gateway=GATEWAY))
        prom.add_target(pod.target, namespace, "test")
        wait_for(lambda: (_replicas(objects) or 0) >= 1, 60, "the first replicas")
        start = _replicas(objects)

        # 1. engines idle, the picker not scraped: the activation source is unread → no zero
        wait_for(
            lambda: (
                "gateway_queued" in str(objects.get("test")["status"].get("live") or {})
                or _decision(objects).get("cause") in ("Steady", "LowNotSustained", "ScaleDown")
            ),
            60,
            "decisions on the idle engines",
        )
        time.sleep(IDLE_S + 6)
        assert (_replicas(objects) or 0) >= 1, _decision(objects)
        scaling = objects.get("test")["status"].get("scaling") or {}
        assert "idleSinceSeconds" not in scaling, scaling
        assert _decision(objects).get("cause") != "ScaleToZero"

        # 2. the picker scraped, nothing queued: to zero after the idle window
        prom.add_labelled_target(epp.target, {"namespace": namespace})
        seen_idle = time.monotonic()
        wait_for(lambda: _replicas(objects) == 0, 90, f"zero after {IDLE_S} s idle (from {start})")
        assert time.monotonic() - seen_idle >= IDLE_S - 2
        assert _decision(objects)["cause"] in ("ScaleToZero", "AtZero")
        zeroed = [e.message for e in objects.events("test") if "→0" in e.message]
        assert zeroed, [e.message for e in objects.events("test")]
        prom.remove_target(pod.target)  # at zero no engine runs

        # 3. requests held at the gateway: woken at once
        time.sleep(4)
        assert _replicas(objects) == 0
        epp.set(queued=3, saturation=1.0)
        woke = time.monotonic()
        wait_for(lambda: (_replicas(objects) or 0) >= 1, 30, "woken by the gateway queue")
        assert time.monotonic() - woke < 15
        assert _decision(objects)["cause"] == "Wake"
        assert op.alive()
    finally:
        epp.stop()
        pod.stop()
        prom.stop()
        if op is not None:
            op.stop()
