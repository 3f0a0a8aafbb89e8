"""What no one fleet shape runs is refused where the spec is read, once: a GPU mix with
prefill/decode pools, ``keda`` or a ``workloadRef`` with several workloads. The CLI's ``plan``,
``simulate`` and ``check`` exit 2 naming the fields and the fix (the operator's
``InvalidSpec`` is tests/integration/test_operator.py's); every spec that is accepted plans one
shape and renders what its actuation can scale."""

import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError
from typer.testing import CliRunner

from tests.helpers import manifest
from tokenscale.api import InferenceService
from tokenscale.cli.app import app
from tokenscale.planning import plan_service
from tokenscale.render import render_bundle
from tokenscale.scaling import decide_plan_only

runner = CliRunner()

MIX: dict[str, Any] = {
    "gpu": None,
    "tensorParallelSize": None,
    "variants": [
        {"gpu": "H100-SXM-80GB", "tensorParallelSize": 1, "maxReplicas": 2},
        {"gpu": "L40S-48GB", "tensorParallelSize": 1, "maxReplicas": 8, "gpuHourPrice": 1.1},
    ],
}
KEDA: dict[str, Any] = {
    "actuation": "keda",
    "keda": {"serverAddress": "http://prometheus.monitoring:9090"},
}
REF: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "chat-vllm"}


def _doc(mix: bool, mode: str, actuation: str, ref: bool) -> dict[str, Any]:
    patch: dict[str, Any] = {"serving": {"disaggregation": mode}}
    if mix:
        patch["hardware"] = MIX
    if actuation == "keda":
        patch["scaling"] = KEDA
    elif actuation == "advisory":
        patch["scaling"] = {"actuation": "advisory"}
    if ref:
        patch["workloadRef"] = REF
    return manifest(**patch)


COMBOS = list(
    itertools.product((False, True), ("off", "on", "auto"), ("direct", "keda"), (False, True))
)


@pytest.mark.parametrize(("mix", "mode", "actuation", "ref"), COMBOS)
def test_every_accepted_spec_plans_one_shape_its_actuation_can_scale(
    mix: bool, mode: str, actuation: str, ref: bool
) -> None:
    doc = _doc(mix, mode, actuation, ref)
    try:
        service = InferenceService.model_validate(doc)
    except ValidationError as err:
        text = str(err)
        several = ["spec.hardware.variants"] * mix + ["spec.serving.disaggregation"] * (
            mode != "off"
        )
        assert several, text  # only a spec that asks for several workloads is refused
        if mix and mode != "off":
            assert "spec.hardware.variants with spec.serving.disaggregation" in text
        if actuation == "keda":
            assert "spec.scaling.actuation: keda scales one workload" in text
        if ref:
            assert "spec.workloadRef scales one existing workload" in text
        assert all(field in text for field in several)
        # the fix it names makes the spec valid: one workload, or no rule that needs one
        fixed = _doc(False, "off", actuation, ref)
        InferenceService.model_validate(fixed)
        return
    plan = plan_service(service.spec, "test")
    assert not (plan.is_mix and plan.is_disaggregated)  # never both shapes at once
    if actuation == "keda" or ref:
        decision = decide_plan_only(plan, None)
        bundle = render_bundle("test", "prod", service.spec, plan, decision.replicas)
        assert len(bundle.workloads or (bundle.workload,)) == 1  # () means the one workload
        assert not plan.is_mix
        assert not plan.is_disaggregated


def _write(tmp_path: Path, doc: dict[str, Any]) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize(
    ("mix", "mode", "actuation", "ref", "fields"),
    [
        (True, "on", "direct", False, ("spec.hardware.variants", "spec.serving.disaggregation")),
        (True, "auto", "direct", False, ("spec.hardware.variants", "disaggregation: auto")),
        (True, "off", "keda", False, ("spec.scaling.actuation", "spec.hardware.variants")),
        (False, "on", "keda", False, ("spec.scaling.actuation", "spec.serving.disaggregation")),
        (False, "auto", "keda", False, ("spec.scaling.actuation", "disaggregation: auto")),
        (True, "off", "direct", True, ("spec.workloadRef", "spec.hardware.variants")),
        (False, "on", "direct", True, ("spec.workloadRef", "spec.serving.disaggregation")),
    ],
)
@pytest.mark.parametrize("command", ["plan", "check", "simulate"])
def test_the_cli_refuses_a_shape_conflict_naming_the_fields_and_the_fix(
    tmp_path: Path,
    command: str,
    mix: bool,
    mode: str,
    actuation: str,
    ref: bool,
    fields: tuple[str, ...],
) -> None:
    path = _write(tmp_path, _doc(mix, mode, actuation, ref))
    args = [command, str(path)]
    if command == "simulate":
        trace = tmp_path / "t.csv"
        trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n0,100,10\n1,100,10\n")
        args += ["--trace", str(trace)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    for field in fields:
        assert field in result.output
    fix = "disaggregation: off" if mode != "off" else "spec.hardware.gpu"
    assert fix in result.output
