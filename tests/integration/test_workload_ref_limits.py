"""What ``spec.workloadRef`` may not do, on a real API server (+ controller manager) with a real
operator process: leave a ScaledObject aimed at a workload it no longer names, scale another
InferenceService or a workload whose controller sets its replicas, or write past the
namespace's GPU quota."""

import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from tests.integration.conftest import Objects
from tests.integration.test_workload_ref import _alive, _named, _their_deployment
from tokenscale.playground.processes import Process, wait_for
from tokenscale.render.keda import GROUP, PLURAL, VERSION

pytestmark = pytest.mark.integration
REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "their-vllm"}
KEDA = {"serverAddress": "http://prometheus.monitoring:9090", "pollingIntervalSeconds": 5}


def _scaled_object(objects: Objects, name: str) -> dict[str, Any] | None:
    try:
        got = objects.custom.get_namespaced_custom_object(GROUP, VERSION, objects.ns, PLURAL, name)
    except client.exceptions.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return dict(got)


def _ready(objects: Objects, name: str) -> dict[str, Any]:
    return objects.condition(name, "Ready") or {}


@pytest.mark.parametrize("actuation", ["advisory", "direct"])
def test_leaving_keda_and_the_reference_at_once_deletes_the_scaled_object(
    objects: Objects, namespace: str, start_operator: Callable[..., Process], actuation: str
) -> None:
    """keda mode on their Deployment, then one edit removes the reference and leaves keda: the
    ScaledObject aimed at their Deployment goes (else KEDA scales it on a metric that now
    describes another workload)."""
    objects.apps.create_namespaced_deployment(namespace, _their_deployment(replicas=1))
    op = start_operator(namespace)
    objects.create(_named("payments", workloadRef=REF, scaling={"actuation": "keda", "keda": KEDA}))

    def aimed() -> bool:
        _alive(op)
        so = _scaled_object(objects, "payments")
        return so is not None and so["spec"]["scaleTargetRef"]["name"] == "their-vllm"

    wait_for(aimed, 60, "the ScaledObject aimed at their Deployment")
    objects.patch_spec("payments", {"workloadRef": None, "scaling": {"actuation": actuation}})
    generation = objects.get("payments")["metadata"]["generation"]

    def acted_on() -> bool:
        _alive(op)
        return (objects.get("payments").get("status") or {}).get("observedGeneration") == generation

    wait_for(acted_on, 60, "the edit reconciled")
    assert _scaled_object(objects, "payments") is None


def test_a_reference_to_another_inference_service_is_refused(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    op = start_operator(namespace)
    objects.create(_named("victim", scaling={"replicas": 2}))
    wait_for(lambda: objects.deployment("victim") is not None, 60, "the victim's Deployment")
    ref = {"apiVersion": "tokenscale.io/v1alpha1", "kind": "InferenceService", "name": "victim"}
    objects.create(_named("pins", workloadRef=ref, scaling={"minReplicas": 6}))

    def refused() -> bool:
        _alive(op)
        return _ready(objects, "pins").get("reason") == "TargetNotAllowed"

    wait_for(refused, 60, "Ready=False TargetNotAllowed, in the referencing service's status")
    ready = _ready(objects, "pins")
    assert ready["status"] == "False"
    assert "spec.workloadRef" in ready["message"]
    assert "InferenceService" in ready["message"]
    assert "victim" in ready["message"]
    warnings = [e.message for e in objects.events("pins") if e.reason == "TargetNotAllowed"]
    assert warnings, [e.reason for e in objects.events("pins")]
    assert objects.get("victim")["spec"]["scaling"]["replicas"] == 2  # never rewritten
    assert objects.deployment("victim").spec.replicas == 2


def test_a_deployment_another_service_renders_is_refused(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    """``two`` referencing ``one``'s Deployment would fight ``one`` for its replicas."""
    op = start_operator(namespace)
    objects.create(_named("one", scaling={"replicas": 2}))
    wait_for(lambda: objects.deployment("one") is not None, 60, "one's Deployment")
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "one"}
    objects.create(_named("two", workloadRef=ref, scaling={"minReplicas": 6}))

    def refused() -> bool:
        _alive(op)
        return _ready(objects, "two").get("reason") == "TargetNotAllowed"

    wait_for(refused, 60, "Ready=False TargetNotAllowed")
    message = _ready(objects, "two")["message"]
    assert "spec.workloadRef" in message
    assert "InferenceService one" in message
    assert objects.deployment("one").spec.replicas == 2


def test_a_replica_set_a_deployment_owns_is_refused_naming_its_owner(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    objects.apps.create_namespaced_deployment(namespace, _their_deployment(replicas=1))

    def replica_set() -> str | None:
        items = objects.apps.list_namespaced_replica_set(namespace).items
        return items[0].metadata.name if items else None

    wait_for(lambda: replica_set() is not None, 60, "the Deployment's ReplicaSet")
    rs = replica_set()
    assert rs is not None
    op = start_operator(namespace)
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs}
    objects.create(_named("rs", workloadRef=ref, scaling={"minReplicas": 3}))

    def refused() -> bool:
        _alive(op)
        return _ready(objects, "rs").get("reason") == "TargetNotAllowed"

    wait_for(refused, 60, "Ready=False TargetNotAllowed")
    message = _ready(objects, "rs")["message"]
    assert "scale its owner" in message
    assert "Deployment their-vllm" in message
    assert objects.apps.read_namespaced_replica_set(rs, namespace).spec.replicas == 1


def test_the_gpu_quota_is_counted_by_the_referenced_pods_and_respected(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    """Quota 3 GPUs, all held by the referenced Deployment's 3 pods: the service holds 3 (its
    pods are the Scale selector's, not its own label's), and ``/scale`` is never written past
    what the quota allows (no ``exceeded quota`` loop of the ReplicaSet)."""
    quota = {"metadata": {"name": "team-gpus"}, "spec": {"hard": {"requests.nvidia.com/gpu": "3"}}}
    objects.core.create_namespaced_resource_quota(namespace, quota)

    def used() -> str | None:
        got = objects.core.read_namespaced_resource_quota("team-gpus", namespace)
        return ((got.status and got.status.used) or {}).get("requests.nvidia.com/gpu")

    wait_for(lambda: used() == "0", 60, "the quota's status")
    objects.apps.create_namespaced_deployment(namespace, _their_deployment(replicas=3))
    wait_for(lambda: used() == "3", 60, "their 3 pods counted")
    op = start_operator(namespace)
    objects.create(_named("capped", workloadRef=REF, scaling={"minReplicas": 8}))

    def limited() -> bool:
        _alive(op)
        return (objects.condition("capped", "PlanFeasible") or {}).get("reason") == "QuotaLimited"

    wait_for(limited, 60, "PlanFeasible=False QuotaLimited")
    message = (objects.condition("capped", "PlanFeasible") or {})["message"]
    assert "(this service holds 3)" in message, message
    assert "3 of 8 replicas" in message, message
    for _ in range(3):  # several intervals: never past the quota
        time.sleep(2)
        assert objects.apps.read_namespaced_deployment("their-vllm", namespace).spec.replicas == 3
    assert objects.get("capped")["status"]["replicas"] == 3
