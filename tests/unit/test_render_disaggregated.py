"""Rendering a disaggregated service: a workload per role, vLLM's NIXL KV connector, the llm-d
role labels; golden files on one node and on LeaderWorkerSet groups."""

import json
import os
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.helpers import ROOT
from tests.helpers import spec as make_spec
from tests.unit.test_lws import validate_lws
from tokenscale.api.manifest import parse_manifests
from tokenscale.api.serving import OWNED_FLAGS
from tokenscale.planning import plan_service
from tokenscale.render import Owner, render_bundle
from tokenscale.render.disaggregated import LLMD_ROLE_LABEL

GOLDEN = ROOT / "tests" / "golden" / "disaggregated"
UPDATE = os.environ.get("TOKENSCALE_UPDATE_GOLDEN") == "1"
ONE_NODE = ROOT / "tests" / "fixtures" / "disaggregated" / "llama-3.1-8b-h100-pd.yaml"
LWS_SPEC = """
apiVersion: tokenscale.io/v1alpha1
kind: InferenceService
metadata: {name: llama-405b-pd, namespace: inference}
spec:
  model: {name: meta-llama/Llama-3.1-405B-Instruct, catalog: llama-3.1-405b}
  hardware: {gpu: H100-SXM-80GB, tensorParallelSize: 8}
  workload:
    rps: {mean: 2}
    inputTokens: {mean: 6000, p99: 12000}
    outputTokens: {mean: 300, p99: 800}
    maxContextTokens: 16384
  slo: {ttftP99Seconds: 5, tpotP99Seconds: 0.08}
  serving: {disaggregation: "on"}
  cost: {gpuHourPrice: 3.5}
"""
CASES = {"llama-3.1-8b-h100-pd-one-node": ONE_NODE.read_text(), "llama-3.1-405b-pd-lws": LWS_SPEC}

#: vLLM's ``KVTransferConfig`` fields (vllm/config/kv_transfer.py) and its ``KVRole`` values.
KV_TRANSFER_FIELDS = {
    "kv_connector",
    "engine_id",
    "kv_buffer_device",
    "kv_buffer_size",
    "kv_role",
    "kv_rank",
    "kv_parallel_size",
    "kv_ip",
    "kv_port",
    "kv_connector_extra_config",
    "kv_connector_module_path",
}
KV_ROLES = {"kv_producer", "kv_consumer", "kv_both"}


def _render(text: str, replicas: int = 3) -> list[dict[str, Any]]:
    service = parse_manifests(text)[0]
    plan = plan_service(service.spec, service.metadata.name)
    assert plan.disaggregation is not None
    assert plan.disaggregation.enabled, plan.disaggregation.reason
    bundle = render_bundle(
        service.metadata.name,
        service.metadata.namespace or "default",
        service.spec,
        plan,
        replicas,
        Owner(service.metadata.name, "uid-1"),
    )
    return bundle.objects


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str) -> None:
    text = yaml.safe_dump_all(_render(CASES[case]), sort_keys=False)
    golden = GOLDEN / f"{case}.yaml"
    if UPDATE or not golden.exists():
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
    assert text == golden.read_text(), f"regenerate with TOKENSCALE_UPDATE_GOLDEN=1 ({golden})"


def _workloads(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        o["metadata"]["labels"][LLMD_ROLE_LABEL]: o
        for o in objs
        if o["kind"] in ("Deployment", "LeaderWorkerSet")
    }


def _templates(workload: dict[str, Any]) -> list[dict[str, Any]]:
    spec = workload["spec"]
    if "template" in spec:
        return [spec["template"]]
    lwt = spec["leaderWorkerTemplate"]
    return [lwt["leaderTemplate"], lwt["workerTemplate"]]


@pytest.mark.parametrize("version", ["1.29.0", "1.33.0"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_object_passes_strict_validation(case: str, version: str) -> None:
    for obj in _render(CASES[case]):
        if obj["kind"] == "LeaderWorkerSet":
            validate_lws(obj, version)
        else:
            kubernetes_validate.validate(obj, version, strict=True)


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_workload_per_role_with_the_plan_counts(case: str) -> None:
    service = parse_manifests(CASES[case])[0]
    plan = plan_service(service.spec, service.metadata.name)
    d = plan.disaggregation
    assert d is not None
    assert d.prefill is not None
    assert d.decode is not None
    objs = _render(CASES[case], replicas=99)  # the aggregated count does not apply
    workloads = _workloads(objs)
    assert set(workloads) == {"prefill", "decode"}
    assert workloads["prefill"]["spec"]["replicas"] == d.prefill.replicas
    assert workloads["decode"]["spec"]["replicas"] == d.decode.replicas
    for role, pool in (("prefill", d.prefill), ("decode", d.decode)):
        w = workloads[role]
        assert w["metadata"]["name"].endswith(f"-{role}")
        assert (w["kind"] == "LeaderWorkerSet") == (pool.nodes_per_replica > 1)
        for t in _templates(w):
            args = t["spec"]["containers"][0]["args"]
            assert args[args.index("--tensor-parallel-size") + 1] == str(pool.tensor_parallel_size)
            assert args[args.index("--max-num-batched-tokens") + 1] == str(
                pool.max_num_batched_tokens
            )
    kinds = sorted(o["kind"] for o in objs)
    assert kinds.count("PodDisruptionBudget") == 2
    assert kinds.count("Service") == 1


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_role_selects_only_its_own_pods(case: str) -> None:
    objs = _render(CASES[case])
    workloads = _workloads(objs)
    for role, w in workloads.items():
        other = next(r for r in workloads if r != role)
        selector = (
            w["spec"]["selector"]["matchLabels"]
            if "selector" in w["spec"]
            else {LLMD_ROLE_LABEL: role}  # LWS selects its own groups by name
        )
        for t in _templates(w):
            assert selector.items() <= t["metadata"]["labels"].items()
        for t in _templates(workloads[other]):
            assert not selector.items() <= t["metadata"]["labels"].items()
    svc = next(o for o in objs if o["kind"] == "Service")
    assert svc["spec"]["selector"][LLMD_ROLE_LABEL] == "decode"
    for pdb in (o for o in objs if o["kind"] == "PodDisruptionBudget"):
        role = pdb["metadata"]["labels"][LLMD_ROLE_LABEL]
        assert pdb["spec"]["selector"]["matchLabels"][LLMD_ROLE_LABEL] == role


@pytest.mark.parametrize("case", sorted(CASES))
def test_kv_transfer_config_is_vllms_own(case: str) -> None:
    """One ``--kv-transfer-config``, its JSON keys vLLM's ``KVTransferConfig`` fields, the NIXL
    connector, a role vLLM accepts; the side channel on the pod's IP; no owned flag twice."""
    for w in _workloads(_render(CASES[case])).values():
        for t in _templates(w):
            c = t["spec"]["containers"][0]
            args = c["args"]
            assert args.count("--kv-transfer-config") == 1
            config = json.loads(args[args.index("--kv-transfer-config") + 1])
            assert set(config) <= KV_TRANSFER_FIELDS
            assert config["kv_connector"] == "NixlConnector"
            assert config["kv_role"] in KV_ROLES
            env = {e["name"]: e for e in c["env"]}
            assert env["VLLM_NIXL_SIDE_CHANNEL_HOST"]["valueFrom"]["fieldRef"] == {
                "fieldPath": "status.podIP"
            }
            flags = [a.split("=", 1)[0] for a in args if a.startswith("--") and a in OWNED_FLAGS]
            assert len(flags) == len(set(flags))


def test_hash_follows_templates_not_counts() -> None:
    service = parse_manifests(ONE_NODE.read_text())[0]
    plan = plan_service(service.spec, service.metadata.name)
    a = render_bundle("x", "ns", service.spec, plan, 1)
    b = render_bundle("x", "ns", service.spec, plan, 7)
    assert a.config_hash == b.config_hash
    d = plan.disaggregation
    assert d is not None
    assert d.prefill is not None
    changed = plan.model_copy(
        update={
            "disaggregation": d.model_copy(
                update={"prefill": d.prefill.model_copy(update={"max_num_batched_tokens": 4096})}
            )
        }
    )
    assert render_bundle("x", "ns", service.spec, changed, 1).config_hash != a.config_hash


def test_extra_args_cannot_set_the_kv_transfer_config() -> None:
    with pytest.raises(ValueError, match="disaggregation"):
        make_spec(serving={"extraArgs": ["--kv-transfer-config", "{}"]})


def test_aggregated_plans_render_as_before() -> None:
    """``auto`` that keeps one pool renders the single Deployment, no role label."""
    text = ONE_NODE.read_text().replace("mean: 8000, p99: 16000", "mean: 300, p99: 800")
    objs = _render_any(text)
    assert [o["kind"] for o in objs] == ["Deployment", "Service", "PodDisruptionBudget"]
    assert LLMD_ROLE_LABEL not in objs[0]["spec"]["template"]["metadata"]["labels"]


def _render_any(text: str) -> list[dict[str, Any]]:
    service = parse_manifests(text)[0]
    plan = plan_service(service.spec, service.metadata.name)
    return render_bundle("x", "ns", service.spec, plan, plan.replica_count).objects


def test_pools_render_when_the_aggregated_alternative_has_no_count() -> None:
    """The role plans carry their own counts and constraints: an aggregated plan that cannot
    serve (no replica count) does not stop its pools from rendering."""
    service = parse_manifests(ONE_NODE.read_text())[0]
    plan = plan_service(service.spec, service.metadata.name).model_copy(update={"replicas": None})
    objs = render_bundle("x", "ns", service.spec, plan, 0).objects
    assert sorted(o["metadata"]["name"] for o in objs if o["kind"] == "Deployment") == [
        "x-decode",
        "x-prefill",
    ]
