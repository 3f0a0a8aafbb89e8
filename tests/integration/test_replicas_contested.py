"""A second writer of a workload's replicas, on a real API server whose controller manager runs
the HorizontalPodAutoscaler controller (no metrics API: it enforces its ``minReplicas`` floor
only, every 5 s), with a real operator process: tokenscale undoes a foreign change once, then
stops fighting and says who and since when (``ReplicasContested``)."""

import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from tests.helpers import manifest
from tests.integration.conftest import Objects
from tests.integration.test_workload_ref import _alive, _named, _their_deployment
from tokenscale.playground.processes import Process, wait_for

pytestmark = pytest.mark.integration


def _hpa(target: str, floor: int) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": f"{target}-hpa"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": floor,
            "maxReplicas": floor,
            "targetCPUUtilizationPercentage": 80,
        },
    }


def _contested(objects: Objects, name: str) -> dict[str, Any]:
    return objects.condition(name, "ReplicasContested") or {}


def _settled(objects: Objects, deployment: str, replicas: int, seconds: float) -> None:
    """The Deployment stays at ``replicas`` for ``seconds`` (no tug of war)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert objects.apps.read_namespaced_deployment(deployment, objects.ns).spec.replicas == (
            replicas
        )
        time.sleep(0.5)


def test_direct_mode_beside_an_hpa_stops_fighting_and_names_it(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    op = start_operator(namespace)
    objects.create(manifest(scaling={"minReplicas": 2, "maxReplicas": 2}))

    def at_two() -> bool:
        _alive(op)
        d = objects.deployment("test")
        return d is not None and d.spec.replicas == 2

    wait_for(at_two, 60, "the Deployment at 2")
    client.AutoscalingV1Api(objects.apps.api_client).create_namespaced_horizontal_pod_autoscaler(
        namespace, _hpa("test", 4)
    )

    def contested() -> bool:
        _alive(op)
        return _contested(objects, "test").get("status") == "True"

    wait_for(contested, 90, "ReplicasContested=True")
    cond = _contested(objects, "test")
    assert cond["reason"] == "SecondWriter"
    assert "changed to 4 again after tokenscale set 2" in cond["message"], cond
    assert cond["lastTransitionTime"]  # since when
    _settled(objects, "test", 4, 12)  # held at the other writer's count: no more undo
    undone = [e for e in objects.events("test") if e.reason == "DriftCorrected"]
    assert sum(e.count or 1 for e in undone) <= 2, [e.message for e in undone]
    status = objects.get("test")["status"]
    assert status["decidedReplicas"] == 2  # what tokenscale would run, still said
    assert status["replicas"] == 4  # what runs


def test_two_services_on_one_workload_stop_fighting(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    """Two InferenceServices referencing one Deployment (2 and 6 replicas): one of them
    stands down with ``ReplicasContested`` instead of ``Scaled``/``DriftCorrected`` every
    interval."""
    objects.apps.create_namespaced_deployment(namespace, _their_deployment(replicas=1))
    op = start_operator(namespace)
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "their-vllm"}
    objects.create(_named("one", workloadRef=ref, scaling={"minReplicas": 2, "maxReplicas": 2}))
    objects.create(_named("two", workloadRef=ref, scaling={"minReplicas": 6, "maxReplicas": 6}))

    def someone_stood_down() -> bool:
        _alive(op)
        return any(_contested(objects, n).get("status") == "True" for n in ("one", "two"))

    wait_for(someone_stood_down, 90, "ReplicasContested=True on one of them")
    now = objects.apps.read_namespaced_deployment("their-vllm", namespace).spec.replicas
    assert now in (2, 6)
    _settled(objects, "their-vllm", now, 12)
