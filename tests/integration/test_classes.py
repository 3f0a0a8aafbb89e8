"""Classes against a real API server (1.20, with llm-d's InferenceObjective CRD as published):
the engine runs vLLM's priority scheduling, the gateway gets one InferenceObjective per class
bound to the pool, a removed class's objective is deleted, removing the gateway deletes every
objective of ours, and an objective of another owner (even one carrying our labels) is never
touched. A second API server without the CRD shows
the condition that names what to install (PlanFeasible=False, Ready=False)."""

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from tests.integration.conftest import CRD_FILE, Objects
from tests.unit.test_classes import agent, batch, chat, doc
from tokenscale.playground.cluster import Cluster
from tokenscale.playground.processes import Process, wait_for
from tokenscale.render.inference_objective import CLASS_LABEL, GROUP, PLURAL, VERSION
from tokenscale.render.labels import INFERENCE_SERVICE_LABEL

pytestmark = pytest.mark.integration


def _objectives(objects: Objects) -> dict[str, dict[str, Any]]:
    got: dict[str, Any] = objects.custom.list_namespaced_custom_object(
        GROUP, VERSION, objects.ns, PLURAL
    )
    return {o["metadata"]["name"]: o for o in got["items"]}


def _alive(op: Process) -> None:
    if not op.alive():
        raise RuntimeError(f"operator exited:\n{op.tail()}")


def _service(with_batch: bool = True) -> dict[str, Any]:
    classes = [chat(), agent(), *([batch()] if with_batch else [])]
    d = doc(classes)
    d["spec"]["gateway"] = {"inferencePool": {"name": "shared"}}
    return d


def test_classes_render_priority_and_objectives_and_dropped_ones_lose_their_own(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    theirs = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "InferenceObjective",
        "metadata": {
            "name": "theirs",
            # our labels, but no owner reference of ours: not ours to delete
            "labels": {INFERENCE_SERVICE_LABEL: "test", CLASS_LABEL: "batch"},
        },
        "spec": {"poolRef": {"name": "shared"}, "priority": 3},
    }
    objects.custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, theirs)
    op = start_operator(namespace)
    objects.create(_service())

    def three() -> bool:
        _alive(op)
        return {"test-chat", "test-agent", "test-batch"} <= set(_objectives(objects))

    wait_for(three, 90, "three InferenceObjectives")
    found = _objectives(objects)
    assert {n: o["spec"]["priority"] for n, o in found.items()} == {
        "test-chat": 10,
        "test-agent": 0,
        "test-batch": -10,
        "theirs": 3,
    }
    for name in ("test-chat", "test-agent", "test-batch"):
        o = found[name]
        assert o["spec"]["poolRef"]["name"] == "shared"
        assert o["spec"]["poolRef"]["kind"] == "InferencePool"  # as applied, not defaulted
        (ref,) = o["metadata"]["ownerReferences"]
        assert ref["kind"] == "InferenceService"
        assert ref["controller"] is True
    dep = objects.deployment("test")
    args = dep.spec.template.spec.containers[0].args
    assert args[args.index("--scheduling-policy") + 1] == "priority"

    def planned_lines() -> list[str]:
        status = objects.get("test").get("status") or {}
        return list((status.get("plan") or {}).get("classes") or [])

    # the status is written after the objects are applied, in the same reconcile
    wait_for(planned_lines, 60, "status.plan.classes")
    planned = planned_lines()
    assert planned[0].startswith("chat binds at")
    assert planned[3].startswith("batch (sheddable, priority -10)")

    objects.patch_spec("test", {"workload": {"classes": [chat(), agent()]}})

    def dropped() -> bool:
        _alive(op)
        return "test-batch" not in _objectives(objects)

    wait_for(dropped, 90, "the batch class's InferenceObjective deleted")
    left = _objectives(objects)
    assert set(left) == {"test-chat", "test-agent", "theirs"}
    assert left["theirs"]["spec"]["priority"] == 3
    assert "ownerReferences" not in left["theirs"]["metadata"]
    # the event is posted after the deletion it reports: wait for it, do not race it
    wait_for(
        lambda: any(e.reason == "ObjectiveRemoved" for e in objects.events("test")),
        30,
        "the ObjectiveRemoved event",
    )

    # the gateway removed: every objective of ours goes (not only at the service's deletion)
    objects.patch_spec("test", {"gateway": {"inferencePool": None}})

    def ungated() -> bool:
        _alive(op)
        return not {"test-chat", "test-agent"} & set(_objectives(objects))

    wait_for(ungated, 90, "the InferenceObjectives deleted with spec.gateway.inferencePool")
    left = _objectives(objects)
    assert set(left) == {"theirs"}
    assert left["theirs"]["spec"]["priority"] == 3
    wait_for(
        lambda: any(
            e.reason == "ObjectiveRemoved" and "spec.gateway.inferencePool was removed" in e.message
            for e in objects.events("test")
        ),
        30,
        "the ObjectiveRemoved event naming spec.gateway.inferencePool",
    )
    dep = objects.deployment("test")  # the classes stay: vLLM still schedules by priority
    args = dep.spec.template.spec.containers[0].args
    assert args[args.index("--scheduling-policy") + 1] == "priority"


@pytest.fixture(scope="module")
def bare_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """An API server with the InferenceService CRD only (no llm-d)."""
    c = Cluster(tmp_path_factory.mktemp("bare"), crd_files=[CRD_FILE])
    try:
        c.start()
        yield c
    finally:
        c.stop()


def test_a_cluster_without_the_crd_gets_a_condition_naming_it(
    bare_cluster: Cluster, tmp_path: Path
) -> None:
    api = config.new_client_from_config(config_file=str(bare_cluster.kubeconfig()))
    ns = f"t-{uuid.uuid4().hex[:8]}"
    client.CoreV1Api(api).create_namespace({"metadata": {"name": ns}})
    objects = Objects(api, ns)
    op = bare_cluster.operator("operator-bare", ns, 2, tmp_path)
    try:
        objects.create(_service())

        def named() -> bool:
            _alive(op)
            feasible = objects.condition("test", "PlanFeasible") or {}
            return feasible.get("reason") == "InferenceObjectiveMissing"

        wait_for(named, 90, "PlanFeasible=False InferenceObjectiveMissing")
        assert (objects.condition("test", "Ready") or {})["status"] == "False"
        message = (objects.condition("test", "PlanFeasible") or {})["message"]
        assert "inferenceobjectives.llm-d.ai/v1alpha2" in message
        assert "install llm-d's InferenceObjective CRD" in message
        with pytest.raises(ApiException):
            objects.custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)
    finally:
        op.stop()
