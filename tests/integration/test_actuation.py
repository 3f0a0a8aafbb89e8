"""Actuation modes on a real API server (1.20, with KEDA's ScaledObject CRD, 1.20-compatible
copy), a real operator process and a real Prometheus scraping it.

No KEDA operator runs here (it is a Go program built from modules we cannot fetch): the tests
check that the ScaledObject is accepted, run its trigger's query against the real Prometheus
(what KEDA's prometheus scaler does) and write the replicas through the Deployment's ``/scale``
as KEDA's HPA would, and say so where they do.
"""

import math
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from tests.helpers import manifest
from tests.integration.conftest import Objects
from tokenscale.kube.client import Kube
from tokenscale.playground.processes import Process, free_port, wait_for
from tokenscale.playground.prometheus import PrometheusServer
from tokenscale.render.keda import GROUP, PLURAL, VERSION

pytestmark = pytest.mark.integration
INTERVAL_S = 2


def _reasons(objects: Objects, name: str) -> list[str]:
    return [e.reason for e in objects.events(name)]


def _messages(objects: Objects, name: str, reason: str) -> list[str]:
    return [e.message for e in objects.events(name) if e.reason == reason]


def _alive(op: Process) -> None:
    if not op.alive():
        raise RuntimeError(f"operator exited:\n{op.tail()}")


def _scaled_object(objects: Objects, name: str) -> dict[str, Any] | None:
    try:
        got = objects.custom.get_namespaced_custom_object(GROUP, VERSION, objects.ns, PLURAL, name)
    except client.exceptions.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return dict(got)


def test_the_keda_crd_refuses_a_scaled_object_without_its_target(objects: Objects) -> None:
    """The CRD copy validates (so an accepted ScaledObject below means something)."""
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ScaledObject",
        "metadata": {"name": "bad"},
        "spec": {"triggers": [{"type": "prometheus", "metadata": {"query": "1"}}]},
    }
    with pytest.raises(client.exceptions.ApiException) as err:
        objects.custom.create_namespaced_custom_object(GROUP, VERSION, objects.ns, PLURAL, body)
    assert err.value.status == 422
    assert "scaleTargetRef" in str(err.value.body)


def test_keda_actuation_renders_an_accepted_scaled_object_and_leaves_replicas_to_keda(
    objects: Objects,
    start_operator: Callable[..., Process],
    prometheus: PrometheusServer,
) -> None:
    port = free_port()
    op = start_operator(objects.ns, "--metrics-port", str(port))
    prometheus.add_target(f"127.0.0.1:{port}", None, None)
    try:
        _keda_mode(objects, op, prometheus)
    finally:
        prometheus.remove_target(f"127.0.0.1:{port}")


def _keda_mode(objects: Objects, op: Process, prometheus: PrometheusServer) -> None:
    keda = {"serverAddress": prometheus.url, "pollingIntervalSeconds": 5}
    objects.create(manifest(scaling={"actuation": "keda", "keda": keda, "maxReplicas": 8}))

    def rendered() -> bool:
        _alive(op)
        status = objects.get("test").get("status") or {}
        return _scaled_object(objects, "test") is not None and "decidedReplicas" in status

    wait_for(rendered, 60, "the ScaledObject, the Deployment and the status")
    so = _scaled_object(objects, "test")
    assert so is not None
    assert so["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "test",
    }
    assert so["metadata"]["ownerReferences"][0]["name"] == "test"
    decided = objects.get("test")["status"]["decidedReplicas"]
    deployment = objects.apps.read_namespaced_deployment("test", objects.ns)
    assert deployment.spec.replicas == decided  # created at the decided count
    # tokenscale's field manager does not own spec.replicas: its applies leave the field
    for entry in deployment.metadata.managed_fields:
        if entry.manager == "tokenscale":
            assert "f:replicas" not in (entry.fields_v1.get("f:spec") or {}), entry.fields_v1

    # KEDA's part, played by the test: the trigger's query, on the real Prometheus
    trigger = so["spec"]["triggers"][0]
    query = trigger["metadata"]["query"]

    def value() -> float | None:
        got = prometheus.query(query)
        return float(got[0]["value"][1]) if got else None  # type: ignore[index]

    wait_for(lambda: value() is not None, 60, "tokenscale_replicas_desired scraped")
    assert value() == decided
    # AverageValue, threshold 1: the HPA asks ceil(value / 1) replicas
    assert math.ceil((value() or 0) / float(trigger["metadata"]["threshold"])) == decided

    # the HPA writes replicas through /scale; that is not drift
    written = decided + 2
    objects.apps.patch_namespaced_deployment_scale(
        "test", objects.ns, {"spec": {"replicas": written}}
    )
    time.sleep(4 * INTERVAL_S)  # several resync ticks and the Deployment's own watch event
    _alive(op)
    assert objects.apps.read_namespaced_deployment("test", objects.ns).spec.replicas == written
    reasons = _reasons(objects, "test")
    assert "DriftCorrected" not in reasons, "; ".join(
        f"{e.reason}: {e.message}" for e in objects.events("test")
    )
    assert "Scaled" not in reasons, reasons

    # a new spec still rolls the pod template, and still leaves the replicas alone
    objects.patch_spec("test", {"serving": {"extraArgs": ["--disable-log-requests"]}})

    def rolled() -> bool:
        _alive(op)
        d = objects.apps.read_namespaced_deployment("test", objects.ns)
        args = d.spec.template.spec.containers[0].args or []
        return "--disable-log-requests" in args

    wait_for(rolled, 60, "the new template applied")
    assert objects.apps.read_namespaced_deployment("test", objects.ns).spec.replicas == written


def test_advisory_writes_no_workload_and_recommends_each_change(
    objects: Objects, start_operator: Callable[..., Process]
) -> None:
    op = start_operator(objects.ns)
    objects.create(manifest(scaling={"actuation": "advisory"}))

    def recommended(count: int) -> bool:
        _alive(op)
        return len(_messages(objects, "test", "Recommended")) >= count

    def decided() -> int | None:
        return (objects.get("test").get("status") or {}).get("decidedReplicas")

    # the event is posted in the background: the status may land a moment later
    wait_for(lambda: recommended(1) and decided() is not None, 60, "a Recommended event")
    first = decided()
    assert _messages(objects, "test", "Recommended") == [
        m for m in _messages(objects, "test", "Recommended") if m.startswith(f"Recommended {first}")
    ]
    # more traffic: a new recommendation from the last one
    objects.patch_spec("test", {"workload": {"rps": {"mean": 60}}})
    wait_for(lambda: recommended(2), 60, "a second Recommended event")
    now = objects.get("test")["status"]["decidedReplicas"]
    assert now > first
    assert any(m.startswith(f"Recommended {first}→{now}: ") for m in _messages(
        objects, "test", "Recommended"))  # fmt: skip
    time.sleep(3 * INTERVAL_S)  # ticks on an unchanged decision say nothing new
    assert len(_messages(objects, "test", "Recommended")) == 2
    # nothing written: no workload, no Service, no PDB
    assert objects.deployment("test") is None
    assert objects.core.list_namespaced_service(objects.ns).items == []
    assert Kube(objects.apps.api_client).read_pdb(objects.ns, "test") is None
    assert _scaled_object(objects, "test") is None


def _replica_owners(objects: Objects, name: str) -> set[str]:
    d = objects.apps.read_namespaced_deployment(name, objects.ns)
    return {
        e.manager
        for e in d.metadata.managed_fields or []
        if "f:replicas" in ((e.fields_v1 or {}).get("f:spec") or {})
    }


def test_switching_direct_to_keda_hands_the_replicas_over_without_a_reset(
    objects: Objects, start_operator: Callable[..., Process], prometheus: PrometheusServer
) -> None:
    """Leaving ``spec.replicas`` out of an apply whose manager owned it would remove the field
    (the Deployment back to 1 replica); the hand-over keeps the live count."""
    op = start_operator(objects.ns)
    objects.create(manifest(scaling={"minReplicas": 3}))

    def replicas(n: int) -> bool:
        _alive(op)
        d = objects.deployment("test")
        return d is not None and d.spec.replicas == n

    wait_for(lambda: replicas(3), 60, "3 replicas, direct")
    assert "tokenscale" in _replica_owners(objects, "test")
    keda = {"serverAddress": prometheus.url}
    objects.patch_spec("test", {"scaling": {"actuation": "keda", "keda": keda}})
    wait_for(lambda: _scaled_object(objects, "test") is not None, 60, "the ScaledObject")
    time.sleep(2 * INTERVAL_S)
    d = objects.apps.read_namespaced_deployment("test", objects.ns)
    assert d.spec.replicas == 3  # never reset to 1
    assert _replica_owners(objects, "test") == {"tokenscale-handover"}
    # back to direct: tokenscale owns and writes the replicas again
    objects.patch_spec("test", {"scaling": {"actuation": "direct", "minReplicas": 4}})
    wait_for(lambda: replicas(4), 60, "4 replicas, direct again")
    assert "tokenscale" in _replica_owners(objects, "test")
    # a ScaledObject left behind would have KEDA fight tokenscale's writes
    assert _scaled_object(objects, "test") is None
