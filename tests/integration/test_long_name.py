"""A service whose name is not a label value autoscales: its metrics are found by the derived
label its pods carry (real API server, real Prometheus scraping a vLLM metrics emulator that is
labelled as the chart's PodMonitor labels the pods' series)."""

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers import manifest
from tests.integration.conftest import Objects
from tests.support.vllm_emulator import Load, VllmMetricsEmulator
from tokenscale.playground.cluster import Cluster
from tokenscale.playground.processes import Process, wait_for
from tokenscale.playground.prometheus import PrometheusServer
from tokenscale.render.names import child_name, label_value

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # over 30 s: `pytest -m slow`
NAME = "chat-assistant-for-the-customer-support-team-llama-8b-instruct-v2"


@pytest.fixture
def metrics_operator(cluster: Cluster, tmp_path: Path) -> Iterator[Callable[[str, str], Process]]:
    started: list[Process] = []

    def start(namespace: str, prometheus_url: str) -> Process:
        windows = ("--metrics-gauge-window", "5s", "--metrics-rate-window", "10s")
        proc = cluster.operator(
            "operator-long-name",
            namespace,
            2,
            tmp_path,
            "--prometheus-url",
            prometheus_url,
            *windows,
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()


def test_a_64_character_name_autoscales_on_its_derived_label(
    metrics_operator: Callable[[str, str], Process],
    prometheus: PrometheusServer,
    objects: Objects,
    namespace: str,
    emulators: Callable[..., VllmMetricsEmulator],
) -> None:
    assert len(NAME) > 63
    pod = emulators(namespace, label_value(NAME))  # what the PodMonitor copies from the pod
    pod.set_state(running=4, waiting=0, kv_usage=0.3)
    pod.set_load(Load(rps=1, ttft_s=0.2, tpot_s=0.02))
    op = metrics_operator(namespace, prometheus.url)
    body = manifest(workload={"rps": {"mean": 0.5}}, scaling={"minReplicas": 1, "maxReplicas": 6})
    body["metadata"]["name"] = NAME
    objects.create(body)
    child = child_name(NAME)

    def replicas() -> int | None:
        dep = objects.deployment(child)
        return None if dep is None else dep.spec.replicas

    wait_for(lambda: replicas() == 1, 60, "Deployment at the plan's 1 replica")
    wait_for(
        lambda: (objects.condition(NAME, "MetricsAvailable") or {}).get("status") == "True",
        60,
        "MetricsAvailable=True",
    )
    pod.set_state(running=40, waiting=0, kv_usage=0.95)
    wait_for(lambda: replicas() == 2, 60, "scaled up to 2")
    assert op.alive()
