"""`plan --sweep` as a user runs it: how many rows are shown, the spec's GPU first, filters,
prices from the command line or a file, invalid rows summarised one line per reason."""

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tests.helpers import EXAMPLES, manifest
from tokenscale.catalog import GPU_CATALOG
from tokenscale.cli.app import app

runner = CliRunner()
L4 = next(e for e in EXAMPLES if e.stem == "llama-3.1-8b-l4")


def _run(*args: str, columns: int = 200) -> tuple[int, str]:
    result = runner.invoke(app, ["plan", *args], env={"COLUMNS": str(columns)})
    return result.exit_code, result.output


def _rows(*args: str) -> list[dict[str, object]]:
    code, out = _run(*args, "-o", "json")
    assert code == 0, out
    return json.loads(out)["rows"]  # type: ignore[no-any-return]


def test_the_title_says_how_many_are_shown() -> None:
    code, out = _run(str(L4), "--sweep", "--top", "5")
    assert code == 0, out
    total = len(GPU_CATALOG) * 4 * 4
    assert f"5 of {total} configurations shown" in out


def test_the_specs_gpu_comes_first_and_is_marked() -> None:
    code, out = _run(str(L4), "--sweep", "--top", "3")
    assert code == 0
    body = [line for line in out.splitlines() if line.startswith("│")]
    assert body[0].startswith("│ L4-24GB ★")
    assert len(body) == 3


def test_filters_restrict_gpus_dtypes_and_tps() -> None:
    rows = _rows(
        str(L4),
        "--sweep",
        "--gpu",
        "L4-24GB,h100-sxm-80gb",
        "--dtype",
        "bf16",
        "--tp",
        "1",
        "--tp",
        "2",
    )
    assert {(r["gpu"], r["weight_dtype"], r["tensor_parallel_size"]) for r in rows} == {
        (g, "bf16", tp) for g in ("L4-24GB", "H100-SXM-80GB") for tp in (1, 2)
    }


@pytest.mark.parametrize(
    ("flag", "value", "words"),
    [
        ("--gpu", "H100-SXM", "(did you mean 'H100-SXM-80GB'?)"),
        ("--dtype", "fp4", "use bf16"),
        ("--tp", "3", "use 1, 2, 4 or 8"),
        ("--price", "H100-SXM-80GB", "KEY=PRICE"),
        ("--price", "H100-SXM-80GB=-1", "not a price"),
    ],
)
def test_bad_filters_exit_2_naming_the_flag(flag: str, value: str, words: str) -> None:
    code, out = _run(str(L4), "--sweep", flag, value)
    assert code == 2
    assert flag in out
    assert words in out


def test_prices_from_the_command_line_rank_by_cost() -> None:
    rows = _rows(
        str(L4),
        "--sweep",
        "--gpu",
        "L4-24GB,L40S-48GB",
        "--dtype",
        "bf16",
        "--price",
        "L40S-48GB=1.5",
    )
    l40s = next(r for r in rows if r["gpu"] == "L40S-48GB" and r["plan"] and r["plan"]["feasible"])  # type: ignore[index]
    plan = l40s["plan"]
    assert isinstance(plan, dict)
    assert plan["cost_per_hour"] == pytest.approx(1.5 * plan["gpus_total"])


def test_prices_from_a_file(tmp_path: Path) -> None:
    f = tmp_path / "prices.yaml"
    f.write_text(yaml.safe_dump({"L40S-48GB": 1.5, "L4-24GB": 0.7}))
    rows = _rows(
        str(L4), "--sweep", "--gpu", "L4-24GB,L40S-48GB", "--dtype", "bf16", "--prices", str(f)
    )
    for r in rows:
        plan = r["plan"]
        if isinstance(plan, dict) and plan["cost_per_hour"] is not None:
            price = {"L40S-48GB": 1.5, "L4-24GB": 0.7}[str(r["gpu"])]
            assert plan["cost_per_hour"] == pytest.approx(price * plan["gpus_total"])
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"L40S": 1.5}))
    code, out = _run(str(L4), "--sweep", "--prices", str(bad))
    assert code == 2
    assert "L40S-48GB" in out


def test_invalid_rows_are_one_line_per_reason(tmp_path: Path) -> None:
    code, out = _run(str(L4), "--sweep", "--top", "3", columns=400)
    assert code == 0
    invalid = [line for line in out.splitlines() if line.startswith("invalid: ")]
    assert [line.split(" on ")[0] for line in invalid] == ["invalid: int8", "invalid: int4"]
    assert f"{len(GPU_CATALOG)} GPUs × TP 1, 2, 4, 8" in invalid[0]
    assert not [line for line in out.splitlines() if "│ invalid" in line]


def test_a_spec_without_its_gpu_in_the_sweep_marks_nothing(tmp_path: Path) -> None:
    f = tmp_path / "spec.yaml"
    f.write_text(yaml.safe_dump(manifest()))
    code, out = _run(str(f), "--sweep", "--gpu", "L4-24GB", "--top", "2")
    assert code in (0, 1)
    assert "★" not in out
