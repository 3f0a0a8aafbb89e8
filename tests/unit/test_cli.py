"""`tokenscale plan` and `tokenscale catalog` as a user runs them."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tests.helpers import EXAMPLES, deep_merge, manifest
from tokenscale.catalog import GPU_CATALOG
from tokenscale.cli.app import app

runner = CliRunner()


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_every_example_plans_feasibly(example: Path) -> None:
    result = runner.invoke(app, ["plan", str(example), "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["feasible"] is True
    assert data["replicas"]["total"] >= 1
    assert data["binding_constraint"] in ("throughput", "concurrency", "kv")
    assert data["cost_per_million_output_tokens"] > 0


def test_examples_cover_the_issue_list() -> None:
    names = {e.stem for e in EXAMPLES}
    assert {
        "llama-3.1-8b-l4",
        "llama-3.1-70b-h100-bf16-tp4",
        "llama-3.1-70b-h100-fp8",
        "qwen2.5-72b-h200",
        "mixtral-8x7b-h100",
        "qwen2.5-7b-hfconfig",
    } <= names
    hf = yaml.safe_load((EXAMPLES[0].parent / "qwen2.5-7b-hfconfig.yaml").read_text())
    assert "hfConfig" in hf["spec"]["model"]


def test_table_output_explains_the_plan() -> None:
    result = runner.invoke(app, ["plan", str(EXAMPLES[0]), "-o", "wide"])
    assert result.exit_code == 0
    for words in ("Memory per GPU", "KV pool", "Estimates vs SLO", "binding", "Cost", "per 1M"):
        assert words in result.output


def test_yaml_output_round_trips() -> None:
    result = runner.invoke(app, ["plan", str(EXAMPLES[0]), "-o", "yaml"])
    assert result.exit_code == 0
    assert yaml.safe_load(result.output)["tensor_parallel_size"] >= 1


def test_multi_document_file_plans_each(tmp_path: Path) -> None:
    second = deep_merge(manifest(), {"metadata": {"name": "second"}})
    f = tmp_path / "two.yaml"
    f.write_text(
        yaml.safe_dump_all([manifest(), {"kind": "ConfigMap", "apiVersion": "v1"}, second])
    )
    result = runner.invoke(app, ["plan", str(f), "-o", "json"])
    assert result.exit_code == 0, result.output
    assert [p["name"] for p in json.loads(result.output)] == ["test", "second"]


def test_invalid_file_exits_2_naming_the_field(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(deep_merge(manifest(), {"spec": {"hardware": {"gpu": "X1"}}})))
    result = runner.invoke(app, ["plan", str(f)])
    assert result.exit_code == 2
    assert "spec.hardware.gpu" in result.output
    assert "unknown GPU 'X1'" in result.output


def test_infeasible_plan_exits_1_with_reasons(tmp_path: Path) -> None:
    f = tmp_path / "slow.yaml"
    f.write_text(yaml.safe_dump(manifest(slo={"ttftP99Seconds": 0.001})))
    result = runner.invoke(app, ["plan", str(f), "-o", "json"])
    assert result.exit_code == 1
    assert json.loads(result.output)["feasible"] is False


def test_missing_file_and_empty_file(tmp_path: Path) -> None:
    assert runner.invoke(app, ["plan", str(tmp_path / "nope.yaml")]).exit_code == 2
    empty = tmp_path / "empty.yaml"
    empty.write_text("kind: ConfigMap\napiVersion: v1\n")
    assert runner.invoke(app, ["plan", str(empty)]).exit_code == 2


def test_sweep_sorts_feasible_by_cost() -> None:
    example = next(e for e in EXAMPLES if e.stem == "llama-3.1-70b-h100-bf16-tp4")
    result = runner.invoke(app, ["plan", str(example), "--sweep", "-o", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["rows"]
    assert len(rows) == len(GPU_CATALOG) * 4 * 4
    plans = [r["plan"] for r in rows if r["plan"] and r["plan"]["feasible"]]
    assert plans, "something must fit"
    costs = [
        p["cost_per_million_output_tokens"]
        for p in plans
        if p["cost_per_million_output_tokens"] is not None
    ]
    assert costs == sorted(costs)
    first_infeasible = next(
        i for i, r in enumerate(rows) if not (r["plan"] and r["plan"]["feasible"])
    )
    assert all(not (r["plan"] and r["plan"]["feasible"]) for r in rows[first_infeasible:])
    table = runner.invoke(app, ["plan", str(example), "--sweep", "--top", "5"])
    assert table.exit_code == 0
    assert "Sweep" in table.output


def test_catalog_lists_gpus_and_models() -> None:
    result = runner.invoke(app, ["catalog"])
    assert result.exit_code == 0
    assert "H100-SXM-80GB" in result.output
    assert "mixtral-8x7b" in result.output


def test_console_script_runs_from_stdin() -> None:
    text = yaml.safe_dump(manifest())
    done = subprocess.run(
        [sys.executable, "-m", "tokenscale", "plan", "-", "-o", "json"],
        input=text,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["model"] == "meta-llama/Llama-3.1-8B-Instruct"
