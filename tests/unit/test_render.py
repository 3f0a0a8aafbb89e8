"""Rendered manifests: golden files, Kubernetes schema validity, engine flags, config hash."""

import os
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.helpers import EXAMPLES, ROOT, manifest
from tests.unit.test_lws import validate_lws
from tokenscale.api import InferenceService
from tokenscale.api.crd import build_crd
from tokenscale.api.crd_docs import crd_reference
from tokenscale.api.manifest import parse_manifests
from tokenscale.planning import plan_service
from tokenscale.planning.inputs import resolve_gpu
from tokenscale.render import Owner, render_bundle
from tokenscale.render.bundle import config_hash
from tokenscale.render.deployment import pod_template
from tokenscale.render.service import pdb_min_available

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
UPDATE = os.environ.get("TOKENSCALE_UPDATE_GOLDEN") == "1"


def _render(example: Path, replicas: int | None = None) -> list[dict[str, Any]]:
    service = parse_manifests(example.read_text())[0]
    plan = plan_service(service.spec, service.metadata.name)
    count = replicas if replicas is not None else plan.replicas.total
    bundle = render_bundle(
        service.metadata.name,
        service.metadata.namespace or "default",
        service.spec,
        plan,
        count,
        Owner(service.metadata.name, "uid-1"),
    )
    return bundle.objects


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_golden(example: Path) -> None:
    text = yaml.safe_dump_all(_render(example), sort_keys=False)
    golden = GOLDEN / f"{example.stem}.yaml"
    if UPDATE or not golden.exists():
        golden.write_text(text)
    assert text == golden.read_text(), f"regenerate with TOKENSCALE_UPDATE_GOLDEN=1 ({golden})"


@pytest.mark.parametrize("version", ["1.29.0", "1.33.0"])
@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_every_object_passes_strict_kubernetes_validation(example: Path, version: str) -> None:
    for obj in _render(example):
        if obj["kind"] == "LeaderWorkerSet":  # a custom resource: its CRD's schema
            validate_lws(obj, version)
        else:
            kubernetes_validate.validate(obj, version, strict=True)


def test_engine_flags_match_the_plan() -> None:
    example = next(e for e in EXAMPLES if e.stem == "llama-3.1-70b-h100-fp8")
    service = parse_manifests(example.read_text())[0]
    plan = plan_service(service.spec)
    dep = _render(example)[0]
    container = dep["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    flag = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--")}
    assert flag["--tensor-parallel-size"] == str(plan.tensor_parallel_size)
    assert flag["--max-model-len"] == str(plan.max_model_len)
    assert flag["--kv-cache-dtype"] == "fp8"
    assert flag["--quantization"] == "fp8"  # BF16 checkpoint quantized on load
    assert flag["--port"] == "8000"
    gpus = str(plan.tensor_parallel_size)
    assert container["resources"]["limits"]["nvidia.com/gpu"] == gpus
    assert container["resources"]["requests"]["nvidia.com/gpu"] == gpus
    assert dep["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.product"] == (
        "NVIDIA-H100-80GB-HBM3"
    )


def test_tp_above_one_mounts_shared_memory_and_overrides_apply() -> None:
    example = next(e for e in EXAMPLES if e.stem == "llama-3.1-70b-h100-overrides")
    dep, svc, pdb = _render(example)
    pod = dep["spec"]["template"]["spec"]
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}} in pod["volumes"]
    assert pod["nodeSelector"]["pool"] == "gpu-h100"
    assert pod["priorityClassName"] == "inference-critical"
    assert pod["imagePullSecrets"] == [{"name": "registry-credentials"}]
    env = {e["name"]: e for e in pod["containers"][0]["env"]}
    assert env["HF_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "hf-token"
    assert pod["containers"][0]["resources"]["requests"]["memory"] == "200Gi"
    assert pod["containers"][0]["args"][-3:] == [
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "llama3_json",
    ]
    assert dep["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    assert svc["spec"]["ports"][0]["port"] == 8000
    assert dep["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    assert pdb["spec"]["minAvailable"] >= 1


def test_tp_one_has_no_shared_memory_volume() -> None:
    example = next(e for e in EXAMPLES if e.stem == "llama-3.1-8b-l4")
    pod = _render(example)[0]["spec"]["template"]["spec"]
    assert "volumes" not in pod


def test_replica_change_keeps_the_hash_config_change_rolls() -> None:
    example = next(e for e in EXAMPLES if e.stem == "llama-3.1-8b-l4")
    a, b = _render(example, 2)[0], _render(example, 7)[0]
    ann = "tokenscale.io/config-hash"
    assert (
        a["spec"]["template"]["metadata"]["annotations"][ann]
        == (b["spec"]["template"]["metadata"]["annotations"][ann])
    )
    s1 = InferenceService.model_validate(manifest()).spec
    s2 = InferenceService.model_validate(
        manifest(serving={"image": "vllm/vllm-openai:v0.34.0"})
    ).spec
    p = plan_service(s1)
    assert config_hash(pod_template("x", s1, p, resolve_gpu(s1))) != config_hash(
        pod_template("x", s2, p, resolve_gpu(s2))
    )


@pytest.mark.parametrize(
    ("replicas", "needed", "expected"),
    [(1, 0.8, 0), (2, 1.2, 1), (5, 3.4, 4), (5, 4.9, 4), (6, 3.0, 3)],
)
def test_pdb_keeps_the_planned_capacity(replicas: int, needed: float, expected: int) -> None:
    assert pdb_min_available(replicas, needed) == expected


def test_committed_crd_is_generated_from_the_models() -> None:
    committed = yaml.safe_load((ROOT / "crds" / "inferenceservices.tokenscale.io.yaml").read_text())
    assert committed == build_crd(), (
        "run: tokenscale crd --out crds/inferenceservices.tokenscale.io.yaml"
    )


def test_crd_shape() -> None:
    crd = build_crd()
    version = crd["spec"]["versions"][0]
    assert version["subresources"]["scale"] == {
        "specReplicasPath": ".spec.scaling.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector",
    }
    assert "isvc" not in crd["spec"]["names"]["shortNames"]
    assert crd["spec"]["names"]["categories"] == ["tokenscale"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["required"] == ["model", "hardware", "workload"]
    hw = spec["properties"]["hardware"]["properties"]
    assert hw["tensorParallelSize"]["enum"] == ["auto", 1, 2, 4, 8]
    assert hw["gpuMemoryUtilization"]["maximum"] == 1.0
    assert (
        spec["properties"]["model"]["properties"]["hfConfig"][
            "x-kubernetes-preserve-unknown-fields"
        ]
        is True
    )
    _assert_structural(version["schema"]["openAPIV3Schema"])


def _assert_structural(node: Any, path: str = "") -> None:
    """Every node has a type (or int-or-string / preserve-unknown), no refs, no unions."""
    assert isinstance(node, dict)
    assert not {"$ref", "anyOf", "oneOf", "allOf", "const", "title"} & set(node), path
    if not node.get("x-kubernetes-int-or-string"):
        assert "type" in node, f"{path} has no type"
    for key, child in (node.get("properties") or {}).items():
        _assert_structural(child, f"{path}.{key}")
    if isinstance(node.get("items"), dict):
        _assert_structural(node["items"], f"{path}[]")


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_examples_validate_against_the_crd_schema(example: Path) -> None:
    schema = build_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for doc in yaml.safe_load_all(example.read_text()):
        jsonschema.Draft4Validator(schema).validate(doc)


def test_crd_schema_rejects_what_the_api_server_should() -> None:
    schema = build_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    bad = manifest(hardware={"tensorParallelSize": 3})
    with pytest.raises(jsonschema.ValidationError, match="3 is not one of"):
        jsonschema.Draft4Validator(schema).validate(bad)


def test_committed_crd_reference_is_generated_from_the_models() -> None:
    path = ROOT / "docs" / "crd-reference.md"
    assert path.read_text() == crd_reference(), "run: tokenscale crd --docs docs/crd-reference.md"
    assert "| `spec.hardware.tensorParallelSize` |" in path.read_text()


def test_the_pod_template_does_not_depend_on_the_replica_count() -> None:
    """A scale (a pin, or a new design rate) must not roll the pods: nothing in the template may
    follow the load each replica carries."""
    example = next(e for e in EXAMPLES if e.stem == "llama-3.1-8b-l4")
    service = parse_manifests(example.read_text())[0]
    templates = []
    for pin in (None, 5, 60):
        s = service.spec.model_copy(
            update={"scaling": service.spec.scaling.model_copy(update={"replicas": pin})}
        )
        plan = plan_service(s, "svc")
        objects = render_bundle("svc", "ns", s, plan, plan.sized.total, Owner("svc", "u")).objects
        templates.append(objects[0]["spec"]["template"])
    assert templates[0] == templates[1] == templates[2]
