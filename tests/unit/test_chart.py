"""The Helm chart with the real `helm` binary: lint, render, validate, RBAC, schema, dashboard."""

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.helpers import ROOT
from tokenscale.controller.telemetry import Telemetry
from tokenscale.kube import rbac

CHART = ROOT / "charts" / "tokenscale"
VALUE_SETS: dict[str, dict[str, Any]] = {
    "default": {},
    "namespaced": {"watchNamespaces": ["team-a", "team-b"]},
    "ha": {"replicaCount": 2},
    "shards": {
        "shards": [
            {"name": "a", "namespaces": ["team-a", "team-b"]},
            {"name": "b", "namespaces": ["team-c"]},
        ]
    },
    "monitoring": {
        "prometheus": {
            "url": "https://prometheus.monitoring:9090",
            "bearerTokenSecret": {"name": "prom-token", "key": "token"},
            "caConfigMap": {"name": "prom-ca", "key": "ca.crt"},
        },
        "metrics": {
            "serviceMonitor": {"enabled": True},
            "podMonitor": {"enabled": True},
            "endpointPickerMonitor": {
                "enabled": True,
                "matchLabels": {"inferencepool": "chat-epp"},
                "bearerTokenSecret": {"name": "epp-reader", "key": "token"},
            },
        },
        "grafanaDashboard": {"enabled": True},
        "prometheusRules": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
    },
}
CUSTOM_KINDS = {"ServiceMonitor", "PodMonitor", "PrometheusRule"}


@pytest.fixture(scope="module")
def helm() -> str:
    out = subprocess.run(
        ["bash", str(ROOT / "scripts" / "helm-bin.sh")], check=True, capture_output=True, text=True
    )
    return out.stdout.strip().splitlines()[-1]


def _values_file(tmp_path: Path, values: dict[str, Any]) -> Path:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    return path


def _render(helm: str, tmp_path: Path, values: dict[str, Any]) -> list[dict[str, Any]]:
    out = subprocess.run(
        [
            helm,
            "template",
            "ts",
            str(CHART),
            "--namespace",
            "tokenscale-system",
            "--include-crds",
            "-f",
            str(_values_file(tmp_path, values)),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return [d for d in yaml.safe_load_all(out.stdout) if d]


@pytest.mark.parametrize("name", list(VALUE_SETS))
def test_lint_strict(helm: str, tmp_path: Path, name: str) -> None:
    done = subprocess.run(
        [helm, "lint", "--strict", str(CHART), "-f", str(_values_file(tmp_path, VALUE_SETS[name]))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("version", ["1.29.0", "1.33.0"])
@pytest.mark.parametrize("name", list(VALUE_SETS))
def test_every_rendered_object_validates(
    helm: str, tmp_path: Path, name: str, version: str
) -> None:
    docs = _render(helm, tmp_path, VALUE_SETS[name])
    kinds = {d["kind"] for d in docs}
    assert {"Deployment", "ServiceAccount", "ClusterRole", "CustomResourceDefinition"} <= kinds
    for doc in docs:
        if doc["kind"] not in CUSTOM_KINDS:
            kubernetes_validate.validate(doc, version, strict=True)


def test_operator_pod_is_locked_down(helm: str, tmp_path: Path) -> None:
    dep = next(d for d in _render(helm, tmp_path, {}) if d["kind"] == "Deployment")
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]["securityContext"]
    assert c == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert "--all-namespaces" in pod["containers"][0]["args"]


def _rules(docs: list[dict[str, Any]], kind: str) -> set[tuple[str, str, tuple[str, ...]]]:
    out = set()
    for doc in docs:
        if doc["kind"] != kind:
            continue
        for rule in doc["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    out.add((group, resource, tuple(rule["verbs"])))
    return out


def test_cluster_rbac_is_exactly_what_the_code_calls(helm: str, tmp_path: Path) -> None:
    docs = _render(helm, tmp_path, {})
    want = set(rbac.CLUSTER_READ + rbac.ALL_NAMESPACES + rbac.NAMESPACED)
    assert _rules(docs, "ClusterRole") == want
    assert not _rules(docs, "Role")
    for doc in docs:
        for rule in doc.get("rules", []):
            assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"]


def test_namespaced_rbac_uses_roles(helm: str, tmp_path: Path) -> None:
    docs = _render(helm, tmp_path, VALUE_SETS["namespaced"])
    assert _rules(docs, "ClusterRole") == set(rbac.CLUSTER_READ)
    roles = [d for d in docs if d["kind"] == "Role"]
    assert sorted(r["metadata"]["namespace"] for r in roles) == ["team-a", "team-b"]
    assert _rules(docs, "Role") == set(rbac.NAMESPACED)
    args = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"][
        "containers"
    ][0]["args"]
    assert "--namespace=team-a" in args
    assert "--all-namespaces" not in args


def test_ha_adds_leader_election_and_secrets_need_a_value(helm: str, tmp_path: Path) -> None:
    docs = _render(helm, tmp_path, VALUE_SETS["ha"])
    roles = [d for d in docs if d["kind"] == "Role"]
    assert [r["metadata"]["namespace"] for r in roles] == ["tokenscale-system"]
    assert _rules(docs, "Role") == set(rbac.LEADER_ELECTION)
    assert not any(r[0] == "kopf.dev" for r in _rules(docs, "ClusterRole"))
    dep = next(d for d in docs if d["kind"] == "Deployment")
    assert dep["spec"]["replicas"] == 2
    container = dep["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    assert "--leader-elect" in args
    assert {"--lease-duration=15", "--renew-deadline=10", "--retry-period=2"} <= set(args)
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]}
    assert env == {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"}
    single = next(d for d in _render(helm, tmp_path, {}) if d["kind"] == "Deployment")
    assert single["spec"]["replicas"] == 1  # the default stays one replica, no election
    assert "--leader-elect" not in single["spec"]["template"]["spec"]["containers"][0]["args"]
    assert not any(r[1] == "secrets" for r in _rules(docs, "ClusterRole"))
    with_secrets = _render(helm, tmp_path, {"rbac": {"readSecrets": True}})
    assert set(rbac.SECRETS) <= _rules(with_secrets, "ClusterRole")


def test_chart_ships_the_generated_crd_itself(helm: str, tmp_path: Path) -> None:
    link = CHART / "crds" / "inferenceservices.tokenscale.io.yaml"
    assert link.resolve() == (ROOT / "crds" / "inferenceservices.tokenscale.io.yaml").resolve()
    crds = {
        d["metadata"]["name"]: d
        for d in _render(helm, tmp_path, {})
        if d["kind"] == "CustomResourceDefinition"
    }
    assert crds["inferenceservices.tokenscale.io"] == yaml.safe_load(link.read_text())
    assert set(crds) == {"inferenceservices.tokenscale.io"}  # HA needs no CRD of its own


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"replicaCount": 0}, "replicaCount"),
        ({"interval": -5}, "interval"),
        ({"prometheus": {"url": "ftp://nope"}}, "url"),
        ({"logLevel": "LOUD"}, "logLevel"),
        ({"watchNamespaces": ["Bad_Name"]}, "watchNamespaces"),
        ({"replicas": 3}, "replicas"),
        ({"shards": [{"name": "Bad_Shard", "namespaces": ["a"]}]}, "shards"),
        ({"shards": [{"name": "a", "namespaces": []}]}, "shards"),
        ({"apiClient": {"qps": -1}}, "apiClient"),
        ({"unwatchedResyncSeconds": 0}, "unwatchedResyncSeconds"),
    ],
)
def test_values_schema_rejects_bad_values(
    helm: str, tmp_path: Path, values: dict[str, Any], message: str
) -> None:
    done = subprocess.run(
        [helm, "template", "ts", str(CHART), "-f", str(_values_file(tmp_path, values))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert message in done.stderr


def test_dashboard_queries_only_series_that_exist() -> None:
    dashboard = json.loads((CHART / "dashboards" / "tokenscale.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    exprs += [v["query"] for v in dashboard["templating"]["list"] if v.get("type") == "query"]
    exposed = set()
    for family in Telemetry().registry.collect():
        for sample in family.samples:
            exposed.add(sample.name)
    for metric in Telemetry().registry.collect():
        exposed.add(metric.name)
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}
        exposed.update(metric.name + s for s in suffixes.get(metric.type, []))
    vllm = {"vllm:num_requests_waiting"}
    used = {m for e in exprs for m in re.findall(r"(tokenscale_[a-z0-9_]+|vllm:[a-z0-9_]+)", e)}
    assert used
    missing = used - exposed - vllm
    assert not missing, f"dashboard queries series nobody exposes: {missing}"
    assert dashboard["schemaVersion"] >= 36


def test_plain_manifests_equal_the_chart_defaults(helm: str) -> None:
    """deploy/ is generated from the chart (scripts/gen-deploy.sh); drift fails here."""
    rendered = subprocess.run(
        [helm, "template", "tokenscale", str(CHART), "--namespace", "tokenscale-system"],
        check=True,
        capture_output=True,
        text=True,
    )
    committed = (ROOT / "deploy" / "operator.yaml").read_text()
    assert [d for d in yaml.safe_load_all(committed) if d] == [
        d for d in yaml.safe_load_all(rendered.stdout) if d
    ], "run scripts/gen-deploy.sh"
    crd = yaml.safe_load((ROOT / "deploy" / "crd.yaml").read_text())
    assert crd == yaml.safe_load(
        (ROOT / "crds" / "inferenceservices.tokenscale.io.yaml").read_text()
    )


def test_kustomize_builds_valid_objects(helm: str) -> None:
    kubectl = str(Path(helm).with_name("kubectl"))
    out = subprocess.run(
        [kubectl, "kustomize", str(ROOT / "deploy")], check=True, capture_output=True, text=True
    )
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    assert {d["kind"] for d in docs} >= {
        "Namespace",
        "CustomResourceDefinition",
        "Deployment",
        "ClusterRole",
        "ClusterRoleBinding",
        "ServiceAccount",
    }
    for doc in docs:
        kubernetes_validate.validate(doc, "1.33.0", strict=True)


def _bindings(docs: list[dict[str, Any]], kind: str) -> dict[tuple[str, str], str]:
    """(namespace or "", name) → the ServiceAccount it binds."""
    out = {}
    for doc in docs:
        if doc["kind"] == kind:
            (subject,) = doc["subjects"]
            key = (doc["metadata"].get("namespace", ""), doc["metadata"]["name"])
            out[key] = f"{subject['namespace']}/{subject['name']}"
            assert doc["roleRef"]["name"] == doc["metadata"]["name"]
    return out


def test_shards_render_one_operator_each_with_its_own_lease_and_rbac(
    helm: str, tmp_path: Path
) -> None:
    docs = _render(helm, tmp_path, VALUE_SETS["shards"])
    deployments = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Deployment"}
    assert set(deployments) == {"ts-tokenscale-a", "ts-tokenscale-b"}
    want = {"ts-tokenscale-a": ["team-a", "team-b"], "ts-tokenscale-b": ["team-c"]}
    selectors = set()
    for name, dep in deployments.items():
        pod = dep["spec"]["template"]["spec"]
        args = pod["containers"][0]["args"]
        assert [a.split("=", 1)[1] for a in args if a.startswith("--namespace=")] == want[name]
        assert "--all-namespaces" not in args
        assert "--leader-elect" in args  # every shard elects its own leader, even alone
        assert f"--leader-election-name={name}" in args
        assert pod["serviceAccountName"] == name
        env = {e["name"] for e in pod["containers"][0]["env"]}
        assert env == {"POD_NAME", "POD_NAMESPACE"}
        labels = dep["spec"]["selector"]["matchLabels"]
        assert labels.items() <= dep["spec"]["template"]["metadata"]["labels"].items()
        selectors.add(tuple(sorted(labels.items())))
    assert len(selectors) == 2  # neither Deployment adopts the other's pods
    accounts = {d["metadata"]["name"] for d in docs if d["kind"] == "ServiceAccount"}
    assert accounts == set(deployments)
    roles = _bindings(docs, "RoleBinding")
    assert roles == {
        ("team-a", "ts-tokenscale-a"): "tokenscale-system/ts-tokenscale-a",
        ("team-b", "ts-tokenscale-a"): "tokenscale-system/ts-tokenscale-a",
        ("team-c", "ts-tokenscale-b"): "tokenscale-system/ts-tokenscale-b",
        ("tokenscale-system", "ts-tokenscale-a-leader-election"): (
            "tokenscale-system/ts-tokenscale-a"
        ),
        ("tokenscale-system", "ts-tokenscale-b-leader-election"): (
            "tokenscale-system/ts-tokenscale-b"
        ),
    }
    assert _bindings(docs, "ClusterRoleBinding") == {
        ("", "ts-tokenscale-a"): "tokenscale-system/ts-tokenscale-a",
        ("", "ts-tokenscale-b"): "tokenscale-system/ts-tokenscale-b",
    }
    # a shard's cluster-wide rights are CRD discovery only; the rest is per namespace
    assert _rules(docs, "ClusterRole") == set(rbac.CLUSTER_READ)
    assert _rules(docs, "Role") == set(rbac.NAMESPACED + rbac.LEADER_ELECTION)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {
                "shards": [
                    {"name": "a", "namespaces": ["team-a", "team-b"]},
                    {"name": "b", "namespaces": ["team-b"]},
                ]
            },
            "namespace team-b is in shard a and shard b",
        ),
        (
            {"shards": [{"name": "a", "namespaces": ["team-x"]}], "watchNamespaces": ["team-y"]},
            "shards and watchNamespaces exclude each other",
        ),
    ],
)
def test_overlapping_shards_fail_the_render(
    helm: str, tmp_path: Path, values: dict[str, Any], message: str
) -> None:
    done = subprocess.run(
        [helm, "template", "ts", str(CHART), "-f", str(_values_file(tmp_path, values))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert message in done.stderr


def test_api_client_limits_reach_the_operator(helm: str, tmp_path: Path) -> None:
    docs = _render(helm, tmp_path, {"apiClient": {"qps": 20, "burst": 40}})
    args = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"][
        "containers"
    ][0]["args"]
    assert {"--api-qps=20", "--api-burst=40"} <= set(args)


def test_the_unwatched_resync_bound_reaches_the_operator_only_when_set(
    helm: str, tmp_path: Path
) -> None:
    def args(values: dict[str, Any]) -> list[str]:
        docs = _render(helm, tmp_path, values)
        deployment = next(d for d in docs if d["kind"] == "Deployment")
        return list(deployment["spec"]["template"]["spec"]["containers"][0]["args"])

    assert not any(a.startswith("--unwatched-resync") for a in args({}))  # 4 intervals
    assert "--unwatched-resync=30" in args({"unwatchedResyncSeconds": 30})


def test_the_endpoint_picker_monitor_attaches_the_namespace_the_operator_queries_by(
    helm: str, tmp_path: Path
) -> None:
    docs = _render(helm, tmp_path, VALUE_SETS["monitoring"])
    (mon,) = [
        d for d in docs if d["kind"] == "PodMonitor" and "endpoint-picker" in d["metadata"]["name"]
    ]
    assert mon["spec"]["selector"]["matchLabels"] == {"inferencepool": "chat-epp"}
    (endpoint,) = mon["spec"]["podMetricsEndpoints"]
    assert endpoint["relabelings"] == [
        {"sourceLabels": ["__meta_kubernetes_namespace"], "targetLabel": "namespace"}
    ]
    assert endpoint["authorization"]["credentials"] == {"name": "epp-reader", "key": "token"}
    off = _render(helm, tmp_path, {})
    assert not [d for d in off if "endpoint-picker" in d["metadata"]["name"]]


def test_the_endpoint_picker_monitor_needs_its_pod_labels(helm: str, tmp_path: Path) -> None:
    values = {"metrics": {"endpointPickerMonitor": {"enabled": True}}}
    with pytest.raises(subprocess.CalledProcessError) as err:
        _render(helm, tmp_path, values)
    assert "matchLabels" in err.value.stderr
