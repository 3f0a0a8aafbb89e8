"""Actuation modes: the KEDA ScaledObject against KEDA's own CRD schema (and a golden file), and
what each actuator writes for one rendered bundle."""

import functools
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from pydantic import ValidationError

from tests.helpers import manifest, spec
from tests.unit.test_status_transitions import FakeKube
from tokenscale.api import InferenceService
from tokenscale.api.crd import build_crd
from tokenscale.api.errors import SpecError
from tokenscale.api.manifest import parse_manifests
from tokenscale.controller.actuation import (
    REPLICAS_WRITER_ANNOTATION,
    Advisory,
    Desired,
    Direct,
    Keda,
    handed_over,
)
from tokenscale.kube.keda import KedaNotInstalledError
from tokenscale.planning import plan_service
from tokenscale.render import Owner, render_bundle
from tokenscale.render.keda import desired_query, scaled_object
from tokenscale.render.names import label_value
from tokenscale.scaling import decide_plan_only

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "tests" / "fixtures" / "crds"
GOLDEN = ROOT / "tests" / "golden" / "keda"
UPDATE = os.environ.get("TOKENSCALE_UPDATE_GOLDEN") == "1"
KEDA = {"actuation": "keda", "keda": {"serverAddress": "http://prometheus.monitoring:9090"}}


def _strict(schema: Any) -> Any:
    """The schema with unknown fields refused where the API server would prune them (an
    object with ``properties``, no ``additionalProperties`` and no preserve-unknown-fields):
    a misspelt field is an error here, not a silently dropped setting."""
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _strict(v) for k, v in schema.items()}
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


@functools.cache
def _validator() -> jsonschema.protocols.Validator:
    crd = yaml.safe_load((CRDS / "keda.sh_scaledobjects.upstream.yaml").read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1")
    return jsonschema.Draft7Validator(_strict(version["schema"]["openAPIV3Schema"]))


def _desired(name: str = "chat", decided: bool = True, previous: int | None = 3, **patch: Any):
    body = manifest(scaling=patch.pop("scaling", KEDA), **patch)
    body["metadata"]["name"] = name
    service = InferenceService.model_validate(body)
    plan = plan_service(service.spec, name)
    decision = decide_plan_only(plan, service.spec.scaling.replicas)
    bundle = render_bundle(
        name, "prod", service.spec, plan, decision.replicas, Owner(name, "uid-1")
    )
    return Desired(name, "prod", service.spec, bundle, decision, decided, previous, 2)


def test_the_scaled_object_validates_against_kedas_crd_and_matches_its_golden() -> None:
    objects = Keda().objects(_desired())
    so = objects[0]
    _validator().validate(so)
    text = yaml.safe_dump(so, sort_keys=False)
    golden = GOLDEN / "scaledobject.yaml"
    if UPDATE:
        golden.write_text(text)
    assert text == golden.read_text()


def test_the_strict_schema_refuses_a_misspelt_field() -> None:
    so = Keda().objects(_desired())[0]
    so["spec"]["minReplicas"] = 1  # KEDA's field is minReplicaCount
    with pytest.raises(jsonschema.ValidationError, match="minReplicas"):
        _validator().validate(so)
    so = Keda().objects(_desired())[0]
    del so["spec"]["scaleTargetRef"]
    with pytest.raises(jsonschema.ValidationError, match="scaleTargetRef"):
        _validator().validate(so)


def test_the_trigger_reads_the_decided_total_by_the_pods_label_value() -> None:
    name = "a" * 70  # not a valid label value: the series carry the derived one
    so = Keda().objects(_desired(name=name))[0]
    trigger = so["spec"]["triggers"][0]
    assert trigger["type"] == "prometheus"
    assert trigger["metadata"]["query"] == desired_query("prod", name)
    assert f'inferenceservice="{label_value(name)}"' in trigger["metadata"]["query"]
    assert label_value(name) != name
    assert 'constraint="total"' in trigger["metadata"]["query"]
    # the HPA asks ceil(value / 1): the decided count itself
    assert trigger["metricType"] == "AverageValue"
    assert trigger["metadata"]["threshold"] == "1"
    assert trigger["metadata"]["ignoreNullValues"] == "false"


def test_kedas_hpa_adds_no_stabilisation_and_no_step_limit_of_its_own() -> None:
    scaling = spec(scaling={**KEDA, "maxReplicas": 12}).scaling
    assert scaling.keda is not None
    so = scaled_object("chat", "prod", {"apiVersion": "apps/v1", "kind": "Deployment",
                                        "name": "chat"}, scaling, scaling.keda)  # fmt: skip
    behavior = so["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    for rules in behavior.values():
        assert rules["stabilizationWindowSeconds"] == 0
        assert rules["tolerance"] == 0
        assert rules["policies"] == [{"type": "Pods", "value": 12, "periodSeconds": 15}]
    assert (so["spec"]["minReplicaCount"], so["spec"]["maxReplicaCount"]) == (1, 12)


def test_keda_without_a_server_address_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError, match=r"spec\.scaling\.keda\.serverAddress"):
        spec(scaling={"actuation": "keda"})
    with pytest.raises(ValidationError):
        spec(scaling={"actuation": "sometimes"})


def test_direct_writes_the_bundle_as_rendered() -> None:
    wanted = _desired(scaling={})
    assert Direct().objects(wanted) == wanted.bundle.objects
    assert Direct().events(wanted) == []


def test_keda_leaves_replicas_out_marks_the_workload_and_owns_the_scaled_object() -> None:
    wanted = _desired()
    objects = Keda().objects(wanted)
    kinds = [o["kind"] for o in objects]
    assert kinds == ["ScaledObject", "Deployment", "Service", "PodDisruptionBudget"]
    workload = objects[1]
    assert "replicas" not in workload["spec"]
    assert "replicas" in wanted.bundle.workload["spec"]  # the bundle itself is untouched
    assert handed_over(workload)
    assert workload["metadata"]["annotations"][REPLICAS_WRITER_ANNOTATION] == "keda"
    assert workload["spec"]["template"] == wanted.bundle.workload["spec"]["template"]
    so = objects[0]
    assert so["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": workload["metadata"]["name"],
    }
    assert so["metadata"]["ownerReferences"][0]["uid"] == "uid-1"


def test_keda_with_several_workloads_is_refused_where_the_spec_is_read() -> None:
    """Not at reconcile time by the actuator: the spec's validator (api/shape_conflicts.py)
    names spec.scaling.actuation, so the CLI exits 2 and the operator writes nothing."""
    mixed = ROOT / "deploy" / "examples" / "variants" / "llama-3.1-8b-h100-l40s.yaml"
    body = yaml.safe_load(mixed.read_text())
    body["spec"]["scaling"].update(KEDA)
    with pytest.raises(SpecError, match=r"spec\.scaling\.actuation: keda scales one workload"):
        parse_manifests(yaml.safe_dump(body))


@pytest.mark.parametrize(
    ("decided", "previous", "expected"),
    [
        (True, 3, "Recommended 3→"),
        (True, None, "Recommended 2→"),  # no decision yet: from the workload as found
        (False, 3, None),  # the stored decision re-applied: nothing new to say
    ],
)
def test_advisory_writes_nothing_and_recommends_each_change(
    decided: bool, previous: int | None, expected: str | None
) -> None:
    wanted = _desired(decided=decided, previous=previous, scaling={"actuation": "advisory"})
    assert Advisory().objects(wanted) == []
    events = Advisory().events(wanted)
    if wanted.decision.replicas == previous:
        pytest.skip("the plan decided the same count")
    if expected is None:
        assert events == []
        return
    [(type_, reason, message)] = events
    assert (type_, reason) == ("Normal", "Recommended")
    assert message.startswith(f"{expected}{wanted.decision.replicas}: ")
    same = _desired(previous=wanted.decision.replicas, scaling={"actuation": "advisory"})
    assert Advisory().events(same) == []


ACTUATION_EXAMPLES = sorted((ROOT / "deploy" / "examples" / "actuation").glob("*.yaml"))


@pytest.mark.parametrize("example", ACTUATION_EXAMPLES, ids=[e.stem for e in ACTUATION_EXAMPLES])
def test_the_actuation_examples_validate_plan_and_render(example: Path) -> None:
    schema = build_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    docs = [d for d in yaml.safe_load_all(example.read_text()) if d["kind"] == "InferenceService"]
    assert len(docs) == 1
    jsonschema.Draft4Validator(schema).validate(docs[0])
    service = InferenceService.model_validate(docs[0])
    name, ns = service.metadata.name, service.metadata.namespace or "default"
    plan = plan_service(service.spec, name)
    decision = decide_plan_only(plan, service.spec.scaling.replicas)
    bundle = render_bundle(name, ns, service.spec, plan, decision.replicas, Owner(name, "u"))
    ref = service.spec.workload_ref
    target = None if ref is None else {"apiVersion": ref.api_version, "kind": ref.kind,
                                       "name": ref.name}  # fmt: skip
    wanted = Desired(name, ns, service.spec, bundle, decision, True, None, None, target)
    mode = service.spec.scaling.actuation
    assert mode in example.stem or (ref is not None and "workloadref" in example.stem)
    actuator = {"direct": Direct(), "advisory": Advisory(), "keda": Keda()}[mode]
    objects = actuator.objects(wanted)
    if mode == "keda":
        _validator().validate(objects[0])
    else:
        assert objects == []
    if ref is not None:  # the example's own Deployment is the one referenced
        [theirs] = [d for d in yaml.safe_load_all(example.read_text()) if d["kind"] == ref.kind]
        assert theirs["metadata"]["name"] == ref.name
        assert actuator.through_scale(wanted) == decision.replicas


def test_keda_on_a_referenced_workload_writes_only_the_scaled_object() -> None:
    ref = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "theirs"}
    wanted = _desired()
    wanted = Desired(**{**wanted.__dict__, "target": ref})
    [so] = Keda().objects(wanted)
    _validator().validate(so)
    assert so["spec"]["scaleTargetRef"] == ref
    assert so["metadata"]["ownerReferences"][0]["uid"] == "uid-1"  # ours, not theirs
    assert Keda().through_scale(wanted) is None
    assert Advisory().objects(wanted) == []
    assert Advisory().through_scale(wanted) is None
    assert Direct().objects(wanted) == []


class _NoKeda(FakeKube):
    """The API server without KEDA's CRD: a ScaledObject apply answers 404 on its type."""

    def read_scaled_object(self, ns: str, name: str) -> None:
        return None

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        if obj["kind"] == "ScaledObject":
            raise KedaNotInstalledError()
        return super().apply(obj)


def test_without_keda_installed_nothing_is_written_and_the_status_says_what_to_install() -> None:
    body = manifest(scaling=KEDA)
    body["metadata"].update(namespace="ns", uid="u-1", generation=1, resourceVersion="1")
    kube = _NoKeda(body)
    kube.run(None)
    assert kube.objects == {}  # no Deployment, Service or PDB before the refusal
    feasible = next(c for c in body["status"]["conditions"] if c["type"] == "PlanFeasible")
    assert (feasible["status"], feasible["reason"]) == ("False", "KedaMissing")
    assert "install KEDA" in feasible["message"]
    assert [e[1] for e in kube.events] == ["KedaMissing"]


def test_a_service_that_sleeps_gives_keda_no_second_idle_window() -> None:
    so = Keda().objects(
        _desired(
            scaling={
                "minReplicas": 0,
                "actuation": "keda",
                "keda": {"serverAddress": "http://prometheus:9090"},
                "activation": {"query": "sum(pending)"},
            }
        )
    )[0]
    _validator().validate(so)
    assert so["spec"]["minReplicaCount"] == 0
    assert so["spec"]["cooldownPeriod"] == 0
    assert "cooldownPeriod" not in Keda().objects(_desired())[0]["spec"]
