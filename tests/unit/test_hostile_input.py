"""Hostile input: every command answers with exit 2 and ``field.path: what is wrong``, never a
traceback, and never prints NaN/Infinity or renders an object Kubernetes would refuse."""

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.helpers import deep_merge, manifest
from tokenscale.api.errors import SpecError
from tokenscale.api.manifest import parse_manifests
from tokenscale.cli.app import app
from tokenscale.planning import plan_service

runner = CliRunner()


def _run(tmp_path: Path, doc: dict[str, Any] | str, *args: str) -> tuple[int, str]:
    f = tmp_path / "isvc.yaml"
    f.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    result = runner.invoke(app, [*args[:1], str(f), *args[1:]])
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def _bad(tmp_path: Path, doc: dict[str, Any] | str, path: str, *args: str) -> str:
    code, out = _run(tmp_path, doc, *(args or ("plan",)))
    assert code == 2, out
    assert path in out, out
    return out


# Every float the spec has, with the path the error must name.
FLOAT_FIELDS: list[tuple[str, dict[str, Any]]] = [
    ("spec.workload.rps.mean", {"workload": {"rps": {"mean": "X"}}}),
    ("spec.workload.rps.burstFactor", {"workload": {"rps": {"burstFactor": "X"}}}),
    ("spec.workload.inputTokens.mean", {"workload": {"inputTokens": {"mean": "X", "p99": None}}}),
    ("spec.workload.outputTokens.p99", {"workload": {"outputTokens": {"p99": "X"}}}),
    ("spec.scaling.redundancy.factor", {"scaling": {"redundancy": {"factor": "X"}}}),
    ("spec.assumptions.stepOverheadSeconds", {"assumptions": {"stepOverheadSeconds": "X"}}),
    ("spec.assumptions.runtimeOverheadGiB", {"assumptions": {"runtimeOverheadGiB": "X"}}),
    ("spec.cost.gpuHourPrice", {"cost": {"gpuHourPrice": "X"}}),
    ("spec.cost.gpuHourPrices.L4", {"cost": {"gpuHourPrices": {"L4": "X"}}}),
    ("spec.slo.ttftP99Seconds", {"slo": {"ttftP99Seconds": "X"}}),
    (
        "spec.hardware.gpuSpec.memoryGiB",
        {
            "hardware": {
                "gpu": None,
                "gpuSpec": {"memoryGiB": "X", "hbmBandwidthGBps": 3350, "bf16Tflops": 989},
            }
        },
    ),
]


def _with_value(patch: Any, value: Any) -> Any:
    if isinstance(patch, dict):
        return {k: _with_value(v, value) for k, v in patch.items()}
    return value if patch == "X" else patch


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "1e308", "-1e308"])
@pytest.mark.parametrize(("path", "patch"), FLOAT_FIELDS, ids=[f[0] for f in FLOAT_FIELDS])
def test_infinite_and_absurd_floats_exit_2_naming_the_field(
    tmp_path: Path, path: str, patch: dict[str, Any], value: str
) -> None:
    doc = yaml.safe_dump(manifest(**_with_value(patch, 12345.0)))
    doc = doc.replace("12345.0", value)
    _bad(tmp_path, doc, path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    index=st.integers(0, len(FLOAT_FIELDS) - 1),
    value=st.floats(allow_nan=True, allow_infinity=True),
)
def test_any_float_anywhere_plans_or_names_the_field(index: int, value: float) -> None:
    """Property: any float (finite or not) in a numeric field gives a plan or a SpecError that
    names the field; nothing else escapes, and the JSON of the plan is strict JSON."""
    path, patch = FLOAT_FIELDS[index]
    doc = manifest(**_with_value(patch, value))
    paths: tuple[str, ...] = ()
    try:
        services = parse_manifests(yaml.safe_dump(doc))
        plan = plan_service(services[0].spec)
    except SpecError as err:
        paths = err.paths
    if paths:
        assert any(p.startswith(path.rsplit(".", 1)[0]) for p in paths), (path, paths)
        return
    text = json.dumps(plan.model_dump(mode="json"), allow_nan=False)
    assert "NaN" not in text
    assert "Infinity" not in text


def test_plan_json_has_no_nan_or_infinity(tmp_path: Path) -> None:
    code, out = _run(tmp_path, manifest(workload={"rps": {"mean": 0}}), "plan", "-o", "json")
    assert code in (0, 1), out
    json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))


@pytest.mark.parametrize(
    ("patch", "path", "words"),
    [
        ({"hardware": {"tensorParallelSize": True}}, "spec.hardware.tensorParallelSize", "bool"),
        ({"scaling": {"maxReplicas": True}}, "spec.scaling.maxReplicas", "integer"),
        ({"scaling": {"maxReplicas": 2**40}}, "spec.scaling.maxReplicas", "less than"),
        ({"scaling": {"redundancy": {"factor": 1e300}}}, "spec.scaling.redundancy.factor", ""),
        ({"workload": {"rps": {"mean": "10"}}}, "spec.workload.rps.mean", "number"),
        ({"serving": {"maxNumSeqs": 8.5}}, "spec.serving.maxNumSeqs", "integer"),
        ({"cost": {"gpuHourPrice": -3}}, "spec.cost.gpuHourPrice", "greater than"),
        ({"cost": {"gpuHourPrices": {"L4": -1}}}, "spec.cost.gpuHourPrices.L4", "greater"),
        (
            {"model": {"catalog": None, "architecture": {"layers": 32, "hiddenSize": 4096.5}}},
            "spec.model.architecture.hiddenSize",
            "integer",
        ),
        (
            {
                "model": {
                    "catalog": None,
                    "architecture": {"layers": 100000, "hiddenSize": 9000000},
                }
            },
            "spec.model",
            "",
        ),
        (
            {"model": {"catalog": None, "architecture": {"layers": 32, "params": 1e19}}},
            "spec.model.architecture.params",
            "less than",
        ),
        ({"deployment": {"modelLoadSeconds": 5_000_000_000}}, "spec.deployment", "less than"),
    ],
)
def test_numbers_are_bounded_and_not_coerced(
    tmp_path: Path, patch: dict[str, Any], path: str, words: str
) -> None:
    out = _bad(tmp_path, manifest(**patch), path)
    assert words in out


def test_a_huge_model_is_refused_not_planned(tmp_path: Path) -> None:
    arch = {
        "layers": 100_000,
        "hiddenSize": 1_000_000,
        "attentionHeads": 1000,
        "vocabSize": 100_000,
        "intermediateSize": 1_000_000,
    }
    out = _bad(tmp_path, manifest(model={"catalog": None, "architecture": arch}), "spec.model")
    assert "parameters" in out


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("num_hidden_layers", "abc", "not a number"),
        ("num_hidden_layers", True, "not a number"),
        ("hidden_size", 4096.5, "not a whole number"),
        ("num_attention_heads", -8, "out of range"),
        ("vocab_size", 1e30, "out of range"),
    ],
)
def test_hf_config_strings_bools_and_fractions_are_errors(
    tmp_path: Path, field: str, value: Any, words: str
) -> None:
    hf = {
        "model_type": "llama",
        "num_hidden_layers": 32,
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 14336,
        "vocab_size": 128256,
        field: value,
    }
    doc = manifest(model={"catalog": None, "hfConfig": hf})
    out = _bad(tmp_path, doc, f"spec.model.hfConfig.{field}")
    assert words in out


def test_non_utf8_input_exits_2(tmp_path: Path) -> None:
    f = tmp_path / "latin1.yaml"
    f.write_bytes(yaml.safe_dump(manifest()).encode() + b"# caf\xe9\n")
    result = runner.invoke(app, ["plan", str(f)])
    assert result.exit_code == 2
    assert "not UTF-8" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("depth", [65, 600, 5000])
def test_deep_nesting_exits_2(tmp_path: Path, depth: int) -> None:
    text = yaml.safe_dump(manifest()) + "extra: " + "[" * depth + "]" * depth + "\n"
    out = _bad(tmp_path, text, "isvc.yaml: nested deeper")  # the file, not "(yaml)"
    assert "nested deeper" in out


def test_duplicate_keys_are_an_error(tmp_path: Path) -> None:
    text = yaml.safe_dump(manifest()).replace(
        "  workload:\n", "  workload:\n    streaming: true\n    streaming: false\n", 1
    )
    out = _bad(tmp_path, text, "isvc.yaml: line")  # the file, not "(yaml)"
    assert "duplicate key 'streaming'" in out


@pytest.mark.parametrize(
    ("arg", "flag"),
    [
        ("--tensor-parallel-size=8", "--tensor-parallel-size"),
        ("--port", "--port"),
        ("--model", "--model"),
        ("--max_model_len=4096", "--max-model-len"),
        ("-tp", "-tp"),
        ("--quantization", "--quantization"),
    ],
)
def test_extra_args_cannot_override_rendered_flags(tmp_path: Path, arg: str, flag: str) -> None:
    doc = manifest(serving={"extraArgs": ["--disable-log-requests", arg, "9"]})
    out = _bad(tmp_path, doc, "spec.serving.extraArgs", "render")
    assert flag in out


def test_other_extra_args_pass(tmp_path: Path) -> None:
    doc = manifest(serving={"extraArgs": ["--disable-log-requests", "--seed", "1"]})
    code, out = _run(tmp_path, doc, "render")
    assert code == 0, out
    assert "--seed" in out


@pytest.mark.parametrize(
    ("deployment", "path", "words"),
    [
        ({"resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "4"}}}, "", "exceeds"),
        ({"resources": {"limits": {"cpu": "two"}}}, "", "not a Kubernetes quantity"),
        ({"labels": {"team": "a b"}}, ".labels", "label value"),
        ({"labels": {"bad key!": "x"}}, ".labels", "label or annotation key"),
        ({"hfTokenSecret": "HF_Token"}, ".hfTokenSecret", "object name"),
        ({"modelCacheClaim": "-x"}, ".modelCacheClaim", "object name"),
        ({"serviceAccountName": "a" * 254}, ".serviceAccountName", "object name"),
        ({"imagePullSecrets": ["ok", "Not_OK"]}, ".imagePullSecrets", "object name"),
        ({"env": [{"name": "A", "value": 3}]}, ".env", "not a string"),
        ({"env": [{"value": "x"}]}, ".env", "name"),
        ({"tolerations": [{"operator": "Maybe"}]}, ".tolerations", "Exists or Equal"),
        ({"tolerations": [{"effect": "NoSchedul"}]}, ".tolerations", "NoSchedule"),
        ({"tolerations": [{"tolerationSeconds": 1.5}]}, ".tolerations", "not an integer"),
    ],
)
def test_deployment_overrides_are_checked(
    tmp_path: Path, deployment: dict[str, Any], path: str, words: str
) -> None:
    out = _bad(tmp_path, manifest(deployment=deployment), f"spec.deployment{path}", "render")
    assert words in out


def test_a_limit_alone_lowers_the_default_request(tmp_path: Path) -> None:
    doc = manifest(deployment={"resources": {"limits": {"cpu": "2", "memory": "4Gi"}}})
    code, out = _run(tmp_path, doc, "render")
    assert code == 0, out
    dep = next(d for d in yaml.safe_load_all(out) if d["kind"] == "Deployment")
    res = dep["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert res["requests"]["cpu"] == "2"
    assert res["requests"]["memory"] == "4Gi"


@pytest.mark.parametrize("resource", ["cpu", "memory", "kubernetes.io/batch"])
def test_gpu_resource_must_be_an_extended_resource(tmp_path: Path, resource: str) -> None:
    gpu = {"memoryGiB": 80, "hbmBandwidthGBps": 3350, "bf16Tflops": 989, "resourceName": resource}
    doc = manifest(hardware={"gpu": None, "gpuSpec": gpu})
    _bad(tmp_path, doc, "spec.hardware.gpuSpec.resourceName")


def test_typo_in_kind_is_an_error(tmp_path: Path) -> None:
    doc = deep_merge(manifest(), {"kind": "InferenceSerivce"})
    out = _bad(tmp_path, doc, "kind")
    assert "InferenceSerivce" in out


def test_two_services_with_one_name_are_an_error(tmp_path: Path) -> None:
    text = yaml.safe_dump_all([manifest(), manifest()])
    out = _bad(tmp_path, text, "document 2: metadata.name", "render")
    assert "also the name of document 1" in out


@pytest.mark.parametrize(
    ("step", "path"),
    [
        ({"ttftP99Seconds": -0.5}, "spec.profile.steps[0].ttftP99Seconds"),
        ({"concurrency": -4}, "spec.profile.steps[0].concurrency"),
        ({"outputTokensMean": -3}, "spec.profile.steps[0].outputTokensMean"),
        ({"durationSeconds": float("inf")}, "spec.profile.steps[0].durationSeconds"),
    ],
)
def test_profile_numbers_are_bounded(tmp_path: Path, step: dict[str, Any], path: str) -> None:
    from tests.helpers import bench_step  # noqa: PLC0415 - only this test needs it

    base = bench_step(8, 2.0, 0.2, 0.03)
    profile = {
        "model": "m",
        "url": "http://x",
        "complete": True,
        "steps": [{**base, **step}],
        "kneeConcurrency": 8,
        "operatingConcurrency": 8,
    }
    _bad(tmp_path, manifest(profile=profile), path)


def test_sweep_with_nothing_feasible_exits_1(tmp_path: Path) -> None:
    doc = manifest(slo={"ttftP99Seconds": 0.0001, "tpotP99Seconds": 0.0001})
    code, out = _run(tmp_path, doc, "plan", "--sweep", "-o", "json")
    assert code == 1, out


def test_sweep_without_per_gpu_prices_ranks_by_gpu_hours(tmp_path: Path) -> None:
    code, out = _run(tmp_path, manifest(), "plan", "--sweep", "-o", "json")
    assert code == 0, out
    data = json.loads(out[out.index("{") :])
    assert data["ranked_by"] == "gpu-hours"
    priced = {r["gpu"] for r in data["rows"] if r["plan"] and r["plan"]["cost_per_hour"]}
    assert priced == {"H100-SXM-80GB"}
    hours = [
        r["plan"]["gpu_hours_per_million_output_tokens"]
        for r in data["rows"]
        if r["plan"] and r["plan"]["feasible"]
    ]
    assert hours == sorted(hours)


def test_sweep_refuses_a_price_for_an_unknown_gpu(tmp_path: Path) -> None:
    _bad(
        tmp_path,
        manifest(cost={"gpuHourPrices": {"H1OO": 2.0}}),
        "spec.cost.gpuHourPrices.H1OO",
        "plan",
        "--sweep",
    )


def test_plan_table_says_when_bounds_cap_the_count(tmp_path: Path) -> None:
    doc = manifest(workload={"rps": {"mean": 400}}, scaling={"maxReplicas": 2})
    code, out = _run(tmp_path, doc, "plan")
    assert "within bounds" not in out
    assert "capped at 2 replicas" in out
    assert code in (0, 1)


def test_floats_render_finite(tmp_path: Path) -> None:
    code, out = _run(tmp_path, manifest(), "render", "-o", "json")
    assert code == 0, out

    def walk(v: Any) -> None:
        if isinstance(v, float):
            assert math.isfinite(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(json.loads(out))


@pytest.mark.parametrize(
    ("metadata", "path"),
    [
        ({"name": "Llama_Chat"}, "metadata.name"),
        ({"name": "x", "namespace": "Team A"}, "metadata.namespace"),
    ],
)
def test_metadata_follows_kubernetes_rules(
    tmp_path: Path, metadata: dict[str, Any], path: str
) -> None:
    _bad(tmp_path, deep_merge(manifest(), {"metadata": metadata}), path, "render")


def test_render_namespace_option_is_checked(tmp_path: Path) -> None:
    _bad(tmp_path, manifest(), "--namespace", "render", "--namespace", "Bad_NS")


def test_odd_but_valid_names_render_with_derived_child_names(tmp_path: Path) -> None:
    doc = deep_merge(manifest(), {"metadata": {"name": "llama.chat"}})
    code, out = _run(tmp_path, doc, "render")
    assert code == 0, out
    assert "warning:" in out
    assert "llama-chat-" in out


def test_simulate_a_plan_that_cannot_serve_exits_1_with_the_reasons(tmp_path: Path) -> None:
    doc = manifest(
        model={"name": "meta-llama/Llama-3.1-405B", "catalog": "llama-3.1-405b"},
        hardware={"gpu": "L4-24GB", "tensorParallelSize": 1},
    )
    trace = tmp_path / "t.csv"
    trace.write_text("t,i,o\n0,100,10\n1,100,10\n")
    code, out = _run(
        tmp_path, doc, "simulate", "--trace", str(trace), "--columns", "arrival=t,input=i,output=o"
    )
    assert code == 1, out
    assert "cannot serve" in out
    assert "does not fit" in out
    assert "[red]" not in out


def test_simulate_an_infeasible_but_deployable_plan_runs_it_with_a_warning(
    tmp_path: Path,
) -> None:
    """maxReplicas below the need: infeasible, yet "what happens if I deploy this anyway" is a
    fair question — it simulates, and says why the plan is infeasible."""
    doc = manifest(workload={"rps": {"mean": 40}}, scaling={"maxReplicas": 1})
    trace = tmp_path / "t.csv"
    trace.write_text("t,i,o\n" + "".join(f"{i / 10},100,10\n" for i in range(50)))
    code, out = _run(
        tmp_path, doc, "simulate", "--trace", str(trace), "--columns", "arrival=t,input=i,output=o",
        "--policy", "static", "-o", "json",
    )  # fmt: skip
    assert code == 0, out
    assert "warning: simulating an infeasible plan" in out
    assert "maxReplicas=1 is below" in out


def test_crd_into_a_missing_folder_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["crd", "--out", str(tmp_path / "no" / "crd.yaml")])
    assert result.exit_code == 2
    assert "cannot write" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(("doc", "shape"), [("- a\n- b\n", "a list of 2 items"), ("42\n", "42")])
def test_a_document_that_is_not_a_mapping_says_what_it_is(
    tmp_path: Path, doc: str, shape: str
) -> None:
    out = _bad(tmp_path, doc, "(document)")
    assert f"is {shape}, not a mapping" in out
    assert "kind:" not in out


def test_bad_sweep_options_are_not_called_an_invalid_manifest(tmp_path: Path) -> None:
    out = _bad(tmp_path, manifest(), "--gpu", "plan", "--sweep", "--gpu", "NOPE")
    assert "invalid options for" in out
    assert "is not a valid InferenceService" not in out


@pytest.mark.parametrize("uid", ["", "../x", "not-a-uid", "3f2c1a9e8d4b4c1e9f3a2b7d6e5c4a10"])
def test_render_refuses_an_owner_uid_kubernetes_would_refuse(tmp_path: Path, uid: str) -> None:
    out = _bad(tmp_path, manifest(), "--owner-uid", "render", "--owner-uid", uid)
    assert "not a Kubernetes UID" in out


def test_render_writes_a_real_owner_uid(tmp_path: Path) -> None:
    uid = "3f2c1a9e-8d4b-4c1e-9f3a-2b7d6e5c4a10"
    code, out = _run(tmp_path, manifest(), "render", "--owner-uid", uid)
    assert code == 0, out
    assert f"uid: {uid}" in out


def test_playground_spec_that_is_not_yaml_exits_2(tmp_path: Path) -> None:
    """Before: the playground read the file with plain PyYAML first, so a tab was a traceback."""
    f = tmp_path / "tabs.yaml"
    f.write_text("apiVersion:\ttokenscale.io/v1alpha1\n")
    result = runner.invoke(app, ["playground", "--spec", str(f)])
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code == 2, result.output
    assert "line 1, column 12: not YAML or JSON" in result.output
