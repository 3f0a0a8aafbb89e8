"""``spec.scaling.schedule`` beyond direct mode with metrics, on a real API server with a real
operator process (plan-only: no metrics source): a KEDA ScaledObject's bounds follow the open
window, plan-only decisions honour it, and a key the window does not have (``timeZone``) is
named instead of pruned and ignored."""

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from tests.helpers import manifest
from tests.integration.conftest import Objects
from tests.integration.test_workload_ref import _alive
from tokenscale.playground.processes import Process, wait_for
from tokenscale.render.keda import GROUP, PLURAL, VERSION

pytestmark = pytest.mark.integration
#: Open at every minute for an hour: in force whenever the test runs.
ALWAYS = {"name": "busy", "cron": "* * * * *", "durationSeconds": 3600}


def _scaled_object(objects: Objects, name: str) -> dict[str, Any] | None:
    try:
        got = objects.custom.get_namespaced_custom_object(GROUP, VERSION, objects.ns, PLURAL, name)
    except client.exceptions.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return dict(got)


def test_a_scaled_objects_bounds_follow_the_open_window(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    op = start_operator(namespace)
    keda = {"serverAddress": "http://prometheus.monitoring:9090"}
    window = {**ALWAYS, "minReplicas": 6, "maxReplicas": 8}
    scaling = {
        "actuation": "keda",
        "keda": keda,
        "minReplicas": 1,
        "maxReplicas": 4,
        "schedule": [window],
    }
    objects.create(manifest(scaling=scaling))

    def bounded() -> bool:  # the status is written after the ScaledObject
        _alive(op)
        status = objects.get("test").get("status") or {}
        return _scaled_object(objects, "test") is not None and "decidedReplicas" in status

    wait_for(bounded, 60, "the ScaledObject and the status")
    so = _scaled_object(objects, "test")
    assert so is not None
    assert (so["spec"]["minReplicaCount"], so["spec"]["maxReplicaCount"]) == (6, 8)
    assert objects.get("test")["status"]["decidedReplicas"] == 6


def test_plan_only_honours_the_open_window(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    op = start_operator(namespace)
    window = {**ALWAYS, "minReplicas": 6, "maxReplicas": 8}
    objects.create(manifest(scaling={"minReplicas": 1, "maxReplicas": 4, "schedule": [window]}))

    def at_six() -> bool:  # the status is written after the Deployment
        _alive(op)
        d = objects.deployment("test")
        status = objects.get("test").get("status") or {}
        return d is not None and d.spec.replicas == 6 and "decision" in status

    wait_for(at_six, 60, "the Deployment at the window's floor, 6")
    decision = objects.get("test")["status"]["decision"]
    assert decision["source"] == "plan"
    assert "window busy open" in decision["reason"], decision


def test_a_time_zone_the_window_does_not_have_is_named(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    """Sent without client-side validation (as ``kubectl apply --validate=false`` does): the
    API server keeps the window's unknown key and the operator names it, instead of running the
    window by its cron in UTC as if no zone had been written."""
    op = start_operator(namespace)
    window = {**ALWAYS, "minReplicas": 2, "timeZone": "Mars/Olympus"}
    objects.create(manifest(scaling={"schedule": [window]}))

    def refused() -> bool:
        _alive(op)
        return (objects.condition("test", "PlanFeasible") or {}).get("reason") == "InvalidSpec"

    wait_for(refused, 60, "PlanFeasible=False InvalidSpec")
    message = (objects.condition("test", "PlanFeasible") or {})["message"]
    assert "spec.scaling.schedule[0].timeZone" in message
    assert objects.deployment("test") is None
