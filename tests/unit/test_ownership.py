"""Only objects this InferenceService controls are applied; a taken name is a condition.

The reconcile runs against the in-memory API stand-in of test_status_transitions (only the
calls it makes); tests/integration/test_ownership.py runs the same cases on a real API server.
"""

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes.client.exceptions import ApiException

from tests.unit.test_status_transitions import SNAP, FakeKube, _body, _condition, _metrics
from tokenscale.controller.ownership import holder, is_ours, name_conflicts
from tokenscale.controller.reconcile import reconcile
from tokenscale.controller.workload import selector_drift
from tokenscale.kube.drift import differences, managed_by

FOREIGN_SERVICE = {
    "kind": "Service",
    "metadata": {
        "name": "test",
        "labels": {"team": "payments"},
        "managedFields": [{"manager": "kubectl-create", "operation": "Update"}],
    },
    "spec": {"selector": {"app": "payments"}, "ports": [{"port": 443, "protocol": "TCP"}]},
}


def _run(kube: FakeKube) -> list[tuple[str, str, str]]:
    events: list[tuple[str, str, str]] = []
    reconcile(
        kube,
        kube.body,
        "2026-01-01T00:00:00Z",
        lambda *e: events.append(e),
        _metrics(SNAP),
    )
    return events


def test_a_foreign_service_is_left_alone_and_reported_once() -> None:
    kube = FakeKube(_body())
    kube.objects["Service"] = copy.deepcopy(FOREIGN_SERVICE)
    events = _run(kube)
    assert kube.objects["Service"] == FOREIGN_SERVICE  # not adopted, not merged into
    assert "Deployment" not in kube.objects  # nothing applied at all
    ready = _condition(kube.body, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "NameConflict")
    assert "Service test" in ready["message"]
    assert "team=payments" in ready["message"]
    assert "kubectl-create" in ready["message"]
    assert [e[:2] for e in events] == [("Warning", "NameConflict")]
    assert _condition(kube.body, "MetricsAvailable")["status"] == "Unknown"
    assert kube.body["status"]["plan"]["replicas"] >= 1
    assert _run(kube) == []  # the same conflict again: no event storm
    writes = kube.status_writes
    _run(kube)
    assert kube.status_writes == writes  # and no status churn


def test_a_deployment_of_another_inference_service_is_a_conflict_naming_it() -> None:
    """``chat.v2`` derives ``chat-v2-f5101bcf``; a service literally named so collides."""
    kube = FakeKube(_body())
    kube.objects["Deployment"] = {
        "kind": "Deployment",
        "metadata": {
            "name": "test",
            "ownerReferences": [
                {
                    "apiVersion": "tokenscale.io/v1alpha1",
                    "kind": "InferenceService",
                    "name": "chat.v2",
                    "uid": "u-other",
                    "controller": True,
                }
            ],
        },
        "spec": {"replicas": 1},
    }
    before = copy.deepcopy(kube.objects)
    _run(kube)
    assert kube.objects == before
    ready = _condition(kube.body, "Ready")
    assert ready["reason"] == "NameConflict"
    assert "controlled by InferenceService chat.v2" in ready["message"]


def test_the_conflict_clears_when_the_name_is_freed() -> None:
    kube = FakeKube(_body())
    kube.objects["Service"] = copy.deepcopy(FOREIGN_SERVICE)
    _run(kube)
    del kube.objects["Service"]
    _run(kube)
    assert {"Deployment", "Service", "PodDisruptionBudget"} <= set(kube.objects)
    assert _condition(kube.body, "Ready")["reason"] != "NameConflict"
    assert _condition(kube.body, "MetricsAvailable")["status"] == "True"


def test_ownership_is_by_controller_uid() -> None:
    ref = {
        "apiVersion": "tokenscale.io/v1alpha1",
        "kind": "InferenceService",
        "name": "test",
        "uid": "u-1",
        "controller": True,
    }
    ours = {"metadata": {"ownerReferences": [ref]}}
    assert is_ours(ours, "u-1")
    assert not is_ours(ours, "u-2")  # a deleted and re-created namesake
    assert not is_ours({"metadata": {"ownerReferences": [{**ref, "controller": False}]}}, "u-1")
    assert holder({"metadata": {}}) == "no controller"
    desired = [{"kind": "Service", "metadata": {"name": "test"}}]
    assert name_conflicts(desired, [ours], "u-1") == []
    assert name_conflicts(desired, [None], "u-1") == []
    assert len(name_conflicts(desired, [{"metadata": {}}], "u-1")) == 1


def _service(ports: list[dict[str, Any]], managers: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"managedFields": managers},
        "spec": {"selector": {"a": "1"}, "ports": ports},
    }


HTTP = {"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}
METRICS = {"name": "metrics", "port": 9100, "targetPort": 9100, "protocol": "TCP"}


def _applied(*ports: dict[str, Any]) -> dict[str, Any]:
    keys = {
        f'k:{{"port":{p["port"]},"protocol":"{p.get("protocol", "TCP")}"}}': {
            ".": {},
            "f:name": {},
            "f:port": {},
        }
        for p in ports
    }
    return {
        "manager": "tokenscale",
        "operation": "Apply",
        "fieldsV1": {"f:spec": {"f:ports": keys, "f:selector": {"f:a": {}}}},
    }


def test_a_port_another_manager_added_is_not_drift() -> None:
    desired = {"spec": {"selector": {"a": "1"}, "ports": [{"name": "http", "port": 8000}]}}
    other = {"manager": "istio", "operation": "Update", "fieldsV1": {}}
    live = _service([HTTP, METRICS], [_applied(HTTP), other])
    owned = managed_by(live, "tokenscale")
    assert differences(desired, live, owned=owned) == []
    # a port we applied earlier and no longer render is ours to remove: drift
    stale = _service([HTTP, METRICS], [_applied(HTTP, METRICS)])
    assert differences(desired, stale, owned=managed_by(stale, "tokenscale")) == [
        ".spec.ports[port=9100,protocol=TCP]"
    ]
    # our port gone or changed: drift
    gone = _service([METRICS], [_applied(HTTP), other])
    assert differences(desired, gone, owned=managed_by(gone, "tokenscale")) == [
        ".spec.ports[port=8000,protocol=TCP]"
    ]
    renamed = _service([{**HTTP, "name": "web"}], [_applied(HTTP)])
    assert differences(desired, renamed, owned=managed_by(renamed, "tokenscale")) == [
        ".spec.ports[port=8000,protocol=TCP].name"
    ]


def test_a_selector_key_another_manager_added_is_not_drift() -> None:
    desired = {"kind": "Service", "spec": {"selector": {"a": "1"}}}
    live = {"spec": {"selector": {"a": "1", "mesh": "on"}}}
    assert selector_drift(desired, live, {"f:spec": {"f:selector": {"f:a": {}}}}) == []
    mine = {"f:spec": {"f:selector": {"f:a": {}, "f:mesh": {}}}}
    assert selector_drift(desired, live, mine) == [".spec.selector"]


class RefusingKube(FakeKube):
    """Refuses every Deployment as the API server does an immutable-field change."""

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        if obj["kind"] == "Deployment":
            raise ApiException(
                status=422,
                reason="Unprocessable Entity",
                body='{"kind":"Status","message":"Deployment.apps \\"test\\" is invalid: '
                'spec.selector: Invalid value: field is immutable","code":422}',
            )
        return super().apply(obj)


def test_a_refused_object_is_reported_in_status_not_left_empty() -> None:
    kube = RefusingKube(_body())
    with pytest.raises(ApiException):
        _run(kube)  # the caller posts one ApplyFailed event per distinct error and retries
    ready = _condition(kube.body, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ApplyFailed")
    assert "the API server refused Deployment test: 422 Unprocessable Entity" in ready["message"]
    assert "field is immutable" in ready["message"]
    assert kube.body["status"]["plan"]["replicas"] >= 1


PORT = st.fixed_dictionaries(
    {"port": st.integers(1, 65535), "protocol": st.sampled_from(["TCP", "UDP"])},
    optional={"name": st.sampled_from(["http", "metrics", "grpc"])},
)


@given(
    st.lists(PORT, max_size=4, unique_by=lambda p: (p["port"], p["protocol"])),
    st.lists(PORT, max_size=4, unique_by=lambda p: (p["port"], p["protocol"])),
)
@settings(max_examples=200, deadline=None)
def test_items_others_add_are_never_drift_and_ours_always_are(
    ours: list[dict[str, Any]], theirs: list[dict[str, Any]]
) -> None:
    """Server-side apply's merge of a list map: desired ⊆ live by key, whatever else is there;
    any extra item our manager owns is drift."""
    keys = {(p["port"], p["protocol"]) for p in ours}
    extra = [p for p in theirs if (p["port"], p["protocol"]) not in keys]
    live = _service(ours + extra, [_applied(*ours)])
    desired = {"spec": {"selector": {"a": "1"}, "ports": ours}}
    assert differences(desired, live, owned=managed_by(live, "tokenscale")) == []
    if extra:  # the same extras, applied by us earlier and no longer rendered
        stale = _service(ours + extra, [_applied(*ours, *extra)])
        found = differences(desired, stale, owned=managed_by(stale, "tokenscale"))
        assert len(found) == len(extra)


def test_an_infeasible_spec_does_not_report_a_foreign_workloads_replicas() -> None:
    kube = FakeKube(_body(model={"name": "meta-llama/Llama-3.1-405B", "catalog": "llama-3.1-405b"}))
    kube.body["spec"]["hardware"] = {"gpu": "L4-24GB", "tensorParallelSize": 1}
    kube.objects["Deployment"] = {
        "kind": "Deployment",
        "metadata": {"name": "test"},
        "spec": {"replicas": 9},
        "status": {"readyReplicas": 9},
    }
    _run(kube)
    assert _condition(kube.body, "PlanFeasible")["status"] == "False"
    assert kube.body["status"]["replicas"] == 0
    assert kube.body["status"]["readyReplicas"] == 0
