"""The InferencePool (render/inference_pool.py): rendered only with an endpoint picker named,
valid against the Gateway API Inference Extension's own CRD schema (a copy under
tests/fixtures/crds, with its licence), selecting exactly the pods the service runs."""

import functools
from typing import Any

import jsonschema
import pytest
import yaml

from tests.helpers import ROOT
from tests.helpers import spec as make_spec
from tests.unit.test_actuation import _strict
from tokenscale.planning import plan_service
from tokenscale.render import Owner, render_bundle
from tokenscale.render.engine_args import VLLM_PORT

CRD = (
    ROOT
    / "tests"
    / "fixtures"
    / "crds"
    / "inference.networking.k8s.io_inferencepools.upstream.yaml"
)


@functools.cache
def _validator() -> jsonschema.protocols.Validator:
    crd = yaml.safe_load(CRD.read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    return jsonschema.Draft7Validator(_strict(version["schema"]["openAPIV3Schema"]))


def _pools(**patch: Any) -> list[dict[str, Any]]:
    spec = make_spec(**patch)
    bundle = render_bundle("chat", "team", spec, plan_service(spec), 2, Owner("chat", "uid-1"))
    return [o for o in bundle.objects if o["kind"] == "InferencePool"]


def test_the_pool_validates_against_the_extensions_crd_and_selects_the_workloads_pods() -> None:
    spec = make_spec(gateway={"inferencePool": {"endpointPicker": "chat-epp"}})
    bundle = render_bundle("chat", "team", spec, plan_service(spec), 2, Owner("chat", "uid-1"))
    (pool,) = [o for o in bundle.objects if o["kind"] == "InferencePool"]
    _validator().validate(pool)
    assert pool["apiVersion"] == "inference.networking.k8s.io/v1"
    assert pool["metadata"]["name"] == "chat"
    assert pool["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    match = pool["spec"]["selector"]["matchLabels"]
    pod_labels = bundle.workload["spec"]["template"]["metadata"]["labels"]
    assert match.items() <= pod_labels.items()
    assert match == bundle.workload["spec"]["selector"]["matchLabels"]
    assert pool["spec"]["targetPorts"] == [{"number": VLLM_PORT}]
    assert pool["spec"]["endpointPickerRef"] == {
        "name": "chat-epp",
        "port": {"number": 9002},
        "failureMode": "FailClose",
    }


def test_the_spec_names_the_pool_port_and_failure_mode() -> None:
    (pool,) = _pools(
        gateway={
            "inferencePool": {
                "name": "pool-a",
                "endpointPicker": "epp",
                "endpointPickerPort": 9100,
                "failureMode": "FailOpen",
            }
        }
    )
    _validator().validate(pool)
    assert pool["metadata"]["name"] == "pool-a"
    assert pool["spec"]["endpointPickerRef"]["port"] == {"number": 9100}
    assert pool["spec"]["endpointPickerRef"]["failureMode"] == "FailOpen"


def test_no_endpoint_picker_no_pool() -> None:
    """A pool without our endpoint picker is someone else's: read, not rendered."""
    assert _pools(gateway={"inferencePool": {}}) == []
    assert _pools() == []


def test_a_misspelt_field_is_refused_by_the_schema() -> None:
    (pool,) = _pools(gateway={"inferencePool": {"endpointPicker": "epp"}})
    pool["spec"]["targetPort"] = pool["spec"].pop("targetPorts")
    with pytest.raises(jsonschema.ValidationError):
        _validator().validate(pool)


def test_a_variant_mix_pool_selects_every_variants_pods() -> None:
    spec = make_spec(
        hardware={
            "gpu": None,
            "tensorParallelSize": None,
            "variants": [
                {"gpu": "H100-SXM-80GB", "tensorParallelSize": 1, "maxReplicas": 4},
                {"gpu": "L40S-48GB", "tensorParallelSize": 1, "maxReplicas": 8},
            ],
        },
        gateway={"inferencePool": {"endpointPicker": "epp"}},
    )
    bundle = render_bundle("chat", "team", spec, plan_service(spec), 3, Owner("chat", "u"))
    (pool,) = [o for o in bundle.objects if o["kind"] == "InferencePool"]
    _validator().validate(pool)
    match = pool["spec"]["selector"]["matchLabels"]
    for workload in bundle.workloads:
        assert match.items() <= workload["spec"]["template"]["metadata"]["labels"].items()


def test_the_worked_example_renders_a_valid_pool_and_can_wake() -> None:
    from tokenscale.api import InferenceService  # noqa: PLC0415

    path = ROOT / "deploy" / "examples" / "gateway" / "llama-3.1-8b-inferencepool-zero.yaml"
    svc = InferenceService.model_validate(yaml.safe_load(path.read_text()))
    assert svc.spec.scaling.min_replicas == 0
    assert len(svc.spec.activation_sources) == 2
    bundle = render_bundle(
        svc.metadata.name, "inference", svc.spec, plan_service(svc.spec), 1, Owner("x", "u")
    )
    (pool,) = [o for o in bundle.objects if o["kind"] == "InferencePool"]
    _validator().validate(pool)
    assert pool["metadata"]["name"] == "llama-8b-pool"
