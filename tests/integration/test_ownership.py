"""Ownership on a real API server (+ controller manager, whose garbage collector deletes what an
owner reference points at): a name taken by someone else is a condition, never adopted, merged
into or garbage-collected; a field another manager adds to an owned object is not drift."""

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.helpers import manifest
from tests.integration.conftest import Objects
from tokenscale.playground.processes import Process, wait_for
from tokenscale.render.names import child_name

pytestmark = pytest.mark.integration
INTERVAL_S = 2


def _ready(objects: Objects, name: str) -> dict[str, Any]:
    return objects.condition(name, "Ready") or {}


def _conflict(objects: Objects, name: str, op: Process) -> dict[str, Any]:
    def seen() -> bool:
        if not op.alive():
            raise RuntimeError(f"operator exited:\n{op.tail()}")
        return _ready(objects, name).get("reason") == "NameConflict"

    wait_for(seen, 60, f"{name}: Ready=False NameConflict")
    return _ready(objects, name)


def _events(objects: Objects, name: str, reason: str) -> int:
    return sum(e.count or 1 for e in objects.events(name) if e.reason == reason)


def _named(name: str, **spec: Any) -> dict[str, Any]:
    body = manifest(**spec)
    body["metadata"]["name"] = name
    return body


def test_a_foreign_service_is_never_adopted_changed_or_collected(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    objects.core.create_namespaced_service(
        namespace,
        {
            "metadata": {"name": "svconly", "labels": {"team": "payments"}},
            "spec": {"selector": {"app": "payments"}, "ports": [{"port": 443}]},
        },
    )
    op = start_operator(namespace)
    objects.create(_named("svconly"))
    ready = _conflict(objects, "svconly", op)
    assert ready["status"] == "False"
    assert "Service svconly" in ready["message"]
    assert "team=payments" in ready["message"]
    status = objects.get("svconly")["status"]
    assert status["plan"]["replicas"] >= 1  # not an empty status
    time.sleep(4 * INTERVAL_S)  # a few resync cycles
    assert _events(objects, "svconly", "NameConflict") == 1  # one event, not a storm
    assert objects.deployment("svconly") is None  # nothing applied
    svc = objects.core.read_namespaced_service("svconly", namespace)
    assert svc.metadata.owner_references is None
    assert svc.spec.selector == {"app": "payments"}
    assert [p.port for p in svc.spec.ports] == [443]
    objects.delete("svconly")
    time.sleep(5)  # the garbage collector had time to act on an owner reference
    assert objects.core.read_namespaced_service("svconly", namespace).metadata.labels == {
        "team": "payments"
    }


def test_an_unowned_deployment_is_a_conflict_with_a_status(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    labels = {"app": "theirs"}
    objects.apps.create_namespaced_deployment(
        namespace,
        {
            "metadata": {"name": "taken"},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
                },
            },
        },
    )
    op = start_operator(namespace)
    objects.create(_named("taken"))
    ready = _conflict(objects, "taken", op)
    assert "Deployment taken" in ready["message"]
    assert not any(e.reason == "ApplyFailed" for e in objects.events("taken"))
    assert objects.deployment("taken").spec.selector.match_labels == labels


def test_a_derived_name_collision_names_the_other_inference_service(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    derived = child_name("chat.v2")
    assert derived == "chat-v2-f5101bcf"
    op = start_operator(namespace)
    objects.create(_named("chat.v2"))
    wait_for(lambda: objects.deployment(derived) is not None, 60, "chat.v2's Deployment")
    first = objects.deployment(derived)
    objects.create(_named(derived))
    ready = _conflict(objects, derived, op)
    assert "controlled by InferenceService chat.v2" in ready["message"]
    time.sleep(3 * INTERVAL_S)
    again = objects.deployment(derived)
    assert again.metadata.owner_references[0].name == "chat.v2"
    # Untouched by the second service: the spec's generation and our own apply entry are as they
    # were (the resourceVersion is not compared: the Deployment controller writes status).
    assert again.metadata.generation == first.metadata.generation
    assert _applied(first)
    assert _applied(again) == _applied(first)


def _applied(deployment: Any) -> list[tuple[str, str]]:
    return [
        (m.operation, str(m.time))
        for m in deployment.metadata.managed_fields or []
        if m.manager == "tokenscale"
    ]


def test_a_port_another_tool_adds_to_our_service_is_not_drift(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    op = start_operator(namespace)
    objects.create(manifest())
    wait_for(lambda: _ready(objects, "test").get("reason") is not None, 60, "a status")
    wait_for(lambda: objects.core.read_namespaced_service("test", namespace), 30, "Service")
    objects.core.patch_namespaced_service(
        "test",
        namespace,
        {"spec": {"ports": [{"name": "mesh", "port": 15020, "protocol": "TCP"}]}},
        field_manager="mesh-injector",
        _content_type="application/strategic-merge-patch+json",  # merged by port, as kubectl
    )
    time.sleep(5 * INTERVAL_S)
    ports = [p.port for p in objects.core.read_namespaced_service("test", namespace).spec.ports]
    assert 15020 in ports  # not ours to remove
    drift = [e for e in objects.events("test") if e.reason == "DriftCorrected"]
    assert drift == [], [e.message for e in drift]
    assert op.alive()


def test_a_change_to_a_field_we_set_is_still_drift(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    start_operator(namespace)
    objects.create(manifest())
    wait_for(lambda: objects.core.read_namespaced_service("test", namespace), 60, "Service")
    ours = objects.core.read_namespaced_service("test", namespace).spec.ports[0]
    objects.core.patch_namespaced_service(
        "test",
        namespace,
        [{"op": "replace", "path": "/spec/ports/0/targetPort", "value": 9999}],
        _content_type="application/json-patch+json",
    )

    def restored() -> bool:
        port = objects.core.read_namespaced_service("test", namespace).spec.ports[0]
        return bool(port.target_port == ours.target_port)

    wait_for(restored, 30, "our targetPort put back")
    wait_for(  # events are posted in the background, after the apply they report
        lambda: any(e.reason == "DriftCorrected" for e in objects.events("test")),
        30,
        "the DriftCorrected event",
    )
