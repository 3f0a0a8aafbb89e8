"""LeaderWorkerSets on a real API server (1.20, with the LWS CRD's 1.20-compatible copy).

No LWS controller runs here (it is a Go program built from modules we cannot fetch): the tests
write the LWS status themselves, as the controller would (``replicas``, ``readyReplicas``,
``conditions``), and say so where they do. The controller manager's garbage collector is real:
it knows the LWS type because the CRD is installed before it starts.
"""

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from tests.helpers import ROOT
from tests.integration.conftest import CRD_FILE, GROUP, PLURAL, VERSION
from tests.unit.test_lws import LAYOUTS, _pinned
from tokenscale.kube import lws
from tokenscale.kube.client import Kube
from tokenscale.kube.drift import differences
from tokenscale.playground.cluster import Cluster
from tokenscale.playground.processes import wait_for
from tokenscale.render import Owner, render_bundle

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def admin(api: client.ApiClient) -> client.ApiClient:
    """The session's API server, which serves the LWS CRD's copy (conftest.LWS_CRD)."""
    return api


@pytest.fixture
def ns(admin: client.ApiClient) -> Iterator[str]:
    name = f"l-{uuid.uuid4().hex[:8]}"
    client.CoreV1Api(admin).create_namespace({"metadata": {"name": name}})
    yield name
    client.CoreV1Api(admin).delete_namespace(name)


def _inference_service(admin: client.ApiClient, ns: str, name: str) -> dict[str, Any]:
    """An InferenceService to own the objects (the operator is not running in these tests)."""
    patch, _ = LAYOUTS["llama-3.1-405b-h100-tp8-pp2"]
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            **patch,
            "workload": {
                "rps": {"mean": 2},
                "inputTokens": {"mean": 2000},
                "outputTokens": {"mean": 500},
            },
        },
    }
    got = client.CustomObjectsApi(admin).create_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, body
    )
    return dict(got)


def _bundle(ns: str, name: str, uid: str, replicas: int) -> list[dict[str, Any]]:
    service, plan = _pinned(*LAYOUTS["llama-3.1-405b-h100-tp8-pp2"])
    return render_bundle(name, ns, service.spec, plan, replicas, Owner(name, uid)).objects


def _write_status(admin: client.ApiClient, ns: str, name: str, ready: int, total: int) -> None:
    """What the LWS controller would write (it does not run here)."""
    status = {
        "replicas": total,
        "readyReplicas": ready,
        "conditions": [
            {
                "type": "Available",
                "status": "True" if ready == total else "False",
                "reason": "AllGroupsReady" if ready == total else "GroupsNotReady",
                "message": f"{ready}/{total} groups ready",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    }
    client.CustomObjectsApi(admin).patch_namespaced_custom_object_status(
        lws.GROUP, lws.VERSION, ns, lws.PLURAL, name, {"status": status}
    )


def test_the_lws_crd_copy_is_served_with_its_scale_subresource(admin: client.ApiClient) -> None:
    got = client.ApiextensionsV1Api(admin).read_custom_resource_definition(
        f"{lws.PLURAL}.{lws.GROUP}"
    )
    version = next(v for v in got.spec.versions if v.name == lws.VERSION)
    assert version.subresources.scale.spec_replicas_path == ".spec.replicas"
    assert version.subresources.status is not None


def test_apply_read_drift_scale_status_and_garbage_collection(
    admin: client.ApiClient, ns: str
) -> None:
    kube = Kube(admin)
    owner = _inference_service(admin, ns, "big")
    uid = owner["metadata"]["uid"]
    objects = _bundle(ns, "big", uid, replicas=2)
    for obj in objects:
        kube.apply(obj)
    desired = objects[0]
    live = kube.read_leader_worker_set(ns, "big")
    assert live is not None
    assert live["metadata"]["ownerReferences"][0]["uid"] == uid
    strip = {k: v for k, v in desired.items() if k not in ("apiVersion", "kind")}
    assert differences(strip, live) == []
    assert live["spec"]["leaderWorkerTemplate"]["size"] == 2

    # a manual scale through the scale subresource is drift; applying again undoes it
    custom = client.CustomObjectsApi(admin)
    custom.patch_namespaced_custom_object_scale(
        lws.GROUP, lws.VERSION, ns, lws.PLURAL, "big", {"spec": {"replicas": 7}}
    )
    live = kube.read_leader_worker_set(ns, "big")
    assert live is not None
    assert differences(strip, live) == [".spec.replicas"]
    kube.apply(desired)
    scale = custom.get_namespaced_custom_object_scale(lws.GROUP, lws.VERSION, ns, lws.PLURAL, "big")
    assert scale["spec"]["replicas"] == 2

    # scaling is a new spec.replicas (the hash, and so the pods, stay)
    kube.apply(_bundle(ns, "big", uid, replicas=3)[0])
    scale = custom.get_namespaced_custom_object_scale(lws.GROUP, lws.VERSION, ns, lws.PLURAL, "big")
    assert scale["spec"]["replicas"] == 3

    # a field someone else sets on the template is drift too
    custom.patch_namespaced_custom_object(
        lws.GROUP,
        lws.VERSION,
        ns,
        lws.PLURAL,
        "big",
        {"spec": {"leaderWorkerTemplate": {"restartPolicy": "None"}}},
    )
    live = kube.read_leader_worker_set(ns, "big")
    assert live is not None
    assert ".spec.leaderWorkerTemplate.restartPolicy" in differences(strip, live)

    # status as the LWS controller writes it (simulated: no controller runs here)
    _write_status(admin, ns, "big", ready=1, total=2)
    live = kube.read_leader_worker_set(ns, "big")
    assert live is not None
    assert live["status"]["readyReplicas"] == 1

    # the owner goes, the garbage collector takes the LWS (and the Service, the PDB)
    custom.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "big")
    wait_for(lambda: kube.read_leader_worker_set(ns, "big") is None, 60, "LWS collected")


def test_delete_is_idempotent_and_a_missing_api_reads_as_none(
    admin: client.ApiClient, ns: str
) -> None:
    kube = Kube(admin)
    kube.delete_leader_worker_set(ns, "nothing")  # absent: no error
    kube.delete_deployment(ns, "nothing")
    assert kube.read_leader_worker_set(ns, "nothing") is None


def test_apply_without_the_lws_api_says_what_to_install(tmp_path: Path) -> None:
    bare = Cluster(tmp_path / "bare", crd_files=[CRD_FILE])
    try:
        bare.start()
        api = config.new_client_from_config(config_file=str(bare.kubeconfig()))
        client.CoreV1Api(api).create_namespace({"metadata": {"name": "x"}})
        kube = Kube(api)
        assert kube.read_leader_worker_set("x", "big") is None
        with pytest.raises(lws.LwsNotInstalledError, match="install LeaderWorkerSet"):
            kube.apply(_bundle("x", "big", "uid-1", replicas=1)[0])
    finally:
        bare.stop()


# ---- the operator end to end (needs the planner to choose a multi-node layout) ------------
EXAMPLE_405B = ROOT / "deploy" / "examples" / "llama-3.1-405b-h100-bf16.yaml"


def _example(ns: str) -> dict[str, Any]:
    body: dict[str, Any] = yaml.safe_load(EXAMPLE_405B.read_text())
    body["metadata"]["namespace"] = ns
    body["spec"]["scaling"] = {"minReplicas": 1, "maxReplicas": 8, "replicas": 2}
    return body


def _events(admin: client.ApiClient, ns: str, name: str) -> list[Any]:
    items = client.CoreV1Api(admin).list_namespaced_event(ns).items
    return [e for e in items if e.involved_object.name == name]


def _said(admin: client.ApiClient, ns: str, reason: str, part: str = "") -> None:
    """Wait for an event on the service: they are posted in the background (a reconcile does
    not wait for them), so what it did can be seen before its event is."""
    wait_for(
        lambda: any(
            e.reason == reason and part in (e.message or "")
            for e in _events(admin, ns, "llama-405b")
        ),
        30,
        f"event {reason} {part}".strip(),
    )


def _condition(custom: client.CustomObjectsApi, ns: str, ctype: str) -> dict[str, Any]:
    got = custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "llama-405b")
    conditions = (got.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == ctype), {})


def test_operator_runs_a_multi_node_replica_as_an_lws_group(
    cluster: Cluster, admin: client.ApiClient, ns: str, tmp_path: Path
) -> None:
    kube, custom = Kube(admin), client.CustomObjectsApi(admin)
    op = cluster.operator("operator-lws", ns, 1, tmp_path)
    try:
        custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, _example(ns))

        def live() -> dict[str, Any] | None:
            if not op.alive():
                raise RuntimeError(op.tail())
            return kube.read_leader_worker_set(ns, "llama-405b")

        wait_for(lambda: live() is not None, 60, "LWS created")
        got = live()
        assert got is not None
        owner = custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "llama-405b")
        assert got["metadata"]["ownerReferences"][0]["uid"] == owner["metadata"]["uid"]
        assert got["spec"]["replicas"] == 2
        assert got["spec"]["leaderWorkerTemplate"]["size"] == 2
        assert client.AppsV1Api(admin).list_namespaced_deployment(ns).items == []
        core = client.CoreV1Api(admin)

        def service_selector() -> dict[str, str] | None:
            found = core.list_namespaced_service(
                ns, field_selector="metadata.name=llama-405b"
            ).items
            return dict(found[0].spec.selector or {}) if found else None

        # the bundle applies the workload first, the Service right after it
        wait_for(lambda: service_selector() is not None, 60, "Service created")
        assert (service_selector() or {})["tokenscale.io/role"] == "leader"
        _said(admin, ns, "Created")
        # not available until the LWS controller says so (we play it here)
        wait_for(
            lambda: _condition(custom, ns, "DeploymentAvailable").get("status") == "False",
            30,
            "DeploymentAvailable False",
        )
        _write_status(admin, ns, "llama-405b", ready=2, total=2)
        wait_for(
            lambda: _condition(custom, ns, "DeploymentAvailable").get("status") == "True",
            30,
            "DeploymentAvailable from the LWS status",
        )
        status = custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "llama-405b")
        assert status["status"]["readyReplicas"] == 2

        # a manual scale through the LWS scale subresource is undone
        custom.patch_namespaced_custom_object_scale(
            lws.GROUP, lws.VERSION, ns, lws.PLURAL, "llama-405b", {"spec": {"replicas": 5}}
        )
        wait_for(lambda: (live() or {})["spec"]["replicas"] == 2, 30, "drift undone")
        _said(admin, ns, "DriftCorrected", "5→2")
        # a first foreign change is undone and noted (the status follows the undo), not held as
        # a second writer's
        wait_for(
            lambda: _condition(custom, ns, "ReplicasContested").get("reason") == "UndoneOnce",
            30,
            "ReplicasContested UndoneOnce",
        )
        assert _condition(custom, ns, "ReplicasContested")["status"] == "Unknown"

        # scaling the InferenceService scales the groups through spec.replicas
        custom.patch_namespaced_custom_object(
            GROUP, VERSION, ns, PLURAL, "llama-405b", {"spec": {"scaling": {"replicas": 3}}}
        )
        wait_for(lambda: (live() or {})["spec"]["replicas"] == 3, 30, "scaled to 3")
        scale = custom.get_namespaced_custom_object_scale(
            lws.GROUP, lws.VERSION, ns, lws.PLURAL, "llama-405b"
        )
        assert scale["spec"]["replicas"] == 3

        # FP8 fits one node: the LWS is replaced by a Deployment, with one event
        custom.patch_namespaced_custom_object(
            GROUP, VERSION, ns, PLURAL, "llama-405b", {"spec": {"model": {"weightDtype": "fp8"}}}
        )
        apps = client.AppsV1Api(admin)
        wait_for(lambda: len(apps.list_namespaced_deployment(ns).items) == 1, 60, "Deployment")
        wait_for(lambda: live() is None, 60, "LWS removed")
        _said(admin, ns, "WorkloadReplaced")
        wait_for(
            lambda: "tokenscale.io/role" not in (service_selector() or {"tokenscale.io/role": ""}),
            60,
            "leader-only selector gone",
        )
        assert "forbidden" not in op.log_path.read_text().lower()
    finally:
        op.stop()
