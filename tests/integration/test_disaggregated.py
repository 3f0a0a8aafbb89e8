"""A disaggregated service's objects on a real API server (1.20, with the LWS CRD's copy):
both roles' workloads, the Service and the PDBs are accepted, read back without drift, and
garbage-collected with their InferenceService.

The operator is not running here (``test_pd_scaling.py`` runs it): the tests apply
``render_bundle``'s objects themselves, as the reconciler applies ``bundle.objects``.
"""

from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.integration.conftest import GROUP, PLURAL, VERSION
from tests.integration.test_lws import admin, ns  # noqa: F401 (fixtures)
from tests.unit.test_render_disaggregated import CASES
from tokenscale.api.manifest import parse_manifests
from tokenscale.kube.client import Kube
from tokenscale.kube.drift import differences
from tokenscale.planning import plan_service
from tokenscale.playground.processes import wait_for
from tokenscale.render import Owner, render_bundle

pytestmark = pytest.mark.integration


def _owner(api: client.ApiClient, namespace: str, text: str) -> tuple[Any, dict[str, Any]]:
    body = yaml.safe_load(text)
    body["metadata"]["namespace"] = namespace
    got = client.CustomObjectsApi(api).create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, body
    )
    return parse_manifests(text)[0], dict(got)


def _read(kube: Kube, obj: dict[str, Any]) -> dict[str, Any] | None:
    where, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
    kind = obj["kind"]
    if kind == "Deployment":
        return kube.read_deployment(where, name)
    if kind == "LeaderWorkerSet":
        return kube.read_leader_worker_set(where, name)
    if kind == "Service":
        return kube.read_service(where, name)
    return kube.read_pdb(where, name)


@pytest.mark.parametrize("case", sorted(CASES))
def test_both_roles_apply_read_back_and_are_collected(
    admin: client.ApiClient,  # noqa: F811
    ns: str,  # noqa: F811
    case: str,
) -> None:
    kube = Kube(admin)
    service, owner = _owner(admin, ns, CASES[case])
    name = service.metadata.name
    plan = plan_service(service.spec, name)
    bundle = render_bundle(name, ns, service.spec, plan, 1, Owner(name, owner["metadata"]["uid"]))
    for obj in bundle.objects:
        kube.apply(obj)
    workloads = [o for o in bundle.objects if o["kind"] in ("Deployment", "LeaderWorkerSet")]
    assert {o["metadata"]["name"] for o in workloads} == {f"{name}-prefill", f"{name}-decode"}
    for obj in bundle.objects:
        live = _read(kube, obj)
        assert live is not None, obj["metadata"]["name"]
        desired = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
        assert differences(desired, live) == [], obj["metadata"]["name"]
    d = plan.disaggregation
    assert d is not None
    assert d.prefill is not None
    assert d.decode is not None
    counts = {f"{name}-prefill": d.prefill.replicas, f"{name}-decode": d.decode.replicas}
    for obj in workloads:
        live = _read(kube, obj)
        assert live is not None
        assert live["spec"]["replicas"] == counts[obj["metadata"]["name"]]
    client.CustomObjectsApi(admin).delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name)
    wait_for(
        lambda: all(_read(kube, o) is None for o in bundle.objects),
        90,
        "both roles' objects collected",
    )
