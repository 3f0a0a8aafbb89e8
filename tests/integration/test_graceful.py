"""Graceful scale-down on the real control plane: the pods with the least work go first.

The controller manager's ReplicaSet makes real pods (Pending: there is no kubelet); one vLLM
metrics emulator per pod, scraped by a real Prometheus with that pod's name as its ``pod``
label, says how many requests each is running. Lowering the replicas must first give every
pod its deletion cost (1.20's ReplicaSet controller does not read the annotation yet; from
1.22 it removes the lowest cost first).
"""

import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from kubernetes import watch

from tests.helpers import manifest
from tests.integration.conftest import Objects
from tests.support.vllm_emulator import VllmMetricsEmulator
from tokenscale.controller.graceful import DELETION_COST
from tokenscale.playground.cluster import Cluster
from tokenscale.playground.processes import Process, free_port, wait_for
from tokenscale.playground.prometheus import PrometheusServer
from tokenscale.render.deployment import DRAIN_SCRIPT

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


@dataclass
class _Replica:
    """A fake streaming engine in its own process (so it can really be killed)."""

    port: int
    process: Process

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def running(self) -> float:
        text = requests.get(f"{self.url}/metrics", timeout=2).text
        line = next(x for x in text.splitlines() if x.startswith("vllm:num_requests_running"))
        return float(line.rsplit(" ", 1)[1])


def _replica(tmp_path: Path, i: int) -> _Replica:
    port = free_port()
    args = [sys.executable, "-m", "tests.support.openai_server", "--port", str(port)]
    proc = Process(f"engine-{i}-{port}", [*args, "--itl-s", "0.03"], tmp_path)
    replica = _Replica(port, proc)
    wait_for(lambda: requests.get(f"{replica.url}/metrics", timeout=1).ok, 30, "engine")
    return replica


def _drain_then_kill(replica: _Replica, drain: bool) -> None:
    """What the kubelet does to a removed pod: the preStop hook, then the end of the process.
    The end is SIGKILL, the worst an engine can do on SIGTERM (abort every open stream). The
    endpoint is already gone from the Service when this starts."""
    if drain:
        script = DRAIN_SCRIPT.format(budget=30, delay=1, port=replica.port)
        subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    replica.process.kill()


def _scale_down_under_load(tmp_path: Path, drain: bool) -> tuple[int, int]:
    """Three replicas under a steady streaming load; two go away. (ok, failed) requests."""
    replicas = [_replica(tmp_path, i) for i in range(3)]
    endpoints = list(replicas)
    guard = threading.Lock()
    done = threading.Event()
    ok, failed = [0], [0]

    def client(seed: int) -> None:
        turn = seed
        while not done.is_set():
            with guard:
                target = endpoints[turn % len(endpoints)]
            turn += 1
            body = {"model": "m", "prompt": "hello there", "max_tokens": 40, "stream": True}
            try:
                with requests.post(
                    f"{target.url}/v1/completions", json=body, stream=True, timeout=30
                ) as resp:
                    text = b"".join(resp.iter_content(None))
                finished = resp.status_code == 200 and text.endswith(b"data: [DONE]\n\n")
            except requests.RequestException:
                finished = False
            with guard:
                if finished:
                    ok[0] += 1
                else:
                    failed[0] += 1

    workers = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(12)]
    try:
        for w in workers:
            w.start()
        time.sleep(3)  # the load settles over the three replicas
        leaving = replicas[:2]
        # every leaving replica busy at the moment it leaves (a stream ends and the next one
        # starts, so one read can catch a replica between two: ask until both are seen busy)
        wait_for(lambda: all(r.running() > 0 for r in leaving), 15, "both leaving replicas busy")
        with guard:  # the endpoints controller takes them out of the Service
            for r in leaving:
                endpoints.remove(r)
        hooks = [threading.Thread(target=_drain_then_kill, args=(r, drain)) for r in leaving]
        for h in hooks:
            h.start()
        for h in hooks:
            h.join(90)
        time.sleep(2)
    finally:
        done.set()
        for w in workers:
            w.join(40)
        for r in replicas:
            r.process.stop()
    return ok[0], failed[0]


def test_scale_down_under_load_cuts_no_request(tmp_path: Path) -> None:
    """Two of three replicas removed while 12 clients stream: with the rendered preStop drain
    no request fails; without it (SIGTERM right away) in-flight streams are cut."""
    ok, failed = _scale_down_under_load(tmp_path, drain=True)
    assert ok > 20
    assert failed == 0
    _, cut = _scale_down_under_load(tmp_path, drain=False)
    assert cut > 0  # the test can see a cut request
    print(f"scale-down 3→1 under load: drained {ok} ok / {failed} failed; undrained {cut} cut")
