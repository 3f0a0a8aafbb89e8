"""Every validation error in one run, "did you mean" for misspellings, and errors as JSON on
stdout for `-o json`, with exit code 2."""

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tests.helpers import deep_merge, manifest
from tokenscale.api.errors import SpecError, did_you_mean
from tokenscale.cli.app import app
from tokenscale.planning.validate import validate_manifests

runner = CliRunner()

TYPOS = deep_merge(
    manifest(
        model={"name": "x", "catalog": "llama-3.1-8"},
        hardware={"gpu": "H100-SXM-80G"},
        slo={"ttftP99Second": 2},
    ),
    {"spec": {"workload": {"rsp": {"mean": 3}, "rps": None}}},
)


def _issues(doc: dict[str, object] | list[dict[str, object]]) -> dict[str, str]:
    text = yaml.safe_dump_all(doc) if isinstance(doc, list) else yaml.safe_dump(doc)
    try:
        validate_manifests(text)
    except SpecError as err:
        return {i.path: i.message for i in err.issues}
    raise AssertionError("no error")


def test_schema_and_catalog_problems_come_together() -> None:
    issues = _issues(TYPOS)
    assert set(issues) == {
        "spec.workload.rps",
        "spec.workload.rsp",
        "spec.slo.ttftP99Second",
        "spec.hardware.gpu",
        "spec.model.catalog",
    }
    assert "(did you mean 'rps'?)" in issues["spec.workload.rsp"]
    assert "(did you mean 'ttftP99Seconds'?)" in issues["spec.slo.ttftP99Second"]
    assert "(did you mean 'H100-SXM-80GB'?)" in issues["spec.hardware.gpu"]
    assert "(did you mean 'llama-3.1-8b'?)" in issues["spec.model.catalog"]


def test_every_service_of_a_file_is_judged() -> None:
    one = manifest(hardware={"gpu": "X1"})
    two = deep_merge(manifest(model={"catalog": "nope"}), {"metadata": {"name": "two"}})
    issues = _issues([one, two])
    assert any(p.endswith("spec.hardware.gpu") and p.startswith("test") for p in issues)
    assert any(p.endswith("spec.model.catalog") and p.startswith("two") for p in issues)


def test_a_gpu_and_a_model_problem_in_one_valid_schema() -> None:
    issues = _issues(manifest(hardware={"gpu": "H10"}, model={"catalog": "mixtral"}))
    assert {"spec.hardware.gpu", "spec.model.catalog"} <= set(issues)


def test_a_bad_tp_is_reported_before_planning() -> None:
    issues = _issues(manifest(hardware={"tensorParallelSize": 8}, model={"catalog": "qwen2.5-7b"}))
    assert "spec.hardware.tensorParallelSize" in issues


def test_no_suggestion_when_nothing_is_close() -> None:
    assert did_you_mean("zzzzzz", ["rps", "inputTokens"]) == ""
    assert did_you_mean("InputTokens", ["rps", "inputTokens"]) == " (did you mean 'inputTokens'?)"
    issues = _issues(deep_merge(manifest(), {"spec": {"workload": {"qqqqqqqq": 1}}}))
    assert "did you mean" not in issues["spec.workload.qqqqqqqq"]


def test_nested_and_listed_fields_get_suggestions() -> None:
    doc = deep_merge(manifest(), {"spec": {"scaling": {"redundancy": {"factr": 1.2}}}})
    assert "(did you mean 'factor'?)" in _issues(doc)["spec.scaling.redundancy.factr"]


def test_json_errors_go_to_stdout_with_exit_2(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(TYPOS))
    result = runner.invoke(app, ["plan", str(f), "-o", "json"])
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert doc["error"] == "invalid"
    assert doc["file"] == str(f)
    assert len(doc["issues"]) == 5
    assert {"path", "message"} == set(doc["issues"][0])


def test_unreadable_input_is_json_too(tmp_path: Path) -> None:
    result = runner.invoke(app, ["plan", str(tmp_path / "nope.yaml"), "-o", "json"])
    assert result.exit_code == 2
    assert "cannot read" in json.loads(result.stdout)["message"]


def test_table_errors_stay_on_stderr(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(TYPOS))
    result = runner.invoke(app, ["plan", str(f)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "spec.workload.rsp" in result.stderr


@pytest.mark.parametrize("command", ["render", "simulate"])
def test_render_and_simulate_json_errors_too(tmp_path: Path, command: str) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(TYPOS))
    trace = tmp_path / "t.csv"
    trace.write_text("arrival,input,output\n0,10,10\n")
    extra = ["--trace", str(trace)] if command == "simulate" else []
    result = runner.invoke(app, [command, str(f), *extra, "-o", "json"])
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert doc["error"] == "invalid"
    assert "spec.workload.rsp" in {i["path"] for i in doc["issues"]}
