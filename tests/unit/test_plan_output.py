"""`tokenscale plan -o table|wide|short|markdown|csv`, terminal widths, help and --version, as a
user runs them. Every figure checked here is compared with the JSON contract of the same run."""

import csv
import io
import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tests.helpers import EXAMPLES, deep_merge, manifest
from tokenscale import __version__
from tokenscale.cli.app import app
from tokenscale.cli.plan_formats import SUMMARY_COLUMNS

runner = CliRunner()
L4 = next(e for e in EXAMPLES if e.stem == "llama-3.1-8b-l4")


def _invoke(args: list[str], columns: int = 80) -> tuple[int, str]:
    result = runner.invoke(app, args, env={"COLUMNS": str(columns)})
    return result.exit_code, result.output


def _two_services(tmp_path: Path) -> Path:
    f = tmp_path / "two.yaml"
    second = deep_merge(manifest(), {"metadata": {"name": "second"}})
    f.write_text(yaml.safe_dump_all([manifest(), second]))
    return f


def _json(args: list[str]) -> list[dict[str, object]]:
    code, out = _invoke([*args, "-o", "json"])
    assert code == 0, out
    data = json.loads(out)
    return data if isinstance(data, list) else [data]


@pytest.mark.parametrize("columns", [80, 100, 120])
@pytest.mark.parametrize("fmt", ["table", "wide"])
def test_the_tables_fit_the_terminal(fmt: str, columns: int) -> None:
    code, out = _invoke(["plan", str(L4), "-o", fmt], columns)
    assert code == 0, out
    widest = max(len(line.rstrip()) for line in out.splitlines())
    assert widest <= columns, f"a {widest}-column line in a {columns}-column terminal"


def test_the_compact_default_says_what_a_review_needs() -> None:
    code, out = _invoke(["plan", str(L4)])
    assert code == 0
    out = " ".join(out.split())  # words, whatever the wrapping
    (plan,) = _json(["plan", str(L4)])
    replicas = plan["replicas"]
    assert isinstance(replicas, dict)
    assert f"{replicas['total']} × 1 GPU = {plan['gpus_total']} GPUs" in out
    assert f"binding: {plan['binding_constraint']}" in out
    for words in ("TTFT P99", "TPOT P99", "E2E P99", "per 1M output", "feasible"):
        assert words in out
    assert "Memory per GPU" not in out, "the memory breakdown is -o wide's"
    compact = len(_invoke(["plan", str(L4)])[1].splitlines())
    wide = len(_invoke(["plan", str(L4), "-o", "wide"])[1].splitlines())
    assert compact < wide / 2


def test_wide_is_the_full_explained_table_with_one_row_per_latency() -> None:
    code, out = _invoke(["plan", str(L4), "-o", "wide"], 160)
    assert code == 0
    for words in ("Memory per GPU", "KV pool", "Estimates vs SLO", "binding", "Cost", "per 1M"):
        assert words in out
    rows = [line for line in out.splitlines() if "│ TTFT" in line or "│ ttft" in line]
    assert len(rows) == 1, rows
    assert "TPOT mean" in out
    assert "TPOT P99" in out
    assert " GB" not in out, "bytes in binary units only"
    assert " MB" not in out, "bytes in binary units only"


def test_short_is_one_line_per_service(tmp_path: Path) -> None:
    f = _two_services(tmp_path)
    code, out = _invoke(["plan", str(f), "-o", "short"], 200)
    assert code == 0, out
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == ["test", "second"]
    plans = _json(["plan", str(f)])
    for line, plan in zip(lines, plans, strict=True):
        n = plan["gpus_total"]
        assert f"({n} GPU{'' if n == 1 else 's'})" in line
        assert str(plan["binding_constraint"]) in line


def test_csv_has_a_header_and_the_json_figures(tmp_path: Path) -> None:
    f = _two_services(tmp_path)
    code, out = _invoke(["plan", str(f), "-o", "csv"])
    assert code == 0, out
    rows = list(csv.DictReader(io.StringIO(out)))
    assert tuple(rows[0].keys()) == SUMMARY_COLUMNS
    for row, plan in zip(rows, _json(["plan", str(f)]), strict=True):
        replicas = plan["replicas"]
        assert isinstance(replicas, dict)
        assert row["service"] == plan["name"]
        assert int(row["replicas"]) == replicas["total"]
        assert int(row["gpus"]) == plan["gpus_total"]
        assert float(row["ttft_p99_ms"]) == pytest.approx(
            float(plan["ttft_p99_estimate_s"]) * 1e3,  # type: ignore[arg-type]
            abs=0.05,
        )
        assert row["cost_per_1m_output"] == f"{plan['cost_per_million_output_tokens']:.3f}"


def test_markdown_is_a_report_with_a_summary_row_per_service(tmp_path: Path) -> None:
    f = _two_services(tmp_path)
    code, out = _invoke(["plan", str(f), "-o", "markdown"])
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == "# Capacity plan"
    summary = [line for line in lines[2:6] if line.startswith("| test") or line.startswith("| sec")]
    assert len(summary) == 2
    assert "## test" in lines
    assert "## second" in lines
    assert all(line.count("|") == 12 for line in lines[2:6] if line.startswith("|"))


def test_json_gains_advice_and_keeps_every_key() -> None:
    (plan,) = _json(["plan", str(L4)])
    assert isinstance(plan["advice"], list)
    for key in ("weight_bytes", "replicas", "tpot_estimate_s", "slo_checks", "warnings"):
        assert key in plan


def test_json_writes_bytes_and_counts_as_whole_numbers() -> None:
    """Bytes, parameters and KV tokens are counts: no ``8030261248.0``, no fractional bytes."""
    (plan,) = _json(["plan", str(L4)])
    whole = (
        "params",
        "active_params",
        "weight_bytes",
        "kv_bytes_per_token",
        "kv_bytes_per_token_per_gpu",
        "kv_capacity_tokens_per_replica",
        "kv_bytes_per_request_mean",
        "kv_bytes_per_request_p99",
    )
    for key in whole:
        assert type(plan[key]) is int, key
    memory = plan["memory_per_gpu"]
    assert isinstance(memory, dict)
    assert all(type(v) is int for v in memory.values()), memory
    # fractions stay fractions: the TPOT mean and P99 sit side by side, in seconds
    assert isinstance(plan["tpot_estimate_s"], float)
    assert isinstance(plan["tpot_p99_estimate_s"], float)


def test_an_infeasible_plan_exits_1_in_every_format(tmp_path: Path) -> None:
    f = tmp_path / "slow.yaml"
    f.write_text(yaml.safe_dump(manifest(slo={"ttftP99Seconds": 0.001})))
    for fmt in ("table", "wide", "short", "markdown", "csv"):
        code, out = _invoke(["plan", str(f), "-o", fmt])
        assert code == 1, (fmt, out)
        assert "INFEASIBLE" in out or "no" in out


def test_version() -> None:
    code, out = _invoke(["--version"])
    assert code == 0
    assert out.strip() == f"tokenscale {__version__}"


@pytest.mark.parametrize("command", ["plan", "simulate", "bench", "playground", "catalog", "run"])
def test_help_fits_80_columns_and_shows_true_defaults(command: str) -> None:
    code, out = _invoke([command, "--help"])
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "…" not in out, "a help text was cut"
    if command == "playground":
        rate = out[out.index("--rate-scale") : out.index("--low-rps")]
        assert "[default: 0.0]" not in rate
        assert "0.2" in rate


def test_the_command_list_has_whole_one_line_summaries() -> None:
    code, out = _invoke(["--help"])
    assert code == 0
    commands = out[out.index("Commands:") :].splitlines()[1:]
    names = [line.split()[0] for line in commands if line.strip()]
    assert names == [
        "plan",
        "render",
        "crd",
        "run",
        "catalog",
        "simulate",
        "bench",
        "playground",
        "check",
    ]
    assert not [line for line in commands if line.rstrip().endswith("...")]


def test_one_notion_of_in_flight_in_the_constraints() -> None:
    (plan,) = _json(["plan", str(L4)])
    formulas = {c["name"]: c["formula"] for c in plan["constraints"]}  # type: ignore[union-attr]
    assert "in flight at batch" in formulas["concurrency"]
    assert "in flight at batch" in formulas["kv"]
    assert "holding KV" not in formulas["kv"]
