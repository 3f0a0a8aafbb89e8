"""``spec.workloadRef`` on a real API server (+ controller manager, whose garbage collector
would delete anything an owner reference tied to the InferenceService), with a real operator
process: a Deployment someone else made is scaled through ``/scale`` only."""

import copy
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.helpers import manifest
from tests.integration.conftest import Objects
from tokenscale.playground.processes import Process, wait_for

pytestmark = pytest.mark.integration
INTERVAL_S = 2
REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "their-vllm"}


def _their_deployment(replicas: int = 1) -> dict[str, Any]:
    """A vLLM Deployment as a team (or another operator) writes it: its own labels, its own
    flags (max-num-seqs 32, which the spec does not plan), no tokenscale anything."""
    labels = {"app": "their-vllm", "team": "search"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "their-vllm", "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "their-vllm"}},
            "template": {
                "metadata": {"labels": labels, "annotations": {"team/owner": "search"}},
                "spec": {
                    "containers": [
                        {
                            "name": "engine",
                            "image": "vllm/vllm-openai:v0.11.0",
                            "command": ["vllm", "serve"],
                            "args": [
                                "meta-llama/Llama-3.1-8B-Instruct",
                                "--tensor-parallel-size",
                                "1",
                                "--max-num-seqs=32",
                            ],
                            "resources": {"limits": {"nvidia.com/gpu": "1"}},
                        }
                    ]
                },
            },
        },
    }


def _named(name: str, **spec: Any) -> dict[str, Any]:
    body = manifest(**spec)
    body["metadata"]["name"] = name
    return body


def _alive(op: Process) -> None:
    if not op.alive():
        raise RuntimeError(f"operator exited:\n{op.tail()}")


def _snapshot(objects: Objects) -> dict[str, Any]:
    d = objects.apps.read_namespaced_deployment("their-vllm", objects.ns)
    raw = objects.apps.api_client.sanitize_for_serialization(d)
    return {
        "template": json.dumps(raw["spec"]["template"], sort_keys=True),
        "labels": raw["metadata"].get("labels"),
        "annotations": {
            k: v
            for k, v in (raw["metadata"].get("annotations") or {}).items()
            if k != "deployment.kubernetes.io/revision"  # the Deployment controller's own
        },
        "owners": raw["metadata"].get("ownerReferences"),
        "replicas": raw["spec"]["replicas"],
        "selector": raw["spec"]["selector"],
    }


def test_an_existing_deployment_is_scaled_through_scale_and_left_as_it_was(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    objects.apps.create_namespaced_deployment(namespace, _their_deployment(replicas=1))
    before = _snapshot(objects)
    op = start_operator(namespace)
    objects.create(_named("adopt", workloadRef=REF, scaling={"minReplicas": 3}))

    def scaled() -> bool:
        _alive(op)
        return _snapshot(objects)["replicas"] == 3

    def reported() -> bool:  # /scale is written before the status
        return scaled() and (objects.get("adopt").get("status") or {}).get("replicas") == 3

    wait_for(reported, 60, "their Deployment at 3 replicas, and the status")
    after = _snapshot(objects)
    assert after == {**before, "replicas": 3}  # the pod template byte-identical, no owner
    # no object rendered for the workload: no Deployment, Service or PDB of tokenscale's
    assert objects.deployment("adopt") is None
    names = [s.metadata.name for s in objects.core.list_namespaced_service(namespace).items]
    assert "adopt" not in names
    status = objects.get("adopt")["status"]
    assert status["selector"] == "app=their-vllm"  # the pods, through the scale selector
    assert status["replicas"] == 3
    match = objects.condition("adopt", "WorkloadMatchesSpec") or {}
    assert match.get("status") == "False", match
    assert "--max-num-seqs: runs 32, the spec plans" in match["message"]
    scaled_events = [e.message for e in objects.events("adopt") if e.reason == "Scaled"]
    assert any("1→3 (/scale)" in m for m in scaled_events), scaled_events

    # someone scales it by hand: direct mode undoes it, through /scale again
    objects.apps.patch_namespaced_deployment_scale(
        "their-vllm", namespace, {"spec": {"replicas": 5}}
    )
    wait_for(scaled, 60, "back to 3")
    assert _snapshot(objects) == after

    # deleting the InferenceService leaves the workload as it was
    objects.delete("adopt")
    time.sleep(5)  # the garbage collector had time to act on an owner reference
    _alive(op)
    assert _snapshot(objects) == after


def test_a_missing_target_is_a_condition_then_found_when_created(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    op = start_operator(namespace)
    objects.create(_named("later", workloadRef=REF, scaling={"minReplicas": 2}))

    def ready_reason() -> str | None:
        _alive(op)
        return (objects.condition("later", "Ready") or {}).get("reason")

    wait_for(lambda: ready_reason() == "TargetMissing", 60, "Ready=False TargetMissing")
    ready = objects.condition("later", "Ready") or {}
    assert ready["status"] == "False"
    assert "Deployment" in ready["message"]
    assert "their-vllm" in ready["message"]
    time.sleep(3 * INTERVAL_S)  # several ticks: one event, a live operator, no crash loop
    _alive(op)
    warnings = [e for e in objects.events("later") if e.reason == "TargetMissing"]
    assert sum(e.count or 1 for e in warnings) == 1
    objects.apps.create_namespaced_deployment(namespace, copy.deepcopy(_their_deployment()))

    def found() -> bool:
        _alive(op)
        return _snapshot(objects)["replicas"] == 2

    wait_for(found, 60, "the target found and scaled to 2")
    # the status is written after the scale (observe → desire → act → status)
    wait_for(lambda: ready_reason() != "TargetMissing", 30, "Ready no longer TargetMissing")


def test_the_plan_is_made_at_the_layout_the_deployment_runs(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    """Their Deployment runs TP 2 on 2 GPUs with its own batch limits; the spec plans TP 1.
    tokenscale plans at TP 2 with their limits, and the condition names each difference."""
    deployment = _their_deployment(replicas=1)
    engine = deployment["spec"]["template"]["spec"]["containers"][0]
    engine["args"] = [
        "meta-llama/Llama-3.1-8B-Instruct",
        "--tensor-parallel-size=2",
        "--max-num-seqs",
        "48",
        "--max-num-batched-tokens=4096",
        "--max-model-len",
        "8192",
    ]
    engine["resources"] = {"limits": {"nvidia.com/gpu": "2"}}
    objects.apps.create_namespaced_deployment(namespace, deployment)
    before = _snapshot(objects)
    op = start_operator(namespace)
    objects.create(_named("layout", workloadRef=REF, scaling={"minReplicas": 2}))

    def planned() -> bool:
        _alive(op)
        plan = ((objects.get("layout") or {}).get("status") or {}).get("plan") or {}
        return "layout" in (plan.get("sources") or {})

    wait_for(planned, 60, "a plan made at the running layout")
    plan = objects.get("layout")["status"]["plan"]
    assert plan["tensorParallelSize"] == 2  # the spec says 1
    assert plan["maxModelLen"] == 8192
    assert plan["maxConcurrencyPerReplica"] <= 48
    assert plan["gpusTotal"] == plan["replicas"] * 2
    said = plan["sources"]["layout"]
    assert f"Deployment {namespace}/their-vllm" in said
    for adopted in (
        "--tensor-parallel-size 2",
        "--max-num-seqs 48",
        "--max-num-batched-tokens 4096",
        "--max-model-len 8192",
    ):
        assert adopted in said, said
    match = objects.condition("layout", "WorkloadMatchesSpec") or {}
    assert (match.get("status"), match.get("reason")) == ("False", "Differs"), match
    message = match["message"]
    assert "--tensor-parallel-size: runs 2, the spec plans 1" in message
    assert "--max-num-seqs: runs 48, the spec plans" in message
    assert "--max-num-batched-tokens: runs 4096, the spec plans" in message
    assert "--max-model-len: runs 8192, the spec plans 16384" in message
    assert "gpus: runs 2, the spec plans 1" in message
    wait_for(lambda: _snapshot(objects)["replicas"] == 2, 60, "their Deployment at 2")
    assert _snapshot(objects) == {**before, "replicas": 2}  # the template untouched
