"""Lead time from the cluster: pods created and marked Ready at known times → status."""

from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.helpers import manifest
from tests.integration.conftest import Objects
from tests.support.vllm_emulator import Load, VllmMetricsEmulator
from tokenscale.playground.cluster import Cluster
from tokenscale.playground.processes import wait_for
from tokenscale.playground.prometheus import PrometheusServer
from tokenscale.render.labels import selector_labels

pytestmark = pytest.mark.integration


def _pod(core: client.CoreV1Api, namespace: str, name: str, ready_after_s: float) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": selector_labels("test")},
        "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai"}]},
    }
    created = core.create_namespaced_pod(namespace, body).metadata.creation_timestamp
    ready_at = created + timedelta(seconds=ready_after_s)
    stamp = ready_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    status: dict[str, Any] = {
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": stamp}],
        }
    }
    core.patch_namespaced_pod_status(name, namespace, status)


def test_the_measured_lead_time_is_in_status_and_the_forecast(
    cluster: Cluster,
    api: client.ApiClient,
    objects: Objects,
    namespace: str,
    prometheus: PrometheusServer,
    tmp_path: Path,
) -> None:
    core = client.CoreV1Api(api)
    for i, seconds in enumerate((40, 42, 44)):  # the median is 42 s
        _pod(core, namespace, f"test-pod-{i}", seconds)
    pod = VllmMetricsEmulator().start()
    prometheus.add_target(pod.target, namespace, "test")
    pod.set_state(running=4, waiting=0, kv_usage=0.3)
    pod.set_load(Load(rps=2, ttft_s=0.2, tpot_s=0.02))
    op = cluster.operator(
        "operator-lead-time",
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
    try:
        objects.create(manifest(workload={"rps": {"mean": 0.5}}))

        def lead() -> Any:
            return (objects.get("test")["status"].get("scaling") or {}).get("leadTimeSeconds")

        wait_for(lambda: lead() is not None, 60, "leadTimeSeconds in status")
        assert lead() == pytest.approx(42.0, abs=1.0), op.tail()
        wait_for(
            lambda: (objects.get("test")["status"].get("decision") or {}).get("forecast"),
            60,
            "the forecast in the decision",
        )
        forecast = objects.get("test")["status"]["decision"]["forecast"]
        assert forecast["leadTimeMeasured"] is True
        assert forecast["leadTimeSeconds"] == pytest.approx(42.0, abs=1.0)
        assert forecast["horizonSeconds"] > forecast["leadTimeSeconds"]
        assert forecast["burstHeadroom"] >= 1.0
    finally:
        prometheus.remove_target(pod.target)
        pod.stop()
        op.stop()
