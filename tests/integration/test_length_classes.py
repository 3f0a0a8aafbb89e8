"""Length classes against a real kube-apiserver + etcd + kube-controller-manager: one child
InferenceService per class, each deployed as one pool, the parent's status from theirs, a
dropped class's child deleted, and the children gone with the parent."""

import json
from collections.abc import Callable
from typing import Any, cast

import pytest
from kubernetes import client

from tests.helpers import manifest
from tests.integration.conftest import GROUP, PLURAL, VERSION, Objects
from tokenscale.api.manifest import parse_manifests
from tokenscale.planning import plan_service
from tokenscale.playground.processes import Process, wait_for
from tokenscale.render.length_classes import LENGTH_CLASS_LABEL, LENGTH_PARENT_LABEL

pytestmark = pytest.mark.integration

CLASSES: list[dict[str, Any]] = [
    {"name": "short", "maxInputTokens": 2048},
    {"name": "mid", "maxInputTokens": 8192},
    {"name": "long"},
]
WORKLOAD = {
    "rps": {"mean": 10, "peak": 20},
    "inputTokens": {"mean": 2000, "p99": 20000},
    "outputTokens": {"mean": 200, "p99": 800},
    "maxContextTokens": 32768,
}


def _children(objects: Objects) -> dict[str, dict[str, Any]]:
    got = cast(
        dict[str, Any],
        objects.custom.list_namespaced_custom_object(
            GROUP, VERSION, objects.ns, PLURAL, label_selector=f"{LENGTH_PARENT_LABEL}=svc"
        ),
    )
    return {o["metadata"]["labels"][LENGTH_CLASS_LABEL]: o for o in got["items"]}


def test_each_class_runs_as_its_own_service_and_the_parent_reports_them(
    api: client.ApiClient,
    objects: Objects,
    namespace: str,
    start_operator: Callable[..., Process],
) -> None:
    op = start_operator(namespace)
    doc = manifest(serving={"lengthClasses": CLASSES}, workload=WORKLOAD)
    doc["metadata"] = {"name": "svc"}
    parent = objects.create(doc)
    plan = plan_service(parse_manifests(json.dumps(doc))[0].spec, "svc")

    def deployed() -> bool:
        if not op.alive():
            raise RuntimeError(f"operator exited:\n{op.tail()}")
        return all(objects.deployment(f"svc-{c['name']}") is not None for c in CLASSES)

    wait_for(deployed, 60, "one Deployment per class")
    children = _children(objects)
    assert sorted(children) == ["long", "mid", "short"]
    for name, child in children.items():
        owner = child["metadata"]["ownerReferences"][0]
        assert owner["uid"] == parent["metadata"]["uid"]
        assert "lengthClasses" not in (child["spec"].get("serving") or {})
        pool = next(p for p in plan.pools if p.name == name)
        dep = objects.deployment(f"svc-{name}")
        assert dep.spec.replicas == pool.replicas  # the child's own plan is the class's pool
        assert child["spec"]["workload"]["rps"]["peak"] == pytest.approx(pool.load_rps)
    assert objects.deployment("svc") is None  # the parent runs no pool of its own

    def reported() -> bool:
        rows = (objects.get("svc").get("status") or {}).get("lengthClasses") or []
        return [r["name"] for r in rows] == ["short", "mid", "long"] and all(
            r["replicas"] > 0 for r in rows
        )

    wait_for(reported, 60, "the parent's status from its children's")
    status = objects.get("svc")["status"]
    assert status["replicas"] == sum(r["replicas"] for r in status["lengthClasses"])
    assert [p["name"] for p in status["plan"]["pools"]] == ["short", "mid", "long"]
    plan_cond = next(c for c in status["conditions"] if c["type"] == "PlanFeasible")
    assert plan_cond["status"] == ("True" if plan.feasible else "False")
    wait_for(
        lambda: any(
            e.reason == "Created" and "InferenceService/svc-short" in (e.message or "")
            for e in objects.events("svc")
        ),
        30,
        "the Created event",
    )

    # a class dropped: its child is deleted, the others stay
    objects.patch_spec("svc", {"serving": {"lengthClasses": [CLASSES[0], CLASSES[2]]}})
    wait_for(lambda: sorted(_children(objects)) == ["long", "short"], 60, "mid's child deleted")
    wait_for(  # events are posted in the background
        lambda: any(
            e.reason == "LengthClassRemoved" and "InferenceService/svc-mid" in (e.message or "")
            for e in objects.events("svc")
        ),
        30,
        "the LengthClassRemoved event",
    )

    # classes removed: the children go, the service runs one pool of its own
    objects.patch_spec("svc", {"serving": {"lengthClasses": None}})
    wait_for(lambda: objects.deployment("svc") is not None, 60, "the one-pool Deployment")
    wait_for(lambda: not _children(objects), 60, "the children deleted")
    wait_for(lambda: not (objects.get("svc")["status"].get("lengthClasses")), 30, "no rows")

    # classes again, then the parent deleted: its own Deployment goes, then the garbage
    # collector takes the children (owner references)
    objects.patch_spec("svc", {"serving": {"lengthClasses": CLASSES}})
    wait_for(lambda: len(_children(objects)) == 3, 60, "the children again")
    wait_for(lambda: objects.deployment("svc") is None, 60, "the one-pool Deployment deleted")
    objects.delete("svc")
    wait_for(lambda: not _children(objects), 90, "children garbage-collected")
