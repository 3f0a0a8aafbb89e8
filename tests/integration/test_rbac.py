"""The chart's RBAC on a real API server with --authorization-mode=RBAC.

The operator runs with the identity of the chart's ServiceAccount (a static token for the
user ``system:serviceaccount:tokenscale-system:ts-tokenscale``, which RBAC bindings to that
ServiceAccount match), reconciles end to end, and is denied what it must not do.
"""

import contextlib
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from tests.helpers import ROOT, manifest
from tests.integration.conftest import CRD_FILE, GROUP, LWS_CRD, PLURAL, VERSION
from tests.unit.test_lws import LAYOUTS, _pinned
from tokenscale.kube.client import Kube
from tokenscale.playground.cluster import Cluster
from tokenscale.playground.processes import Process, wait_for
from tokenscale.render import render_bundle

pytestmark = pytest.mark.integration

SA_NAMESPACE, SA_NAME = "tokenscale-system", "ts-tokenscale"
SA_TOKEN = "tokenscale-operator-sa-token"  # a throwaway credential for the test cluster
SA_USER = f"system:serviceaccount:{SA_NAMESPACE}:{SA_NAME}"


@pytest.fixture(scope="module")
def rbac_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(
        tmp_path_factory.mktemp("rbac-cluster"),
        authorization="RBAC",
        extra_tokens={SA_TOKEN: (SA_USER, "system:serviceaccounts")},
        crd_files=[CRD_FILE, LWS_CRD],
    )
    try:
        c.start()
        yield c
    finally:
        c.stop()


def _helm() -> str:
    out = subprocess.run(
        ["bash", str(ROOT / "scripts" / "helm-bin.sh")], check=True, capture_output=True, text=True
    )
    return out.stdout.strip().splitlines()[-1]


def _install_rbac(admin: client.ApiClient, values: dict[str, Any], tmp: Path) -> None:
    """Apply the chart's ServiceAccount and RBAC objects as rendered (helm template)."""
    vals = tmp / "values.yaml"
    vals.write_text(yaml.safe_dump(values))
    out = subprocess.run(
        [
            _helm(),
            "template",
            "ts",
            str(ROOT / "charts" / "tokenscale"),
            "--namespace",
            SA_NAMESPACE,
            "-f",
            str(vals),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    rbac_api, core = client.RbacAuthorizationV1Api(admin), client.CoreV1Api(admin)
    for doc in (d for d in yaml.safe_load_all(out.stdout) if d):
        kind, ns = doc["kind"], doc["metadata"].get("namespace")
        create = {
            "ServiceAccount": lambda d, n=ns: core.create_namespaced_service_account(n, d),
            "ClusterRole": rbac_api.create_cluster_role,
            "ClusterRoleBinding": rbac_api.create_cluster_role_binding,
            "Role": lambda d, n=ns: rbac_api.create_namespaced_role(n, d),
            "RoleBinding": lambda d, n=ns: rbac_api.create_namespaced_role_binding(n, d),
        }.get(kind)
        if create is not None:
            try:
                create(doc)
            except ApiException as exc:  # installed by an earlier test: the same object
                if exc.status != 409:
                    raise


def _namespace(admin: client.ApiClient) -> str:
    name = f"r-{uuid.uuid4().hex[:6]}"
    client.CoreV1Api(admin).create_namespace({"metadata": {"name": name}})
    return name


def test_operator_reconciles_with_only_the_charts_rbac(
    rbac_cluster: Cluster, tmp_path: Path
) -> None:
    admin = config.new_client_from_config(config_file=str(rbac_cluster.kubeconfig()))
    client.CoreV1Api(admin).create_namespace({"metadata": {"name": SA_NAMESPACE}})
    _install_rbac(admin, {}, tmp_path)
    ns = _namespace(admin)
    sa_config = rbac_cluster.kubeconfig(SA_TOKEN, "operator")
    op: Process = rbac_cluster.operator("operator-rbac", None, 2, tmp_path, kubeconfig=sa_config)
    try:
        body = manifest()
        body["metadata"]["namespace"] = ns
        client.CustomObjectsApi(admin).create_namespaced_custom_object(
            GROUP, VERSION, ns, PLURAL, body
        )
        apps = client.AppsV1Api(admin)

        def reconciled() -> bool:
            if not op.alive():
                raise RuntimeError(op.tail())
            got = client.CustomObjectsApi(admin).get_namespaced_custom_object(
                GROUP, VERSION, ns, PLURAL, "test"
            )
            return bool((got.get("status") or {}).get("plan")) and bool(
                apps.list_namespaced_deployment(ns).items
            )

        wait_for(reconciled, 60, "reconciled under RBAC")
        wait_for(  # events are posted in the background, after the writes they report
            lambda: any(
                e.reason == "Created"
                for e in client.CoreV1Api(admin).list_namespaced_event(ns).items
            ),
            30,
            "the Created event",
        )
        assert "forbidden" not in op.log_path.read_text().lower()
    finally:
        op.stop()

    as_operator = config.new_client_from_config(config_file=str(sa_config))
    with pytest.raises(ApiException) as denied:
        client.CoreV1Api(as_operator).list_namespaced_secret(ns)
    assert denied.value.status == 403
    with pytest.raises(ApiException) as denied:
        client.CoreV1Api(as_operator).delete_namespace(ns)
    assert denied.value.status == 403


def test_ha_install_elects_a_leader_with_only_the_charts_rbac(
    rbac_cluster: Cluster, tmp_path: Path
) -> None:
    """replicaCount 2: the chart's Role on leases in its own namespace is all the election
    needs (get, create, update), next to the cluster-wide reconcile rules."""
    admin = config.new_client_from_config(config_file=str(rbac_cluster.kubeconfig()))
    with contextlib.suppress(ApiException):
        client.CoreV1Api(admin).create_namespace({"metadata": {"name": SA_NAMESPACE}})
    _install_rbac(admin, {"replicaCount": 2}, tmp_path)
    ns = _namespace(admin)
    sa_config = rbac_cluster.kubeconfig(SA_TOKEN, "operator")
    op = rbac_cluster.operator(
        "operator-rbac-ha",
        None,
        2,
        tmp_path,
        "--leader-elect",
        "--leader-election-namespace",
        SA_NAMESPACE,
        "--leader-election-identity",
        "ts-tokenscale-pod-a",
        "--leader-election-name",
        "ts-tokenscale",
        kubeconfig=sa_config,
    )
    try:
        body = manifest()
        body["metadata"]["namespace"] = ns
        client.CustomObjectsApi(admin).create_namespaced_custom_object(
            GROUP, VERSION, ns, PLURAL, body
        )

        def reconciled() -> bool:
            if not op.alive():
                raise RuntimeError(op.tail())
            return bool(client.AppsV1Api(admin).list_namespaced_deployment(ns).items)

        wait_for(reconciled, 60, "reconciled by the elected leader under RBAC")
        lease = client.CoordinationV1Api(admin).read_namespaced_lease("ts-tokenscale", SA_NAMESPACE)
        assert lease.spec.holder_identity == "ts-tokenscale-pod-a"
        log = op.log_path.read_text().lower()
        assert "forbidden" not in log
        assert "cannot reach the lease" not in log
    finally:
        op.stop()


def test_namespaced_install_cannot_touch_other_namespaces(
    rbac_cluster: Cluster, tmp_path: Path
) -> None:
    admin = config.new_client_from_config(config_file=str(rbac_cluster.kubeconfig()))
    mine, other = _namespace(admin), _namespace(admin)
    # replace a cluster-wide install (if an earlier test made one) by the namespaced one
    rbac_api, core = client.RbacAuthorizationV1Api(admin), client.CoreV1Api(admin)
    with contextlib.suppress(ApiException):
        rbac_api.delete_cluster_role_binding(SA_NAME)
    with contextlib.suppress(ApiException):
        core.create_namespace({"metadata": {"name": SA_NAMESPACE}})
    with contextlib.suppress(ApiException):
        core.create_namespaced_service_account(SA_NAMESPACE, {"metadata": {"name": SA_NAME}})
    with contextlib.suppress(ApiException):
        rbac_api.delete_cluster_role(SA_NAME)
    _install_rbac(
        admin,
        {"watchNamespaces": [mine], "serviceAccount": {"create": False, "name": SA_NAME}},
        tmp_path,
    )
    as_operator = client.AppsV1Api(
        config.new_client_from_config(
            config_file=str(rbac_cluster.kubeconfig(SA_TOKEN, "operator"))
        )
    )
    # the API server's authorizer sees a new RoleBinding a moment after it is written (its RBAC
    # cache is an informer): wait until the namespace it grants is readable, then the denial of
    # the other namespace is RBAC's answer and not the binding's delay (a busy CI machine once
    # answered 403 on the first read)
    wait_for(
        lambda: as_operator.list_namespaced_deployment(mine).items == [],
        30,
        "the namespaced Role bound for the operator",
    )
    with pytest.raises(ApiException) as denied:
        as_operator.list_namespaced_deployment(other)
    assert denied.value.status == 403
    with pytest.raises(ApiException) as denied:
        as_operator.create_namespaced_deployment(
            other,
            {
                "metadata": {"name": "x"},
                "spec": {
                    "selector": {"matchLabels": {"a": "b"}},
                    "template": {
                        "metadata": {"labels": {"a": "b"}},
                        "spec": {"containers": [{"name": "c", "image": "i"}]},
                    },
                },
            },
        )
    assert denied.value.status == 403


def test_the_charts_rbac_lets_the_operator_own_leader_worker_sets(
    rbac_cluster: Cluster, tmp_path: Path
) -> None:
    """Apply, read, replace (delete) an LWS and the Deployment it replaces, as the operator."""
    admin = config.new_client_from_config(config_file=str(rbac_cluster.kubeconfig()))
    with contextlib.suppress(ApiException):
        client.CoreV1Api(admin).create_namespace({"metadata": {"name": SA_NAMESPACE}})
    with contextlib.suppress(ApiException):
        client.RbacAuthorizationV1Api(admin).delete_cluster_role_binding(SA_NAME)
    with contextlib.suppress(ApiException):
        client.RbacAuthorizationV1Api(admin).delete_cluster_role(SA_NAME)
    with contextlib.suppress(ApiException):
        client.CoreV1Api(admin).delete_namespaced_service_account(SA_NAME, SA_NAMESPACE)
    _install_rbac(admin, {}, tmp_path)
    ns = _namespace(admin)
    operator = Kube(
        config.new_client_from_config(
            config_file=str(rbac_cluster.kubeconfig(SA_TOKEN, "operator"))
        )
    )
    service, plan = _pinned(*LAYOUTS["llama-3.1-405b-h100-tp8-pp2"])
    objects = render_bundle("big", ns, service.spec, plan, 2).objects
    for obj in objects:
        operator.apply(obj)
    assert operator.read_leader_worker_set(ns, "big") is not None
    operator.delete_leader_worker_set(ns, "big")
    wait_for(lambda: operator.read_leader_worker_set(ns, "big") is None, 30, "LWS deleted")
    single = render_bundle(
        "big",
        ns,
        service.spec,
        plan.model_copy(
            update={"nodes_per_replica": 1, "pipeline_parallel_size": 1, "gpus_per_replica": 8}
        ),
        1,
    ).objects[0]
    operator.apply(single)
    operator.delete_deployment(ns, "big")
