"""Graceful scale-down on the real control plane: the pods with the least work go first.

The controller manager's ReplicaSet makes real pods (Pending: there is no kubelet); one vLLM
metrics emulator per pod, scraped by a real Prometheus with that pod's name as its ``pod``
label, says how many requests each is running. Lowering the replicas must first give every
pod its deletion cost (1.20's ReplicaSet controller does not read the annotation yet; from
1.22 it removes the lowest cost first).
"""

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import watch

from tests.helpers import manifest
from tests.integration.conftest import Objects
from tests.support.cluster import Cluster
from tests.support.processes import wait_for
from tests.support.prometheus import PrometheusServer
from tests.support.vllm_emulator import VllmMetricsEmulator
from tokenscale.controller.graceful import DELETION_COST

pytestmark = pytest.mark.integration


def _pods(objects: Objects) -> list[Any]:
    pods = objects.core.list_namespaced_pod(
        objects.ns, label_selector="app.kubernetes.io/instance=test"
    ).items
    return [p for p in pods if p.metadata.deletion_timestamp is None]


def test_scale_down_marks_the_idlest_pods_to_go_first(
    cluster: Cluster,
    prometheus: PrometheusServer,
    objects: Objects,
    namespace: str,
    tmp_path: Path,
) -> None:
    op = cluster.operator(
        "operator-graceful",
        namespace,
        2,
        tmp_path,
        "--prometheus-url",
        prometheus.url,
        "--metrics-gauge-window",
        "5s",
        "--metrics-rate-window",
        "10s",
    )
    emulators: list[VllmMetricsEmulator] = []
    try:
        objects.create(manifest(workload={"rps": {"mean": 0.5}}, scaling={"replicas": 3}))
        wait_for(lambda: len(_pods(objects)) == 3, 90, "three pods from the ReplicaSet")
        running = dict(zip(sorted(p.metadata.name for p in _pods(objects)), (9, 1, 5), strict=True))
        for pod, count in running.items():
            emulator = VllmMetricsEmulator().start()
            emulator.set_state(running=count, waiting=0, kv_usage=0.2)
            emulators.append(emulator)
            prometheus.add_target(emulator.target, namespace, "test", pod=pod)
        selector = f'namespace="{namespace}", inferenceservice="test"'
        wait_for(
            lambda: len(prometheus.query(f"vllm:num_requests_running{{{selector}}}")) == 3,
            60,
            "per-pod series in Prometheus",
        )
        wait_for(
            lambda: (
                (objects.get("test").get("status") or {}).get("live", {}).get("replicasReporting")
                == 3
            ),
            60,
            "the operator reading all three pods",
        )
        before = {p.metadata.name: (p.metadata.annotations or {}) for p in _pods(objects)}
        assert not any(DELETION_COST in a for a in before.values())  # no scale-down, no write

        seen: dict[str, str] = {}  # every pod's last cost, deleted pods included
        watcher = watch.Watch()

        def record() -> None:
            for event in watcher.stream(
                objects.core.list_namespaced_pod, namespace, timeout_seconds=60
            ):
                pod = event["object"]
                cost = (pod.metadata.annotations or {}).get(DELETION_COST)
                if cost is not None:
                    seen[pod.metadata.name] = cost
                if len(seen) == len(running):
                    return

        thread = threading.Thread(target=record, daemon=True)
        thread.start()
        time.sleep(1)  # the watch is open
        objects.patch_spec("test", {"scaling": {"replicas": 2}})
        wait_for(lambda: objects.deployment("test").spec.replicas == 2, 60, "scaled to 2")
        thread.join(60)
        assert seen == {pod: str(count) for pod, count in running.items()}, op.tail()
        costs = seen
        idlest = min(running, key=running.__getitem__)
        assert costs[idlest] == "1"
        assert op.alive()
    finally:
        for emulator in emulators:
            prometheus.remove_target(emulator.target)
            emulator.stop()
        op.stop()
