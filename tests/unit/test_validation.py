"""Bad input: each rule gives an error naming the field path and what is allowed."""

from typing import Any

import pytest
import yaml

from tests.helpers import deep_merge, manifest
from tokenscale.api.errors import SpecError
from tokenscale.api.manifest import parse_manifests
from tokenscale.planning import plan_service


def _parse_and_plan(doc: dict[str, Any]) -> None:
    services = parse_manifests(yaml.safe_dump(doc))
    plan_service(services[0].spec)


def _errors(doc: dict[str, Any]) -> SpecError:
    with pytest.raises(SpecError) as exc:
        _parse_and_plan(doc)
    return exc.value


CASES: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "negative RPS",
        {"workload": {"rps": {"mean": -1}}},
        "spec.workload.rps.mean",
        "greater than or equal to 0",
    ),
    (
        "P99 below mean",
        {"workload": {"inputTokens": {"mean": 1000, "p99": 500}}},
        "spec.workload.inputTokens",
        "p99 must be >= mean",
    ),
    (
        "P95 above P99",
        {"workload": {"outputTokens": {"mean": 100, "p95": 900, "p99": 800}}},
        "spec.workload.outputTokens",
        "p95=900.0 exceeds p99=800.0",
    ),
    (
        "peak below mean",
        {"workload": {"rps": {"mean": 10, "peak": 5}}},
        "spec.workload.rps",
        "peak must be >= mean",
    ),
    (
        "peak and burst",
        {"workload": {"rps": {"mean": 10, "peak": 20, "burstFactor": 2}}},
        "spec.workload.rps",
        "peak or burstFactor, not both",
    ),
    (
        "burst below 1",
        {"workload": {"rps": {"mean": 10, "burstFactor": 0.5}}},
        "spec.workload.rps.burstFactor",
        "greater than or equal to 1",
    ),
    ("unknown field", {"workload": {"rpsMean": 3}}, "spec.workload.rpsMean", "not a known field"),
    ("unknown GPU", {"hardware": {"gpu": "H900"}}, "spec.hardware.gpu", "unknown GPU 'H900'"),
    ("no GPU", {"hardware": {"gpu": None}}, "spec.hardware", "exactly one of gpu"),
    (
        "TP not dividing heads",
        {
            "model": {"name": "Qwen/Qwen2.5-7B-Instruct", "catalog": "qwen2.5-7b"},
            "hardware": {"tensorParallelSize": 8},
        },
        "spec.hardware.tensorParallelSize",
        "attentionHeads=28 is not divisible by 8",
    ),
    (
        "TP not allowed",
        {"hardware": {"tensorParallelSize": 3}},
        "spec.hardware.tensorParallelSize",
        "'auto', 1, 2, 4 or 8",
    ),
    (
        "TP beyond node",
        {"hardware": {"tensorParallelSize": 8, "gpusPerNode": 4}},
        "spec.hardware",
        "exceeds gpusPerNode=4",
    ),
    (
        "utilization above 1",
        {"hardware": {"gpuMemoryUtilization": 1.2}},
        "spec.hardware.gpuMemoryUtilization",
        "less than or equal to 1",
    ),
    (
        "min above max",
        {"scaling": {"minReplicas": 5, "maxReplicas": 2}},
        "spec.scaling",
        "minReplicas=5 exceeds maxReplicas=2",
    ),
    (
        "redundancy below 1",
        {"scaling": {"redundancy": {"factor": 0.8}}},
        "spec.scaling.redundancy.factor",
        "greater than or equal to 1",
    ),
    (
        "two model sources",
        {"model": {"name": "x", "catalog": "llama-3.1-8b", "hfConfig": {"hidden_size": 1}}},
        "spec.model",
        "exactly one of catalog, architecture, hfConfig, hfConfigFile or hfConfigRef",
    ),
    (
        "unknown catalog model",
        {"model": {"name": "x", "catalog": "gpt-5"}},
        "spec.model.catalog",
        "'gpt-5' is not in the model catalog",
    ),
    (
        "unknown model name",
        {"model": {"name": "acme/secret-model", "catalog": None}},
        "spec.model.name",
        "is not in the model catalog",
    ),
    (
        "KV heads not dividing heads",
        {
            "model": {
                "name": "x",
                "catalog": None,
                "architecture": {
                    "layers": 4,
                    "hiddenSize": 512,
                    "attentionHeads": 8,
                    "kvHeads": 3,
                    "params": 1e8,
                },
            }
        },
        "spec.model.architecture",
        "kvHeads=3 must divide attentionHeads=8",
    ),
    (
        "bad weight dtype",
        {"model": {"weightDtype": "fp4"}},
        "spec.model.weightDtype",
        "'fp32', 'bf16', 'fp16', 'fp8', 'int8' or 'int4'",
    ),
    (
        "hfConfig missing layers",
        {"model": {"name": "x", "catalog": None, "hfConfig": {"hidden_size": 64}}},
        "spec.model.hfConfig.num_hidden_layers",
        "is required",
    ),
    ("zero TTFT SLO", {"slo": {"ttftP99Seconds": 0}}, "spec.slo.ttftP99Seconds", "greater than 0"),
    (
        "prefix hit rate 1",
        {"workload": {"prefixCacheHitRate": 1.0}},
        "spec.workload.prefixCacheHitRate",
        "less than 1",
    ),
    ("missing workload", {"workload": None}, "spec.workload", "is required"),
]


@pytest.mark.parametrize(("case", "patch", "path", "text"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_names_the_field(case: str, patch: dict[str, Any], path: str, text: str) -> None:
    err = _errors(manifest(**patch))
    matching = [i for i in err.issues if i.path == path]
    assert matching, f"{case}: expected an issue at {path}, got {err.issues}"
    assert any(text in i.message for i in matching), f"{case}: {matching}"


def test_every_invalid_document_is_reported_with_its_index() -> None:
    good = manifest()
    bad1 = deep_merge(good, {"spec": {"workload": {"rps": {"mean": -1}}}})
    bad2 = deep_merge(good, {"spec": {"scaling": {"minReplicas": 9, "maxReplicas": 1}}})
    text = yaml.safe_dump_all([good, bad1, bad2])
    with pytest.raises(SpecError) as exc:
        parse_manifests(text)
    assert "document 2: spec.workload.rps.mean" in exc.value.paths
    assert "document 3: spec.scaling" in exc.value.paths


def test_other_kinds_are_skipped_and_invalid_yaml_is_named() -> None:
    text = yaml.safe_dump_all(
        [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}, manifest()]
    )
    assert len(parse_manifests(text)) == 1
    with pytest.raises(SpecError) as exc:
        parse_manifests("spec: [unclosed")
    assert exc.value.paths == ("(yaml)",)
