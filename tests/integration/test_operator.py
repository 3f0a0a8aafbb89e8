"""The operator against a real kube-apiserver + etcd + kube-controller-manager."""

import time
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.helpers import EXAMPLES, PROFILE, manifest
from tests.integration.conftest import GROUP, PLURAL, VERSION, Objects
from tokenscale.api.manifest import parse_manifests
from tokenscale.kube.client import Kube
from tokenscale.planning import plan_service
from tokenscale.playground.processes import Process, wait_for

pytestmark = pytest.mark.integration
HASH = "tokenscale.io/config-hash"


def _args(dep: Any) -> dict[str, str]:
    args = dep.spec.template.spec.containers[0].args
    return {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--")}


def _wait_deployment(objects: Objects, name: str, op: Process, timeout: float = 60) -> Any:
    def exists() -> bool:
        if not op.alive():
            raise RuntimeError(f"operator exited:\n{op.tail()}")
        return objects.deployment(name) is not None

    wait_for(exists, timeout, f"Deployment {name}")
    return objects.deployment(name)


def test_crd_is_served_with_scale_subresource_and_columns(
    api: client.ApiClient, crd: dict[str, Any]
) -> None:
    got = client.ApiextensionsV1Api(api).read_custom_resource_definition(crd["metadata"]["name"])
    version = got.spec.versions[0]
    assert version.subresources.scale.spec_replicas_path == ".spec.scaling.replicas"
    assert "infsvc" in got.spec.names.short_names
    assert [c.name for c in version.additional_printer_columns][:3] == ["Model", "GPU", "TP"]


def test_every_example_reconciles_to_its_plan(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    op = start_operator(namespace)
    # replicas that span nodes run as LeaderWorkerSets: tests/integration/test_lws.py
    single = [
        e
        for e in EXAMPLES
        if plan_service(parse_manifests(e.read_text())[0].spec).nodes_per_replica == 1
    ]
    for example in single:
        objects.create(yaml.safe_load(example.read_text()))
    for example in single:
        service = parse_manifests(example.read_text())[0]
        plan = plan_service(service.spec, service.metadata.name)
        dep = _wait_deployment(objects, service.metadata.name, op)
        flags = _args(dep)
        assert flags["--tensor-parallel-size"] == str(plan.tensor_parallel_size), example.stem
        assert flags["--max-model-len"] == str(plan.max_model_len)
        limits = dep.spec.template.spec.containers[0].resources.limits
        assert limits["nvidia.com/gpu"] == str(plan.tensor_parallel_size)
        assert dep.spec.replicas == plan.replicas.total
        assert dep.metadata.owner_references[0].kind == "InferenceService"
        wait_for(
            lambda n=service.metadata.name: objects.core.read_namespaced_service(n, namespace),
            30,
            "Service",
        )
        wait_for(
            lambda n=service.metadata.name: (
                (objects.get(n).get("status") or {}).get("plan") is not None
            ),
            30,
            "status.plan",
        )
        status = objects.get(service.metadata.name)["status"]
        assert status["plan"]["bindingConstraint"] == plan.binding_constraint
        # one pool, stored by the API server through the CRD's schema
        assert [(x["name"], x["replicas"], x["gpus"]) for x in status["plan"]["pools"]] == [
            ("serve", plan.replicas.total, plan.gpus_total)
        ]
        assert status["plan"]["coordination"] == "none"
        assert status["replicas"] == plan.replicas.total
        assert status["selector"].startswith("app.kubernetes.io/instance=")
        assert {c["type"] for c in status["conditions"]} == {
            "Ready",
            "PlanFeasible",
            "DeploymentAvailable",
            "MetricsAvailable",
            "ProductionReady",
            "ReplicasContested",  # direct mode: tokenscale writes the replicas
        }
        assert objects.condition(service.metadata.name, "PlanFeasible")["status"] == "True"
        ready = objects.condition(service.metadata.name, "ProductionReady")
        # the examples carry no bench profile: that item fails and the message says so
        assert ready["status"] == "False", ready
        assert "load-tested" in ready["message"]
        assert (
            objects.condition(service.metadata.name, "MetricsAvailable")["reason"]
            == "NoMetricsSource"
        )
    created = [
        e for e in objects.core.list_namespaced_event(namespace).items if e.reason == "Created"
    ]
    assert len(created) >= len(single)


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"hardware": {"tensorParallelSize": 3}}, "spec.hardware.tensorParallelSize"),
        ({"workload": {"rps": {"mean": -1}}}, "spec.workload.rps.mean"),
        ({"model": {"weightDtype": "fp4"}}, "spec.model.weightDtype"),
    ],
)
def test_schema_invalid_resource_is_rejected_naming_the_field(
    objects: Objects, patch: dict[str, Any], field: str
) -> None:
    with pytest.raises(client.exceptions.ApiException) as exc:
        objects.create(manifest(**patch))
    assert exc.value.status == 422
    assert field in exc.value.body


@pytest.mark.parametrize(
    ("patch", "reason", "text"),
    [
        (
            {
                "model": {"name": "Qwen/Qwen2.5-7B-Instruct", "catalog": "qwen2.5-7b"},
                "hardware": {"tensorParallelSize": 8},
            },
            "InvalidSpec",
            "spec.hardware.tensorParallelSize: 8 is invalid for this model: attentionHeads=28",
        ),
        (
            {"slo": {"tpotP99Seconds": 80}},
            "InvalidSpec",
            "spec.slo.tpotP99Seconds: 80 s is not a TPOT objective anyone means",
        ),
        (  # a shape conflict: refused where the spec is read, not by the actuator
            {
                "serving": {"disaggregation": "on"},
                "scaling": {"actuation": "keda", "keda": {"serverAddress": "http://p:9090"}},
            },
            "InvalidSpec",
            "spec.scaling.actuation: keda scales one workload; spec.serving.disaggregation: on",
        ),
        (
            {
                "hardware": {
                    "gpu": None,
                    "tensorParallelSize": None,
                    "variants": [{"gpu": "H100-SXM-80GB"}, {"gpu": "L40S-48GB"}],
                },
                "serving": {"disaggregation": "on"},
            },
            "InvalidSpec",
            "spec.hardware.variants with spec.serving.disaggregation: on",
        ),
        (
            {
                "model": {"name": "meta-llama/Llama-3.1-405B", "catalog": "llama-3.1-405b"},
                "hardware": {"gpu": "L4-24GB", "tensorParallelSize": "auto"},
            },
            "Infeasible",
            "does not fit at any TP",
        ),
    ],
)
def test_plan_invalid_resource_gets_condition_event_and_no_deployment(
    objects: Objects,
    namespace: str,
    start_operator: Callable[..., Process],
    patch: dict[str, Any],
    reason: str,
    text: str,
) -> None:
    start_operator(namespace)
    objects.create(manifest(**patch))
    wait_for(
        lambda: (objects.condition("test", "PlanFeasible") or {}).get("status") == "False",
        30,
        "PlanFeasible=False",
    )
    cond = objects.condition("test", "PlanFeasible")
    assert cond is not None
    assert cond["reason"] == reason
    assert text in cond["message"]
    wait_for(
        lambda: any(e.reason == reason and e.type == "Warning" for e in objects.events("test")),
        15,
        "Warning event",
    )
    time.sleep(6)  # three timer periods: still no Deployment, and no event storm
    assert objects.deployment("test") is None
    warnings = [e for e in objects.events("test") if e.reason == reason]
    assert sum(e.count or 1 for e in warnings) == 1


def test_config_change_rolls_replica_change_does_not(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    op = start_operator(namespace)
    objects.create(manifest())
    first = _wait_deployment(objects, "test", op)
    h1 = first.spec.template.metadata.annotations[HASH]
    objects.patch_spec("test", {"scaling": {"replicas": 5}})
    wait_for(lambda: objects.deployment("test").spec.replicas == 5, 30, "scaled to 5")
    assert objects.deployment("test").spec.template.metadata.annotations[HASH] == h1
    objects.patch_spec("test", {"serving": {"maxNumSeqs": 64}})
    wait_for(lambda: _args(objects.deployment("test"))["--max-num-seqs"] == "64", 30, "new args")
    dep = objects.deployment("test")
    assert dep.spec.template.metadata.annotations[HASH] != h1
    assert dep.spec.replicas == 5
    reasons = {e.reason for e in objects.events("test")}
    assert {"Created", "Scaled", "ConfigChanged"} <= reasons


def test_kubectl_scale_pins_replicas_through_the_scale_subresource(
    api: client.ApiClient, objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    op = start_operator(namespace)
    objects.create(manifest())
    _wait_deployment(objects, "test", op)
    custom = client.CustomObjectsApi(api)
    custom.patch_namespaced_custom_object_scale(
        GROUP, VERSION, namespace, PLURAL, "test", {"spec": {"replicas": 3}}
    )
    wait_for(lambda: objects.deployment("test").spec.replicas == 3, 30, "scaled to 3")
    scale = custom.get_namespaced_custom_object_scale(GROUP, VERSION, namespace, PLURAL, "test")
    wait_for(
        lambda: (
            custom.get_namespaced_custom_object_scale(GROUP, VERSION, namespace, PLURAL, "test")[
                "status"
            ]["replicas"]
            == 3
        ),
        30,
        "status",
    )
    assert scale["status"]["selector"]


def test_manual_drift_is_undone(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    op = start_operator(namespace)
    objects.create(manifest())
    dep = _wait_deployment(objects, "test", op)
    want_replicas, want_args = dep.spec.replicas, dep.spec.template.spec.containers[0].args
    objects.apps.patch_namespaced_deployment("test", namespace, {"spec": {"replicas": 9}})
    wait_for(
        lambda: objects.deployment("test").spec.replicas == want_replicas, 30, "replicas restored"
    )
    container = {
        "name": "vllm",
        "args": ["--model", "other"],
        "resources": {"limits": {"nvidia.com/gpu": "2"}, "requests": {"nvidia.com/gpu": "2"}},
    }
    objects.apps.patch_namespaced_deployment(
        "test", namespace, {"spec": {"template": {"spec": {"containers": [container]}}}}
    )
    wait_for(
        lambda: objects.deployment("test").spec.template.spec.containers[0].args == want_args,
        30,
        "args restored",
    )
    limits = objects.deployment("test").spec.template.spec.containers[0].resources.limits
    assert limits["nvidia.com/gpu"] == "1"
    wait_for(  # events are posted in the background, after the apply they report
        lambda: any(e.reason == "DriftCorrected" for e in objects.events("test")),
        30,
        "the DriftCorrected event",
    )


def test_deleting_the_resource_garbage_collects_its_objects(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    op = start_operator(namespace)
    objects.create(manifest())
    _wait_deployment(objects, "test", op)
    op.stop()  # garbage collection is the API's job, not the operator's
    objects.delete("test")

    kube = Kube(objects.apps.api_client)

    def gone() -> bool:
        if objects.deployment("test") is not None:
            return False
        services = objects.core.list_namespaced_service(namespace).items
        return not services and kube.read_pdb(namespace, "test") is None

    wait_for(gone, 60, "owned objects garbage-collected")


def test_restarting_the_operator_changes_nothing(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    op = start_operator(namespace)
    objects.create(manifest())
    _wait_deployment(objects, "test", op)
    wait_for(
        lambda: (objects.get("test").get("status") or {}).get("replicas") is not None, 30, "status"
    )
    time.sleep(5)  # let the ReplicaSet controller settle the Deployment's status
    before = objects.deployment("test").metadata.resource_version
    svc_before = objects.core.read_namespaced_service("test", namespace).metadata.resource_version
    op.stop()
    again = start_operator(namespace, name="restarted")
    time.sleep(8)  # the start-up reconcile (a create) + several timer periods
    assert again.alive(), again.tail()
    assert objects.deployment("test").metadata.resource_version == before
    assert objects.core.read_namespaced_service("test", namespace).metadata.resource_version == (
        svc_before
    )


def test_a_409_conflict_is_retried(api: client.ApiClient, objects: Objects) -> None:
    objects.create(manifest())
    stale = objects.get("test")["metadata"]["resourceVersion"]
    objects.patch_spec("test", {"scaling": {"minReplicas": 2}})  # moves resourceVersion on
    kube = Kube(api)
    written = kube.replace_status(objects.ns, "test", {"replicas": 4}, resource_version=stale)
    assert written["status"]["replicas"] == 4
    assert objects.get("test")["status"]["replicas"] == 4


def test_kopf_handlers_reconcile_without_the_resync_loop(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    """With the periodic loop out of the way (10 min), create/update events alone do the work
    (a peering misconfiguration once paused kopf while the 2 s loop hid it)."""
    op = start_operator(namespace, "--interval", "600")
    time.sleep(3)  # after the loop's immediate first cycle
    objects.create(manifest())
    _wait_deployment(objects, "test", op, timeout=30)
    objects.patch_spec("test", {"scaling": {"replicas": 3}})
    wait_for(lambda: objects.deployment("test").spec.replicas == 3, 30, "update handled")


def test_a_profile_ref_is_read_from_its_config_map(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    start_operator(namespace)
    objects.create(manifest(profileRef={"configMapName": "bench", "key": "profile.yaml"}))
    # no ConfigMap yet: the spec cannot be planned, and the condition says how to fix it
    wait_for(
        lambda: (objects.condition("test", "PlanFeasible") or {}).get("status") == "False",
        30,
        "PlanFeasible=False without the ConfigMap",
    )
    cond = objects.condition("test", "PlanFeasible")
    assert cond is not None
    assert "spec.profileRef" in cond["message"]
    assert "no such ConfigMap" in cond["message"]
    objects.core.create_namespaced_config_map(
        namespace,
        client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="bench"),
            data={"profile.yaml": yaml.safe_dump(PROFILE)},
        ),
    )
    # the resync reads it: the plan is sized from the measurement
    wait_for(
        lambda: ((objects.get("test").get("status") or {}).get("plan") or {}).get("sources"),
        30,
        "plan from the profile",
    )
    plan = objects.get("test")["status"]["plan"]
    assert plan["maxConcurrencyPerReplica"] == 32
    assert "concurrency 32" in plan["sources"]["rps_per_replica"]
    assert objects.deployment("test") is not None


def test_kubectl_explain_sees_a_type_for_every_spec_field(api: client.ApiClient) -> None:
    """The OpenAPI v2 the API server publishes for the CRD (what ``kubectl explain`` reads)
    keeps every property's type: no field of the spec shows as ``<>``."""
    kube = Kube(api)
    definitions = kube._raw("GET", "/openapi/v2")["definitions"]
    key = next((k for k in definitions if k.endswith("v1alpha1.InferenceService")), None)
    assert key is not None, [k for k in definitions if "tokenscale" in k]
    root = definitions[key]
    untyped = []
    # int-or-string, and free-form objects (x-kubernetes-preserve-unknown-fields), have no
    # single type in OpenAPI v2
    free_form = {
        "tensorParallelSize",
        "affinity",
        "resources",
        "hfConfig",
        "adapterConfig",
        "priority",
    }

    def walk(node: dict[str, Any], path: str) -> None:
        for name, sub in (node.get("properties") or {}).items():
            if "type" not in sub and name not in free_form:
                untyped.append(f"{path}.{name}")
            walk(sub, f"{path}.{name}")
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{path}[]")

    walk(root["properties"]["spec"], "spec")
    walk(root["properties"]["status"], "status")
    assert not untyped
    slo = root["properties"]["spec"]["properties"]["slo"]["properties"]
    assert slo["ttftP99Seconds"]["type"] == "number"
