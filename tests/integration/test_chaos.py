"""Chaos on the real control plane. Each test ends in the converged state with no duplicate
objects, no scale-down on metric loss and at most one event per real change."""

import os
import random
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client

from tests.helpers import manifest
from tests.integration.conftest import Objects
from tests.support.vllm_emulator import VllmMetricsEmulator
from tokenscale.kube.client import Kube
from tokenscale.playground.cluster import Cluster
from tokenscale.playground.processes import Process, wait_for
from tokenscale.playground.prometheus import PrometheusServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # minutes: `pytest -m slow`


def _replicas(objects: Objects) -> int | None:
    dep = objects.deployment("test")
    return None if dep is None else dep.spec.replicas


def _reasons(objects: Objects) -> Counter[str]:
    return Counter(e.reason for e in objects.events("test"))


def _created_once(objects: Objects) -> None:
    """The Created events name the Deployment, the Service and the PDB once each (one event
    per reconcile that created something: one for all three, or more after a kill)."""
    said = " ".join(e.message for e in objects.events("test") if e.reason == "Created")
    for kind in ("Deployment test", "Service test", "PodDisruptionBudget test"):
        assert said.count(kind) == 1, said


def _assert_no_duplicates(objects: Objects) -> None:
    """One Deployment, one Service, one PDB, and one ReplicaSet per pod template."""
    deployments = objects.apps.list_namespaced_deployment(objects.ns).items
    services = objects.core.list_namespaced_service(objects.ns).items
    assert [d.metadata.name for d in deployments] == ["test"]
    assert [s.metadata.name for s in services] == ["test"]
    assert Kube(objects.apps.api_client).read_pdb(objects.ns, "test") is not None
    hashes = [
        rs.metadata.labels.get("pod-template-hash")
        for rs in objects.apps.list_namespaced_replica_set(objects.ns).items
    ]
    assert len(hashes) == len(set(hashes))


def _converged(objects: Objects, replicas: int) -> None:
    wait_for(lambda: _replicas(objects) == replicas, 60, f"Deployment at {replicas}")
    wait_for(
        lambda: (objects.get("test").get("status") or {}).get("decidedReplicas") == replicas,
        60,
        "status caught up",
    )
    _assert_no_duplicates(objects)


def test_operator_killed_during_scales_converges_without_duplicates(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    rng = random.Random(7)
    op = start_operator(namespace, name="victim")
    objects.create(manifest(scaling={"replicas": 2}))
    _converged(objects, 2)
    targets = [5, 3, 6, 2, 4]
    for round_, target in enumerate(targets):
        objects.patch_spec("test", {"scaling": {"replicas": target}})
        time.sleep(rng.uniform(0.0, 0.6))  # mid-reconcile, or before, or just after
        op.kill()
        op = start_operator(namespace, name=f"restarted-{round_}")
    _converged(objects, targets[-1])
    time.sleep(5)  # several resync periods of the last operator: nothing more happens
    reasons = _reasons(objects)
    _created_once(objects)
    assert reasons["Scaled"] <= len(targets)  # at most one per real change (a killed one: 0)
    assert reasons["DriftCorrected"] == 0
    assert reasons["ApplyFailed"] == 0
    assert op.alive(), op.tail()
    print(f"kill -9 during scale: {len(targets)} kills, {reasons['Scaled']} Scaled events")


def test_another_writer_patching_every_second_is_undone_and_survived(
    api: client.ApiClient,
    objects: Objects,
    namespace: str,
    start_operator: Callable[..., Process],
) -> None:
    op = start_operator(namespace)
    objects.create(manifest(scaling={"replicas": 2}))
    _converged(objects, 2)
    stop = threading.Event()
    writes: list[int] = []
    conflicts: list[int] = []

    def other_writer() -> None:
        apps = client.AppsV1Api(api)
        while not stop.is_set():
            try:  # a read-modify-write with the version read: 409 when the operator got there
                dep = apps.read_namespaced_deployment("test", namespace)
                dep.spec.replicas = 7
                apps.replace_namespaced_deployment("test", namespace, dep)
                writes.append(1)
            except client.exceptions.ApiException as exc:
                if exc.status != 409:
                    raise
                conflicts.append(1)
            # and the status, behind the operator's back (its next write must replace it)
            custom = client.CustomObjectsApi(api)
            body = custom.get_namespaced_custom_object(
                "tokenscale.io", "v1alpha1", namespace, "inferenceservices", "test"
            )
            body["status"]["replicas"] = 7
            try:
                custom.replace_namespaced_custom_object_status(
                    "tokenscale.io", "v1alpha1", namespace, "inferenceservices", "test", body
                )
            except client.exceptions.ApiException as exc:
                if exc.status != 409:
                    raise
                conflicts.append(1)
            stop.wait(1.0)

    writer = threading.Thread(target=other_writer, daemon=True)
    writer.start()
    time.sleep(15)
    stop.set()
    writer.join(10)
    reasons = _reasons(objects)
    # a second writer is not fought every second: its change is undone, and once it is seen
    # again tokenscale stands down (ReplicasContested) — unless the writer's status edits hid
    # tokenscale's own last count, when each change is still undone once, never more
    contested = (objects.condition("test", "ReplicasContested") or {}).get("status") == "True"
    assert contested or reasons["DriftCorrected"] <= len(writes), reasons
    assert reasons["Scaled"] == 0
    assert reasons["ApplyFailed"] == 0
    # a spec change ends the stand-down: tokenscale writes the replicas again
    objects.patch_spec("test", {"scaling": {"replicas": 3}})
    _converged(objects, 3)
    wait_for(lambda: objects.get("test")["status"]["replicas"] == 3, 30, "status restored")
    assert op.alive(), op.tail()
    retried = op.log_path.read_text().count("409 conflict, retrying")
    print(
        f"another writer: {len(writes)} Deployment writes ({len(conflicts)} refused with 409), "
        f"{retried} operator writes retried after 409, "
        f"{reasons['DriftCorrected']} DriftCorrected events, ReplicasContested={contested}"
    )


@pytest.mark.slow
def test_prometheus_flapping_never_scales_down_blind(
    cluster: Cluster, objects: Objects, namespace: str, tmp_path: Path
) -> None:
    prom = PrometheusServer(tmp_path / "prom").start()
    pod = VllmMetricsEmulator().start()
    prom.add_target(pod.target, namespace, "test")
    pod.set_state(running=40, waiting=0, kv_usage=0.97)
    op = cluster.operator(
        "operator-flapping",
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
    try:
        objects.create(
            manifest(
                workload={"rps": {"mean": 0.5}},
                scaling={
                    "minReplicas": 1,
                    "maxReplicas": 6,
                    "policy": {"scaleDownStabilizationSeconds": 600},
                },
            )
        )
        wait_for(lambda: (_replicas(objects) or 0) >= 2, 90, "scaled up under pressure")
        held = _replicas(objects)
        pod.set_state(running=0, waiting=0, kv_usage=0.0)  # the load goes, unseen half the time
        scaled_before = _reasons(objects)["Scaled"]
        seen: list[int | None] = []
        metrics_false = 0
        for _ in range(3):  # down 10 s, up 10 s
            prom.stop()
            for _ in range(10):
                seen.append(_replicas(objects))
                cond = objects.condition("test", "MetricsAvailable") or {}
                metrics_false += cond.get("status") == "False"
                time.sleep(1)
            prom.start()
            for _ in range(10):
                seen.append(_replicas(objects))
                time.sleep(1)
        assert set(seen) == {held}, seen  # never scaled down, blind or not (window 600 s)
        assert metrics_false > 0  # the outage was seen and said
        assert _reasons(objects)["Scaled"] == scaled_before
        assert op.alive(), op.tail()
        _assert_no_duplicates(objects)
        print(f"Prometheus flapping: 3 outages, replicas held at {held} over {len(seen)} s")
    finally:
        op.stop()
        pod.stop()
        prom.stop()


@pytest.mark.slow
def test_apiserver_restarted_mid_reconcile(
    cluster: Cluster, objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    op = start_operator(namespace)
    objects.create(manifest(scaling={"replicas": 2}))
    _converged(objects, 2)
    objects.patch_spec("test", {"scaling": {"replicas": 4}})
    cluster.restart_apiserver(down_s=3)  # while the operator applies the change, or after
    objects.patch_spec("test", {"scaling": {"replicas": 3}})
    _converged(objects, 3)
    time.sleep(5)
    reasons = _reasons(objects)
    _created_once(objects)
    assert reasons["Scaled"] <= 2
    assert op.alive(), op.tail()
    print(f"API server restart: converged, {reasons['Scaled']} Scaled events for 2 changes")


def test_slow_etcd(
    cluster: Cluster, objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    """etcd frozen (SIGSTOP) for 3 s out of every 5 s while the spec changes: every API call
    in that time hangs; the operator waits, retries, and converges."""
    etcd = next(p for p in cluster.processes if p.name == "etcd")
    op = start_operator(namespace)
    objects.create(manifest(scaling={"replicas": 2}))
    _converged(objects, 2)
    changes = 0
    try:
        for target in (4, 3, 5):
            objects.patch_spec("test", {"scaling": {"replicas": target}})
            changes += 1
            os.kill(etcd.proc.pid, signal.SIGSTOP)
            time.sleep(3)
            os.kill(etcd.proc.pid, signal.SIGCONT)
            time.sleep(2)
    finally:
        os.kill(etcd.proc.pid, signal.SIGCONT)
    _converged(objects, 5)
    time.sleep(5)
    reasons = _reasons(objects)
    _created_once(objects)
    assert reasons["Scaled"] <= changes
    assert op.alive(), op.tail()
    print(f"slow etcd: 3 freezes of 3 s, converged, {reasons['Scaled']} Scaled for {changes}")
