"""`plan --sweep` in every output format, each honouring `--top`; the sweep-only flags are
refused without `--sweep` instead of being silently ignored."""

import csv
import io
import json

import pytest
import yaml
from typer.testing import CliRunner

from tests.helpers import EXAMPLES
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.manifest import parse_manifests
from tokenscale.cli.app import app
from tokenscale.cli.sweep_formats import why
from tokenscale.planning import sweep

runner = CliRunner()
L4 = next(e for e in EXAMPLES if e.stem == "llama-3.1-8b-l4")
# 3 GPUs × 2 TP × 4 dtypes: int8 and int4 are invalid for this unquantized checkpoint
FILTERS = ("--gpu", "L4-24GB,H100-SXM-80GB,A100-SXM-80GB", "--tp", "1,2")
TOTAL = 3 * 2 * 4


def manifest_spec() -> InferenceServiceSpec:
    return parse_manifests(L4.read_text())[0].spec


def _run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["plan", str(L4), *args], env={"COLUMNS": "200"})
    return result.exit_code, result.output


def _sweep(fmt: str, *more: str) -> str:
    code, out = _run("--sweep", *FILTERS, "-o", fmt, *more)
    assert code == 0, out
    return out


def _csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_csv_is_csv_and_top_keeps_the_best() -> None:
    everything = _csv_rows(_sweep("csv"))
    assert len(everything) == TOTAL  # a program gets every configuration without --top
    top = _csv_rows(_sweep("csv", "--top", "3"))
    assert [r["rank"] for r in top] == ["1", "2", "3"]
    assert top == everything[:3]
    assert {"gpu", "weight_dtype", "replicas", "gpus", "why_not", "error"} <= set(top[0])
    invalid = [r for r in everything if r["error"]]
    assert invalid
    assert all(r["weight_dtype"] in ("int8", "int4") for r in invalid)


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_json_and_yaml_cut_rows_to_top(fmt: str) -> None:
    load = json.loads if fmt == "json" else yaml.safe_load
    full = load(_sweep(fmt))
    assert len(full["rows"]) == full["configurations"] == TOTAL
    cut = load(_sweep(fmt, "--top", "3"))
    assert cut["configurations"] == TOTAL
    assert cut["rows"] == full["rows"][:3]


def test_short_is_one_line_per_configuration_shown() -> None:
    lines = _sweep("short", "--top", "3").splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("llama-8b-chat  L4-24GB★ ")  # the spec's own GPU first
    assert all(("  ok  " in line) or ("  INFEASIBLE  " in line) for line in lines)


def test_markdown_is_a_table_of_top_rows() -> None:
    out = _sweep("markdown", "--top", "4")
    assert out.startswith("# Capacity sweep")
    table = [line for line in out.splitlines() if line.startswith("| ")]
    assert len(table) == 1 + 4  # the header and four configurations
    assert "4 of 24 configurations" in out
    assert "- invalid: int8" in out


@pytest.mark.parametrize("fmt", ["table", "wide"])
def test_table_and_wide_show_top_rows(fmt: str) -> None:
    out = _sweep(fmt, "--top", "2")
    assert f"2 of {TOTAL} configurations shown" in out
    rows = [line for line in out.splitlines() if line.startswith("│ ") and "-" in line[:20]]
    assert len(rows) == 2


def test_the_table_names_the_first_reason_and_wide_every_one() -> None:
    rows = sweep(manifest_spec(), gpus=["L4-24GB"], tp_sizes=[1], dtypes=["bf16"])
    plan = rows[0].plan
    assert plan is not None
    stuck = plan.model_copy(
        update={"feasible": False, "infeasible_reasons": ["too slow: raise TP", "too big"]}
    )
    assert why(stuck, every_reason=False) == "too slow: raise TP (+1 more: -o wide)"
    assert why(stuck, every_reason=True) == "too slow: raise TP; too big"
    assert why(plan, every_reason=False) == plan.binding_constraint


@pytest.mark.parametrize(
    "flags",
    [("--top", "3"), ("--gpu", "L4-24GB"), ("--dtype", "fp8"), ("--tp", "2"), ("--price", "L4=1")],
)
def test_a_sweep_flag_without_sweep_exits_2_naming_it(flags: tuple[str, str]) -> None:
    code, out = _run(*flags)
    assert code == 2, out
    assert f"{flags[0]} only apply with --sweep" in out


def test_the_refusal_is_a_document_under_json() -> None:
    code, out = _run("--top", "3", "-o", "json")
    assert code == 2
    assert "--top only apply with --sweep" in json.loads(out)["message"]
