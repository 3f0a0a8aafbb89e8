"""One Deployment per GPU variant: golden files per variant, Kubernetes validity, selectors,
node selection, the scale order at another total, and ``tokenscale render``."""

import os
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from typer.testing import CliRunner

from tests.helpers import ROOT
from tokenscale.api.manifest import parse_manifests
from tokenscale.cli.app import app
from tokenscale.planning import Plan, plan_service
from tokenscale.render import Owner, render_bundle
from tokenscale.render.bundle import RenderedBundle
from tokenscale.render.variants import VARIANT_LABEL, variant_workload_name

GOLDEN = ROOT / "tests" / "golden" / "variants"
UPDATE = os.environ.get("TOKENSCALE_UPDATE_GOLDEN") == "1"
MIXED = ROOT / "deploy" / "examples" / "variants" / "llama-3.1-8b-h100-l40s.yaml"


def _load_aware() -> dict[str, Any]:
    doc = yaml.safe_load(MIXED.read_text())
    doc["spec"]["gateway"] = {"inferencePool": {"name": "llama-8b-pool"}}
    return doc


def _bundle(doc: dict[str, Any], total: int | None = None) -> tuple[Plan, RenderedBundle]:
    svc = parse_manifests(yaml.safe_dump(doc))[0]
    plan = plan_service(svc.spec, svc.metadata.name)
    n = plan.sized.total if total is None else total
    bundle = render_bundle(
        svc.metadata.name, "inference", svc.spec, plan, n, Owner(svc.metadata.name, "uid-1")
    )
    return plan, bundle


def test_golden_per_variant() -> None:
    _, bundle = _bundle(_load_aware())
    GOLDEN.mkdir(parents=True, exist_ok=True)
    files = {
        f"{w['metadata']['labels'][VARIANT_LABEL]}.yaml": yaml.safe_dump(w, sort_keys=False)
        for w in bundle.workloads
    }
    files["service-and-pdb.yaml"] = yaml.safe_dump_all(
        [bundle.service, bundle.pdb], sort_keys=False
    )
    for fname, text in files.items():
        golden = GOLDEN / fname
        if UPDATE or not golden.exists():
            golden.write_text(text)
        assert text == golden.read_text(), f"regenerate with TOKENSCALE_UPDATE_GOLDEN=1 ({golden})"


def test_each_variant_has_its_own_workload_gpu_and_node_selection() -> None:
    plan, bundle = _bundle(_load_aware())
    by = {w["metadata"]["labels"][VARIANT_LABEL]: w for w in bundle.workloads}
    assert set(by) == {"h100-sxm-80gb", "l40s-48gb"}
    mix = {v.name: v.replicas for v in plan.variants}
    for variant, w in by.items():
        assert w["metadata"]["name"] == variant_workload_name("llama-8b-mixed", variant)
        assert w["spec"]["replicas"] == mix[variant]
        assert w["spec"]["selector"]["matchLabels"][VARIANT_LABEL] == variant
        pod = w["spec"]["template"]
        assert pod["metadata"]["labels"][VARIANT_LABEL] == variant
        assert pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert (
        by["h100-sxm-80gb"]["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.product"]
        == "NVIDIA-H100-80GB-HBM3"
    )
    assert (
        by["l40s-48gb"]["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.product"]
        == "NVIDIA-L40S"
    )
    # each engine gets its own variant's flags (the KV pool differs, so the sequence cap may)
    own = {v.name: p for v, p in zip(plan.variants, plan.variant_plans, strict=True)}
    for variant, w in by.items():
        args = w["spec"]["template"]["spec"]["containers"][0]["args"]
        assert str(own[variant].max_num_seqs) == args[args.index("--max-num-seqs") + 1]
    # the Service spreads over every variant: its selector has no variant label
    assert VARIANT_LABEL not in bundle.service["spec"]["selector"]
    for w in bundle.workloads:
        labels = w["spec"]["template"]["metadata"]["labels"]
        assert all(labels[k] == v for k, v in bundle.service["spec"]["selector"].items())


@pytest.mark.parametrize("version", ["1.29.0", "1.33.0"])
def test_every_variant_object_passes_strict_kubernetes_validation(version: str) -> None:
    _, bundle = _bundle(_load_aware())
    for obj in bundle.objects:
        kubernetes_validate.validate(obj, version, strict=True)


def test_another_total_follows_the_scale_order() -> None:
    plan, _ = _bundle(_load_aware())
    mix = {v.name: v.replicas for v in plan.variants}  # 4 H100 (full) + 6 L40S
    _, up = _bundle(_load_aware(), plan.sized.total + 2)
    _, down = _bundle(_load_aware(), 3)
    got_up = {w["metadata"]["labels"][VARIANT_LABEL]: w["spec"]["replicas"] for w in up.workloads}
    got_down = {
        w["metadata"]["labels"][VARIANT_LABEL]: w["spec"]["replicas"] for w in down.workloads
    }
    # up: the H100s are at their maxReplicas, so the L40S take the two
    assert got_up == {"h100-sxm-80gb": mix["h100-sxm-80gb"], "l40s-48gb": mix["l40s-48gb"] + 2}
    # down: the dearest capacity (L40S, $0.17/h per RPS vs $0.14) goes first
    assert got_down == {"h100-sxm-80gb": 3, "l40s-48gb": 0}


def test_scaling_never_changes_a_pod_template() -> None:
    _, a = _bundle(_load_aware())
    _, b = _bundle(_load_aware(), 3)
    assert a.config_hash == b.config_hash


def test_cli_render_prints_one_deployment_per_variant(tmp_path: Path) -> None:
    f = tmp_path / "mixed.yaml"
    f.write_text(yaml.safe_dump(_load_aware()))
    result = CliRunner().invoke(app, ["render", str(f)])
    assert result.exit_code == 0, result.output
    kinds = [d["kind"] for d in yaml.safe_load_all(result.stdout)]
    assert kinds == ["Deployment", "Deployment", "Service", "PodDisruptionBudget"]
