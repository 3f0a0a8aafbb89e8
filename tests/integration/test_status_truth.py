"""Status and events that say what is true, on a real API server (+ controller manager) with a
real operator process: the GPUs a multi-node plan holds, a quota that allows none, the budget
that follows tokenscale's own scale, the count taken back from KEDA, an apply body with a
character beyond the BMP, and a draft model larger than its target."""

import time
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.helpers import ROOT, manifest
from tests.integration.conftest import Objects
from tests.integration.test_workload_ref import _alive
from tokenscale.kube import lws
from tokenscale.kube.client import Kube
from tokenscale.playground.processes import Process, wait_for
from tokenscale.render.variants import variant_workload_name

pytestmark = pytest.mark.integration
EXAMPLES = ROOT / "deploy" / "examples"


def _example(path: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((EXAMPLES / path).read_text())
    return doc


def _leader_worker_set(objects: Objects, name: str) -> dict[str, Any] | None:
    try:
        got = objects.custom.get_namespaced_custom_object(
            lws.GROUP, lws.VERSION, objects.ns, lws.PLURAL, name
        )
    except client.exceptions.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return dict(got)


def _gpus(template: dict[str, Any]) -> int:
    return sum(
        int(((c.get("resources") or {}).get("limits") or {}).get("nvidia.com/gpu", 0))
        for c in template["spec"]["containers"]
    )


def test_gpus_total_counts_every_gpu_of_a_replica_that_spans_nodes(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    """The 405B example: TP 8 × PP 2 on 2 nodes; ``gpusTotal`` is what the LeaderWorkerSet
    requests (replicas × group size × GPUs per pod), not replicas × TP."""
    doc = _example("llama-3.1-405b-h100-bf16.yaml")
    name = doc["metadata"]["name"]
    op = start_operator(namespace)
    objects.create(doc)

    def rendered() -> bool:
        _alive(op)
        plan = (objects.get(name).get("status") or {}).get("plan") or {}
        return _leader_worker_set(objects, name) is not None and "gpusTotal" in plan

    wait_for(rendered, 90, "the LeaderWorkerSet and the plan in status")
    group = _leader_worker_set(objects, name)
    assert group is not None
    template = group["spec"]["leaderWorkerTemplate"]
    size = int(template["size"])
    per_group = _gpus(template["leaderTemplate"]) + (size - 1) * _gpus(template["workerTemplate"])
    plan = objects.get(name)["status"]["plan"]
    assert size > 1
    assert plan["gpusTotal"] == plan["replicas"] * per_group
    assert plan["gpusTotal"] > plan["replicas"] * plan["tensorParallelSize"]


def test_a_quota_that_allows_no_gpu_is_neither_ready_nor_all_placed(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    quota = {"metadata": {"name": "no-gpus"}, "spec": {"hard": {"requests.nvidia.com/gpu": "0"}}}
    objects.core.create_namespaced_resource_quota(namespace, quota)
    doc = _example("variants/llama-3.1-8b-h100-l40s.yaml")
    name = doc["metadata"]["name"]
    op = start_operator(namespace)
    objects.create(doc)

    def at_zero() -> bool:
        _alive(op)
        deps = [objects.deployment(variant_workload_name(name, v)) for v in ("h100-sxm-80gb",)]
        said = objects.condition(name, "Ready") or {}
        return all(d is not None and d.spec.replicas == 0 for d in deps) and bool(said)

    wait_for(at_zero, 90, "the variants' Deployments at 0 and a Ready condition")
    time.sleep(3)  # the Deployments' status settles (Available at 0 of 0)
    ready = objects.condition(name, "Ready") or {}
    assert (ready.get("status"), ready.get("reason")) == ("False", "QuotaLimited"), ready
    assert "no replica runs" in ready["message"]
    exhausted = objects.condition(name, "VariantExhausted") or {}
    assert exhausted.get("reason") != "AllPlaced", exhausted
    assert "quota" in exhausted["message"]


def test_tokenscales_own_scale_is_not_drift_of_its_budget(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    op = start_operator(namespace)
    objects.create(manifest(scaling={"minReplicas": 1, "maxReplicas": 1}))

    def at(n: int) -> bool:
        _alive(op)
        d = objects.deployment("test")
        return d is not None and d.spec.replicas == n

    wait_for(lambda: at(1), 60, "1 replica")
    kube = Kube(objects.apps.api_client)  # policy/v1beta1 on this 1.20 API server

    def min_available() -> Any:
        return ((kube.read_pdb(namespace, "test") or {}).get("spec") or {}).get("minAvailable")

    before = min_available()
    objects.patch_spec("test", {"scaling": {"minReplicas": 3, "maxReplicas": 3}})
    wait_for(lambda: at(3), 60, "3 replicas")

    def budget_moved() -> bool:
        return bool(min_available() != before)

    wait_for(budget_moved, 30, "the budget following the count")
    time.sleep(2)
    drift = [e.message for e in objects.events("test") if e.reason == "DriftCorrected"]
    assert not drift, drift
    scaled = [e.message for e in objects.events("test") if e.reason == "Scaled"]
    assert any("1→3" in m for m in scaled), scaled


def test_taking_the_replicas_back_from_keda_is_not_called_a_manual_change(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    op = start_operator(namespace)
    keda = {"serverAddress": "http://prometheus.monitoring:9090"}
    objects.create(
        manifest(scaling={"actuation": "keda", "keda": keda, "minReplicas": 2, "maxReplicas": 8})
    )

    def handed_over() -> bool:
        _alive(op)
        d = objects.deployment("test")
        marks = (d.metadata.annotations or {}) if d is not None else {}
        return marks.get("tokenscale.io/replicas-writer") == "keda"

    wait_for(handed_over, 60, "the Deployment handed over to KEDA")
    # KEDA's HPA scales it (no KEDA runs here: the test writes /scale as its HPA would)
    objects.apps.patch_namespaced_deployment_scale("test", namespace, {"spec": {"replicas": 5}})
    objects.patch_spec("test", {"scaling": {"actuation": "direct"}})

    def back() -> bool:
        _alive(op)
        return any(e.reason == "Scaled" and "KEDA" in e.message for e in objects.events("test"))

    wait_for(back, 60, "the replicas taken back from KEDA")
    said = [e.message for e in objects.events("test") if e.reason in ("Scaled", "DriftCorrected")]
    assert not any("manual change" in m for m in said), said
    assert any(m.startswith("Took the replicas back from KEDA: 5→") for m in said), said


def test_an_annotation_beyond_the_bmp_is_applied(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    """An emoji in ``spec.deployment.annotations``: the server-side apply body is UTF-8 YAML,
    not JSON with surrogate-pair escapes (which the API server's YAML decoder refuses)."""
    op = start_operator(namespace)
    text = "prod \U0001f680 service"
    objects.create(manifest(deployment={"annotations": {"description": text}}))

    def deployed() -> bool:
        _alive(op)
        return objects.deployment("test") is not None

    wait_for(deployed, 60, "the Deployment")
    pod = objects.deployment("test").spec.template
    assert pod.metadata.annotations["description"] == text
    assert not [e for e in objects.events("test") if e.reason == "ApplyFailed"]


def test_a_draft_larger_than_its_target_is_an_invalid_spec_naming_the_field(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    op = start_operator(namespace)
    draft = {"name": "meta-llama/Llama-3.1-70B-Instruct", "catalog": "llama-3.1-70b"}
    speculative = {"method": "draft_model", "acceptanceRate": 0.7, "draftModel": draft}
    objects.create(
        manifest(
            hardware={"gpu": "H100-SXM-80GB", "tensorParallelSize": 8},
            serving={"speculative": speculative},
        )
    )

    def refused() -> bool:
        _alive(op)
        return (objects.condition("test", "PlanFeasible") or {}).get("reason") == "InvalidSpec"

    wait_for(refused, 60, "PlanFeasible=False InvalidSpec")
    message = (objects.condition("test", "PlanFeasible") or {})["message"]
    assert "spec.serving.speculative.draftModel" in message
    assert objects.deployment("test") is None
    assert _leader_worker_set(objects, "test") is None
