"""LeaderWorkerSet rendering: golden files, the upstream CRD's schema, the launch wiring.

Each case is the planner's plan at one pinned layout (``plan_at``), so a golden changes only
when the renderer or that layout's plan does, not when auto layout would choose differently
(the examples in deploy/examples cover auto's choices).
"""

import copy
import functools
import os
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.helpers import deep_merge, manifest
from tokenscale.api.manifest import parse_manifests
from tokenscale.controller.workload import observe_workload, remove_stale, selector_drift
from tokenscale.planning import Layout, Plan, forecast_conditions, plan_at, plan_service, resolve
from tokenscale.render import Owner, render_bundle
from tokenscale.render.deployment import startup_budget_seconds
from tokenscale.render.lws import group_pdb_max_unavailable

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "lws"
CRDS = ROOT / "tests" / "fixtures" / "crds"
UPDATE = os.environ.get("TOKENSCALE_UPDATE_GOLDEN") == "1"

_WORKLOAD: dict[str, Any] = {
    "rps": {"mean": 2, "peak": 4},
    "inputTokens": {"mean": 2000, "p99": 8000},
    "outputTokens": {"mean": 500, "p99": 2000},
    "maxContextTokens": 16384,
}

LAYOUTS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # name: (spec patch, layout)
    "llama-3.1-405b-h100-tp8-pp2": (
        {
            "model": {"name": "meta-llama/Llama-3.1-405B-Instruct", "catalog": "llama-3.1-405b"},
            "hardware": {"gpu": "H100-SXM-80GB", "tensorParallelSize": 8},
        },
        {"tp": 8, "pp": 2, "dp": 1, "ep": False, "nodes": 2},
    ),
    "deepseek-v3-h200-ep16": (
        {
            "model": {"name": "deepseek-ai/DeepSeek-V3", "catalog": "deepseek-v3"},
            "hardware": {"gpu": "H200-SXM-141GB", "tensorParallelSize": 1},
        },
        {"tp": 1, "pp": 1, "dp": 16, "ep": True, "nodes": 2},
    ),
    "deepseek-v3-h100-ep16": (
        {
            "model": {"name": "deepseek-ai/DeepSeek-V3", "catalog": "deepseek-v3"},
            "hardware": {"gpu": "H100-SXM-80GB", "tensorParallelSize": 1},
        },
        {"tp": 1, "pp": 1, "dp": 16, "ep": True, "nodes": 2},
    ),
}


def _spec_body(patch: dict[str, Any]) -> dict[str, Any]:
    body = manifest(
        workload=_WORKLOAD, slo={"ttftP99Seconds": 10.0, "tpotP99Seconds": 0.15}, **patch
    )
    body["spec"]["model"] = patch["model"]
    return body


def _pinned(patch: dict[str, Any], layout: dict[str, Any]) -> tuple[Any, Plan]:
    service = parse_manifests(yaml.safe_dump(_spec_body(patch)))[0]
    r = resolve(service.spec, service.metadata.name)
    at = Layout(layout["tp"], layout["pp"], layout["dp"], layout["ep"], layout["nodes"])
    plan = plan_at(r, forecast_conditions(r), at)
    assert plan.replicas is not None, plan.infeasible_reasons
    return service, plan


def _render(name: str, replicas: int = 2) -> list[dict[str, Any]]:
    service, plan = _pinned(*LAYOUTS[name])
    return render_bundle(
        "big", "inference", service.spec, plan, replicas, Owner("big", "uid-1")
    ).objects


@functools.cache
def _upstream_validator() -> jsonschema.protocols.Validator:
    """The published CRD's ``openAPIV3Schema`` (1.3 MB: built once, not re-checked per call)."""
    text = (CRDS / "leaderworkersets.x-k8s.io.upstream.yaml").read_text()
    crd = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return jsonschema.Draft7Validator(schema)


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_golden(name: str) -> None:
    text = yaml.safe_dump_all(_render(name), sort_keys=False)
    golden = GOLDEN / f"{name}.yaml"
    if UPDATE or not golden.exists():
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
    assert text == golden.read_text(), f"regenerate with TOKENSCALE_UPDATE_GOLDEN=1 ({golden})"


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_lws_passes_the_upstream_crd_schema(name: str) -> None:
    lws = _render(name)[0]
    assert lws["kind"] == "LeaderWorkerSet"
    _upstream_validator().validate(lws)
    wrong = copy.deepcopy(lws)
    wrong["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "Sometimes"
    with pytest.raises(jsonschema.ValidationError):
        _upstream_validator().validate(wrong)


def validate_lws(lws: dict[str, Any], version: str) -> None:
    """The upstream CRD's schema, and each pod template as a strict core/v1 PodTemplate."""
    _upstream_validator().validate(lws)
    for role in ("leaderTemplate", "workerTemplate"):
        template = lws["spec"]["leaderWorkerTemplate"][role]
        wrapped = {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": f"t-{role.lower()}", "namespace": "inference"},
            "template": template,
        }
        kubernetes_validate.validate(wrapped, version, strict=True)


@pytest.mark.parametrize("version", ["1.29.0", "1.33.0"])
@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_built_in_objects_and_pod_templates_pass_strict_validation(name: str, version: str) -> None:
    lws, *rest = _render(name)
    for obj in rest:
        kubernetes_validate.validate(obj, version, strict=True)
    validate_lws(lws, version)


def _flags(container: dict[str, Any]) -> dict[str, str]:
    args = container["args"]
    return {a: (args[i + 1] if i + 1 < len(args) else "") for i, a in enumerate(args)}


def test_pipeline_layout_wiring() -> None:
    lws, svc, pdb = _render("llama-3.1-405b-h100-tp8-pp2", replicas=3)
    spec = lws["spec"]
    assert spec["replicas"] == 3
    group = spec["leaderWorkerTemplate"]
    assert group["size"] == 2
    assert group["restartPolicy"] == "RecreateGroupOnPodRestart"
    leader = group["leaderTemplate"]["spec"]["containers"][0]
    worker = group["workerTemplate"]["spec"]["containers"][0]
    lf, wf = _flags(leader), _flags(worker)
    for f in (lf, wf):
        assert f["--tensor-parallel-size"] == "8"
        assert f["--pipeline-parallel-size"] == "2"
        assert f["--nnodes"] == "2"
        assert f["--master-addr"] == "$(LWS_LEADER_ADDRESS)"
        assert f["--node-rank"] == "$(LWS_WORKER_INDEX)"
    assert "--headless" in wf
    assert "--headless" not in lf
    assert leader["command"] == worker["command"] == ["vllm", "serve"]
    # GPUs per pod: one node's share; /dev/shm on both
    for c in (leader, worker):
        assert c["resources"]["limits"]["nvidia.com/gpu"] == "8"
        assert any(m["mountPath"] == "/dev/shm" for m in c["volumeMounts"])
    # only the leader serves: port, probes, scrape annotations; the Service selects it
    assert "ports" in leader
    assert "startupProbe" in leader
    assert "ports" not in worker
    assert "readinessProbe" not in worker
    leader_meta = group["leaderTemplate"]["metadata"]
    worker_meta = group["workerTemplate"]["metadata"]
    assert leader_meta["annotations"]["prometheus.io/scrape"] == "true"
    assert "prometheus.io/scrape" not in worker_meta["annotations"]
    assert leader_meta["labels"]["tokenscale.io/role"] == "leader"
    assert worker_meta["labels"]["tokenscale.io/role"] == "worker"
    assert svc["spec"]["selector"]["tokenscale.io/role"] == "leader"
    assert pdb["spec"]["maxUnavailable"] >= 1
    assert "minAvailable" not in pdb["spec"]
    assert "tokenscale.io/role" not in pdb["spec"]["selector"]["matchLabels"]
    assert lws["metadata"]["ownerReferences"][0]["kind"] == "InferenceService"


def test_startup_probe_is_sized_from_one_nodes_weight_share() -> None:
    service, plan = _pinned(*LAYOUTS["llama-3.1-405b-h100-tp8-pp2"])
    single = plan.model_copy(update={"nodes_per_replica": 1})

    two = startup_budget_seconds(service.spec, plan)
    one = startup_budget_seconds(service.spec, single)
    # 405.9 B × 2 B = 812 GB: 2030 s + 180 on one node, half the load on each of two
    assert one == pytest.approx(2 * (two - 180) + 180, abs=2)


def test_expert_parallel_layout_wiring() -> None:
    lws = _render("deepseek-v3-h100-ep16")[0]
    group = lws["spec"]["leaderWorkerTemplate"]
    assert group["size"] == 2
    leader = group["leaderTemplate"]["spec"]["containers"][0]
    worker = group["workerTemplate"]["spec"]["containers"][0]
    lf = _flags(leader)
    assert lf["--data-parallel-size"] == "16"
    assert lf["--data-parallel-size-local"] == "8"
    assert lf["--data-parallel-address"] == "$(LWS_LEADER_ADDRESS)"
    assert "--enable-expert-parallel" in lf
    assert "--nnodes" not in lf
    # workers: a shell computes the start rank from the worker index; "$@" keeps the args
    assert worker["command"][:2] == ["/bin/sh", "-c"]
    assert "--data-parallel-start-rank $((LWS_WORKER_INDEX * 8))" in worker["command"][2]
    assert '"$@"' in worker["command"][2]
    wf = _flags(worker)
    # Kubernetes expands $(VAR) in args; "$@" hands the shell's words to vLLM unexpanded
    assert wf["--data-parallel-address"] == "$(LWS_LEADER_ADDRESS)"
    assert "--headless" in wf
    assert worker["resources"]["limits"]["nvidia.com/gpu"] == "8"


def test_config_change_rolls_replica_change_does_not() -> None:
    a = _render("deepseek-v3-h200-ep16", replicas=2)[0]
    b = _render("deepseek-v3-h200-ep16", replicas=5)[0]
    key = "tokenscale.io/config-hash"
    assert a["metadata"]["annotations"][key] == b["metadata"]["annotations"][key]
    patch, layout = LAYOUTS["deepseek-v3-h200-ep16"]
    changed = deep_merge(patch, {"hardware": {"gpuMemoryUtilization": 0.9}})
    service, plan = _pinned(changed, layout)
    c = render_bundle("big", "inference", service.spec, plan, 2).objects[0]
    assert c["metadata"]["annotations"][key] != a["metadata"]["annotations"][key]


@pytest.mark.parametrize(
    ("replicas", "needed", "expected"),
    [(1, 0.5, 1), (2, 1.0, 1), (4, 1.2, 2), (4, 3.9, 1), (4, 4.0, 1)],
)
def test_group_pdb_leaves_the_headroom(replicas: int, needed: float, expected: int) -> None:
    assert group_pdb_max_unavailable(replicas, needed) == expected


def test_single_node_plans_still_render_a_deployment() -> None:
    service = parse_manifests(yaml.safe_dump(manifest()))[0]
    plan = plan_service(service.spec)
    objs = render_bundle("test", "default", service.spec, plan, 2).objects
    assert [o["kind"] for o in objs] == ["Deployment", "Service", "PodDisruptionBudget"]
    assert "tokenscale.io/role" not in objs[1]["spec"]["selector"]


class _FakeKube:
    """Only the reads and deletes controller/workload.py makes."""

    def __init__(self, deployment: dict[str, Any] | None, lws: dict[str, Any] | None) -> None:
        self.objects = {"Deployment": deployment, "LeaderWorkerSet": lws}
        self.deleted: list[str] = []

    def read_deployment(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects["Deployment"]

    def read_leader_worker_set(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects["LeaderWorkerSet"]

    def read_own_workload(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects[kind]

    def delete_deployment(self, namespace: str, name: str) -> None:
        self.deleted.append("Deployment")

    def delete_leader_worker_set(self, namespace: str, name: str) -> None:
        self.deleted.append("LeaderWorkerSet")


def _owned(kind: str, owner: str = "big") -> dict[str, Any]:
    ref = {"apiVersion": "tokenscale.io/v1alpha1", "kind": "InferenceService", "name": owner}
    return {"kind": kind, "metadata": {"name": "big", "ownerReferences": [ref]}}


def test_switching_layout_removes_only_our_other_workload() -> None:
    kube = _FakeKube(_owned("Deployment"), None)
    assert remove_stale(kube, "ns", "big", "LeaderWorkerSet") == "Deployment"
    assert kube.deleted == ["Deployment"]
    foreign = _FakeKube(_owned("Deployment", owner="someone-else"), None)
    assert remove_stale(foreign, "ns", "big", "LeaderWorkerSet") is None
    assert foreign.deleted == []
    back = _FakeKube(None, _owned("LeaderWorkerSet"))
    assert remove_stale(back, "ns", "big", "Deployment") == "LeaderWorkerSet"
    nothing = _FakeKube(None, None)
    assert remove_stale(nothing, "ns", "big", "Deployment") is None


def test_lws_status_is_read_in_groups() -> None:
    live = {
        "kind": "LeaderWorkerSet",
        "spec": {"replicas": 3},
        "status": {
            "replicas": 3,
            "readyReplicas": 2,
            "conditions": [{"type": "Available", "status": "True", "message": "All replicas"}],
        },
    }
    seen = observe_workload(live)
    assert seen is not None
    assert (seen.replicas, seen.ready_replicas, seen.available) == (3, 2, True)
    fresh = observe_workload({"kind": "LeaderWorkerSet", "spec": {"replicas": 2}})
    assert fresh is not None
    assert not fresh.available
    assert "LeaderWorkerSet controller" in fresh.available_message
    assert observe_workload(None) is None


def test_a_leftover_leader_selector_is_drift() -> None:
    desired = {"kind": "Service", "spec": {"selector": {"a": "1"}}}
    assert selector_drift(desired, {"spec": {"selector": {"a": "1"}}}) == []
    leftover = {"spec": {"selector": {"a": "1", "tokenscale.io/role": "leader"}}}
    assert selector_drift(desired, leftover) == [".spec.selector"]
    assert selector_drift({"kind": "Deployment"}, leftover) == []
