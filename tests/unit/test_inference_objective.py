"""Classes render: vLLM's priority scheduling, and with spec.gateway.inferencePool one
InferenceObjective per class (render/inference_objective.py), valid against llm-d's own CRD
schema (a copy under tests/fixtures/crds, with its licence); the tenants example's golden."""

import functools
import os
from typing import Any

import jsonschema
import pytest
import yaml

from tests.helpers import ROOT, manifest
from tests.unit.test_actuation import _strict
from tests.unit.test_classes import agent, batch, chat, doc
from tokenscale.api.manifest import parse_manifests
from tokenscale.planning import plan_service
from tokenscale.render import Owner, render_bundle

CRD = ROOT / "tests" / "fixtures" / "crds" / "llm-d.ai_inferenceobjectives.upstream.yaml"
EXAMPLE = ROOT / "deploy" / "examples" / "tenants" / "llama-3.1-8b-h100-tenants.yaml"
GOLDEN = ROOT / "tests" / "golden" / "tenants" / "llama-3.1-8b-h100-tenants.yaml"
UPDATE = os.environ.get("TOKENSCALE_UPDATE_GOLDEN") == "1"


@functools.cache
def _validator() -> jsonschema.protocols.Validator:
    crd = yaml.safe_load(CRD.read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2")
    return jsonschema.Draft7Validator(_strict(version["schema"]["openAPIV3Schema"]))


def _render(text: str) -> list[dict[str, Any]]:
    (service,) = parse_manifests(text)
    plan = plan_service(service.spec, service.metadata.name)
    return render_bundle(
        service.metadata.name,
        service.metadata.namespace or "default",
        service.spec,
        plan,
        plan.replica_count,
        Owner(service.metadata.name, "uid-1"),
    ).objects


def _args(objects: list[dict[str, Any]]) -> list[str]:
    (dep,) = [o for o in objects if o["kind"] == "Deployment"]
    return list(dep["spec"]["template"]["spec"]["containers"][0]["args"])


def test_classes_turn_on_vllms_priority_scheduling_and_none_leave_it_off() -> None:
    with_classes = _args(_render(yaml.safe_dump(doc([chat(), batch()]))))
    i = with_classes.index("--scheduling-policy")
    assert with_classes[i + 1] == "priority"
    assert "--scheduling-policy" not in _args(_render(yaml.safe_dump(manifest())))


def test_one_objective_per_class_bound_to_the_pool_and_valid_against_its_crd() -> None:
    d = doc([chat(), agent(), batch(priority=-5)])
    d["spec"]["gateway"] = {"inferencePool": {"name": "shared-pool"}}
    objects = _render(yaml.safe_dump(d))
    found = [o for o in objects if o["kind"] == "InferenceObjective"]
    assert [o["metadata"]["name"] for o in found] == ["test-chat", "test-agent", "test-batch"]
    assert [o["spec"]["priority"] for o in found] == [10, 0, -5]
    for o in found:
        _validator().validate(o)
        assert o["apiVersion"] == "llm-d.ai/v1alpha2"
        assert o["spec"]["poolRef"] == {
            "group": "inference.networking.k8s.io",
            "kind": "InferencePool",
            "name": "shared-pool",
        }
        assert o["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    # no endpointPicker: the pool is someone else's, so no InferencePool is rendered
    assert not [o for o in objects if o["kind"] == "InferencePool"]


def test_without_the_gateway_no_objective_is_rendered() -> None:
    objects = _render(yaml.safe_dump(doc([chat(), batch()])))
    assert not [o for o in objects if o["kind"] == "InferenceObjective"]


def test_an_objective_the_crd_refuses_is_refused_here() -> None:
    """The validator can fail: a priority that is not an integer, a missing poolRef."""
    d = doc([chat()])
    d["spec"]["gateway"] = {"inferencePool": {}}
    (good,) = [o for o in _render(yaml.safe_dump(d)) if o["kind"] == "InferenceObjective"]
    _validator().validate(good)
    with pytest.raises(jsonschema.ValidationError):
        _validator().validate({**good, "spec": {**good["spec"], "priority": "high"}})
    with pytest.raises(jsonschema.ValidationError):
        _validator().validate({**good, "spec": {"priority": 1}})


def test_the_tenants_example_golden() -> None:
    text = yaml.safe_dump_all(_render(EXAMPLE.read_text()), sort_keys=False)
    if UPDATE or not GOLDEN.exists():
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), f"regenerate with TOKENSCALE_UPDATE_GOLDEN=1 ({GOLDEN})"
