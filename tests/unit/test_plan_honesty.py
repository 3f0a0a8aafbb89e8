"""Issue 33: flags that mislead and numbers that are not what they look like, each reproduced
through the CLI a user runs (`tokenscale plan`, `check`) or the planner it calls."""

import csv
import io
import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from typer.testing import CliRunner

from tests.helpers import HF_CONFIGS, ROOT, manifest, spec
from tokenscale.api import InferenceService
from tokenscale.api.errors import SpecError
from tokenscale.cli.app import app
from tokenscale.cli.model_source import hub_config
from tokenscale.cli.plan_figures import duration_text
from tokenscale.cli.sweep_formats import sweep_table
from tokenscale.planning import plan_service, sweep
from tokenscale.planning.formulas import batch_text
from tokenscale.scaling.schedule_day import schedule_day

runner = CliRunner()


def _write(tmp_path: Path, doc: dict[str, Any] | str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return path


def _plan_json(path: Path, *extra: str, code: int = 0) -> dict[str, Any]:
    result = runner.invoke(app, ["plan", str(path), "-o", "json", *extra])
    assert result.exit_code == code, result.output
    data: dict[str, Any] = json.loads(result.output)
    return data


# --- YAML reads unquoted on/off as booleans -------------------------------------------------


@pytest.mark.parametrize(("word", "mode"), [("on", "on"), ("off", "off"), ("On", "on")])
def test_unquoted_on_off_disaggregation_is_accepted(tmp_path: Path, word: str, mode: str) -> None:
    text = yaml.safe_dump(manifest(serving={})).replace(
        "serving: {}", f"serving:\n    disaggregation: {word}"
    )
    assert f"disaggregation: {word}" in text
    assert yaml.safe_load(text)["spec"]["serving"]["disaggregation"] in (True, False)
    data = _plan_json(_write(tmp_path, text))
    pd = data["disaggregation"]
    assert (pd["mode"] if pd is not None else "off") == mode


# --- an SLO written in milliseconds ---------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "hint"),
    [
        ("tpotP99Seconds", 80, "write 0.08"),
        ("tpotP95Seconds", 50, "write 0.05"),
        ("ttftP99Seconds", 800, "write 0.8"),
        ("ttftP95Seconds", 500, "write 0.5"),
    ],
)
@pytest.mark.parametrize("fmt", ["table", "short", "csv", "json"])
def test_an_slo_in_milliseconds_is_refused_naming_the_field(
    tmp_path: Path, field: str, value: float, hint: str, fmt: str
) -> None:
    slo = {"ttftP99Seconds": 2.0, "tpotP99Seconds": 0.1, field: value}
    path = _write(tmp_path, manifest(slo=slo))
    result = runner.invoke(app, ["plan", str(path), "-o", fmt])
    assert result.exit_code == 2, result.output
    assert f"spec.slo.{field}" in result.output
    assert "did you mean milliseconds?" in result.output
    assert hint in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(("field", "value"), [("tpotP99Seconds", 2.0), ("ttftP99Seconds", 60)])
def test_the_largest_meant_slo_still_plans(tmp_path: Path, field: str, value: float) -> None:
    slo = {"ttftP99Seconds": 2.0, "tpotP99Seconds": 0.1, field: value}
    assert _plan_json(_write(tmp_path, manifest(slo=slo)))["feasible"] is True


# --- capacity, throughput and cost from the batch the KV pool holds -------------------------

#: Llama-3.1-70B in BF16 at TP 2 on H100: 65.7 GiB of weights per GPU leave a pool of about
#: 12,600 tokens, ten mean requests, where the knee alone would allow about 77.
KV_BOUND = {
    "model": {"name": "meta-llama/Llama-3.1-70B-Instruct", "catalog": "llama-3.1-70b"},
    "hardware": {"gpu": "H100-SXM-80GB", "tensorParallelSize": 2},
    "workload": {
        "rps": {"mean": 10},
        "inputTokens": {"mean": 1000, "p99": 1000},
        "outputTokens": {"mean": 300, "p99": 300},
        "maxContextTokens": 8192,
    },
    "slo": {"ttftP99Seconds": 2.5, "tpotP99Seconds": 0.1},  # on vLLM's bucket bounds
}


def test_the_operating_batch_is_what_the_kv_pool_holds(tmp_path: Path) -> None:
    data = _plan_json(_write(tmp_path, manifest(**KV_BOUND)))
    limits = data["concurrency_limits"]
    held = limits["kv_mean_context"]
    assert held < limits["knee"]
    assert data["operating_batch"] <= held
    assert data["assumptions"]["operating_point_limited_by"] == "KV pool"
    assert data["binding_constraint"] == "kv"
    # throughput and cost follow the batch: the rate per replica at that batch carries the
    # design load on the replicas the KV constraint asked for
    out_tps = data["output_tps_per_replica"]
    assert out_tps * data["replicas"]["kv"] == pytest.approx(data["output_tps"], rel=1e-6)
    gpu_h = data["gpu_hours_per_million_output_tokens"]
    assert gpu_h == pytest.approx(2 * 1e6 / out_tps / 3600, rel=1e-6)


def test_the_kv_limit_is_named_in_the_wide_view(tmp_path: Path) -> None:
    result = runner.invoke(app, ["plan", str(_write(tmp_path, manifest(**KV_BOUND))), "-o", "wide"])
    assert result.exit_code == 0, result.output
    assert "limited by KV pool" in result.output


# --- a configuration that cannot serve shows why, not figures -------------------------------

#: Llama-3.1-70B in BF16 on one H100: 131 GiB of weights on an 80 GB GPU.
DOES_NOT_FIT = {**KV_BOUND, "hardware": {"gpu": "H100-SXM-80GB", "tensorParallelSize": 1}}
#: What a figure of a replica looks like in each view (a latency, a rate, a cost).
FIGURES = ("TTFT", "TPOT", "tok/s", "req/s", "GPU-h", "per 1M", "batch 1", "batch 2", "batch 4")


@pytest.mark.parametrize("fmt", ["table", "wide", "short", "markdown"])
def test_a_configuration_that_cannot_serve_prints_why_not_figures(tmp_path: Path, fmt: str) -> None:
    path = _write(tmp_path, manifest(**DOES_NOT_FIT))
    result = runner.invoke(app, ["plan", str(path), "-o", fmt], env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output  # infeasible
    assert "does not fit at TP=1" in " ".join(result.output.split())
    body = [
        line
        for line in result.output.splitlines()
        if "→" not in line
        and "advice" not in line
        and "design load" not in line
        and not line.startswith("| service")
    ]  # advice: other plans; the design load: the spec's; the Markdown header: its columns
    assert [f for f in FIGURES if any(f in line for line in body)] == [], result.output


def test_a_configuration_that_cannot_serve_has_an_empty_csv_row_and_a_reason(
    tmp_path: Path,
) -> None:
    path = _write(tmp_path, manifest(**DOES_NOT_FIT))
    result = runner.invoke(app, ["plan", str(path), "-o", "csv"])
    assert result.exit_code == 1, result.output
    (row,) = list(csv.DictReader(io.StringIO(result.output)))
    for key in ("ttft_p99_ms", "tpot_p99_ms", "e2e_p99_s", "output_tok_s_per_replica"):
        assert row[key] == "", key
    assert row["cost_per_1m_output"] == ""
    assert "does not fit at TP=1" in row["why_not"]


def test_a_sweep_row_that_cannot_serve_shows_why_not_figures() -> None:
    rows = sweep(spec(**DOES_NOT_FIT), gpus=["H100-SXM-80GB"], tp_sizes=[1], dtypes=["bf16"])
    (row,) = rows
    assert row.plan is not None
    assert row.plan.replicas is None
    console = Console(width=400, record=True)
    console.print(sweep_table(rows, 5, None, 400))
    (line,) = [x for x in console.export_text().splitlines() if "H100-SXM-80GB" in x]
    cells = [c.strip() for c in line.split("│") if c.strip()]
    assert "does not fit at TP=1" in cells[-1]
    numbers = [c for c in cells[3:-1] if any(ch.isdigit() for ch in c)]
    assert numbers == [], line


# --- figures as people read them -------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0766, "76.6 ms"),
        (0.634, "634 ms"),
        (1.254, "1.25 s"),
        (63.84, "63.8 s"),
        (649.4, "649 s"),
        (12_345.6, "12,346 s"),
    ],
)
def test_durations_keep_three_significant_figures(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text


@pytest.mark.parametrize(
    ("batch", "text"),
    [(0.42, "0.42"), (0.05, "0.05"), (9.7, "9.7"), (8.0, "8"), (77.0, "77"), (1024.0, "1,024")],
)
def test_a_fractional_batch_is_never_zero(batch: float, text: str) -> None:
    assert batch_text(batch) == text


# --- advice applies minReplicas / maxReplicas ----------------------------------------------

#: Qwen2.5-14B on one H100: 1.2 replicas' worth of load, so BF16 needs 2 and FP8 or the SLO
#: batch 1 — but minReplicas: 2 keeps two whichever is followed.
SMALL_WITH_FLOOR = {
    "model": {"name": "Qwen/Qwen2.5-14B-Instruct", "catalog": "qwen2.5-14b"},
    "hardware": {"gpu": "H100-SXM-80GB", "tensorParallelSize": 1},
    "workload": {
        "rps": {"mean": 12},
        "inputTokens": {"mean": 1000, "p99": 4000},
        "outputTokens": {"mean": 200, "p99": 800},
        "maxContextTokens": 16384,
    },
    "slo": {"ttftP99Seconds": 2.5, "tpotP99Seconds": 0.1},
}


def _advice(tmp_path: Path, doc: dict[str, Any]) -> list[str]:
    result = runner.invoke(app, ["plan", str(_write(tmp_path, doc)), "-o", "markdown"])
    assert result.exit_code == 0, result.output
    return [line for line in result.output.splitlines() if line.startswith("- advice:")]


def test_advice_saves_gpus_only_within_the_bounds(tmp_path: Path) -> None:
    free = _advice(tmp_path, manifest(**SMALL_WITH_FLOOR))
    assert any("FP8 weights" in a and "1 GPU (1 × TP 1) instead of 2" in a for a in free), free
    assert any("sized at the knee" in a for a in free), free
    floored = manifest(**SMALL_WITH_FLOOR, scaling={"minReplicas": 2})
    lines = _advice(tmp_path, floored)
    assert not [a for a in lines if "FP8 weights" in a or "sized at the knee" in a], lines
    # following the advice would indeed plan 2 GPUs
    fp8 = manifest(
        **{**SMALL_WITH_FLOOR, "model": {**SMALL_WITH_FLOOR["model"], "weightDtype": "fp8"}},
        scaling={"minReplicas": 2},
    )
    assert _plan_json(_write(tmp_path, fp8, "fp8.yaml"))["gpus_total"] == 2


def test_advice_counts_the_gpus_the_fleet_runs(tmp_path: Path) -> None:
    """With maxReplicas above and minReplicas below the need, the advice compares what each
    plan runs: an FP8 fleet raised to minReplicas: 3 saves nothing over BF16's 3."""
    doc = manifest(**SMALL_WITH_FLOOR, scaling={"minReplicas": 1, "maxReplicas": 8})
    assert any("FP8 weights" in a for a in _advice(tmp_path, doc))
    doc = manifest(**SMALL_WITH_FLOOR, scaling={"minReplicas": 3, "maxReplicas": 8})
    assert not [a for a in _advice(tmp_path, doc) if "FP8 weights" in a]


# --- smaller: plurals, the default maxReplicas ----------------------------------------------


def test_one_gpu_and_one_replica_are_singular(tmp_path: Path) -> None:
    doc = manifest(workload={"rps": {"mean": 0.5}}, scaling={"minReplicas": 1})
    path = _write(tmp_path, doc)
    table = runner.invoke(app, ["plan", str(path)], env={"COLUMNS": "200"}).output
    short = runner.invoke(app, ["plan", str(path), "-o", "short"]).output
    wide = runner.invoke(app, ["plan", str(path), "-o", "wide"], env={"COLUMNS": "200"}).output
    assert "1 × 1 GPU = 1 GPU " in table, table
    assert "(1 GPU)" in short, short
    assert "1 replica, 1 GPU" in " ".join(wide.split()), wide
    for text in (table, short, wide):
        assert "1 GPUs" not in text
        assert " 1 replicas" not in text


def test_a_shortfall_of_the_default_max_replicas_says_it_is_the_default(tmp_path: Path) -> None:
    load = {"rps": {"mean": 3000}}
    unset = _plan_json(_write(tmp_path, manifest(workload=load)), code=1)
    (reason,) = unset["infeasible_reasons"]
    assert "spec.scaling.maxReplicas (not set: the default 64) is below" in reason
    assert "set maxReplicas to at least" in reason
    pinned_doc = manifest(workload=load, scaling={"maxReplicas": 64})
    pinned = _plan_json(_write(tmp_path, pinned_doc), code=1)
    (reason,) = pinned["infeasible_reasons"]
    assert "spec.scaling.maxReplicas=64 is below" in reason


# --- speculative decoding: its verdict in every view; whole numbers in JSON -------------------

#: Llama-3.1-70B at TP 4 with Llama-3.2-1B as the draft: long answers, modest traffic.
SPECULATIVE = {
    "model": {"name": "meta-llama/Llama-3.1-70B-Instruct", "catalog": "llama-3.1-70b"},
    "hardware": {"gpu": "H100-SXM-80GB", "tensorParallelSize": 4},
    "workload": {
        "rps": {"mean": 2},
        "inputTokens": {"mean": 500, "p99": 2000},
        "outputTokens": {"mean": 800, "p99": 2000},
        "maxContextTokens": 8192,
    },
    "slo": {"ttftP99Seconds": 2.5, "tpotP99Seconds": 0.1},
    "serving": {
        "speculative": {
            "method": "draft_model",
            "acceptanceRate": 0.7,
            "draftModel": {"name": "meta-llama/Llama-3.2-1B-Instruct", "catalog": "llama-3.2-1b"},
        }
    },
}


def test_speculative_byte_counts_are_whole_numbers_in_json(tmp_path: Path) -> None:
    est = _plan_json(_write(tmp_path, manifest(**SPECULATIVE)))["speculative"]
    assert isinstance(est["draft_weight_bytes_per_gpu"], int)
    assert isinstance(est["draft_kv_bytes_per_token_per_gpu"], int)
    assert est["draft_weight_bytes_per_gpu"] > 0


def test_catalog_parameter_counts_are_whole_numbers_in_json() -> None:
    result = runner.invoke(app, ["catalog", "-o", "json"])
    assert result.exit_code == 0, result.output
    for m in json.loads(result.output)["models"]:
        for key in ("params", "activeParams", "publishedParams", "publishedActiveParams"):
            assert m[key] is None or isinstance(m[key], int), (m["key"], key, m[key])


@pytest.mark.parametrize("fmt", ["table", "wide", "markdown", "short"])
def test_the_speculative_verdict_is_in_every_view(tmp_path: Path, fmt: str) -> None:
    path = _write(tmp_path, manifest(**SPECULATIVE))
    est = _plan_json(path)["speculative"]
    reason = est["reason"]  # "on (draft_model, named in the spec): TPOT 19.0 → 9.4 ms …"
    verdict = "on" if est["enabled"] else "off"
    result = runner.invoke(app, ["plan", str(path), "-o", fmt], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.replace("│", " ").split())
    if fmt == "short":
        assert f"speculative {verdict}" in text, result.output
    else:  # the verdict and the numbers behind it
        assert reason.split(":", 1)[0] in text, result.output
        assert "TPOT" in text
        assert "→" in reason
        tpot = reason.split("TPOT ", 1)[1].split(" ms", 1)[0]
        assert tpot in text, (tpot, result.output)


# --- smaller: a GPU's family name gets a suggestion -----------------------------------------


@pytest.mark.parametrize(
    ("gpu", "named"),
    [
        ("L4", ["L4-24GB"]),
        ("H100", ["H100-SXM-80GB", "H100-PCIE-80GB", "H100-NVL-94GB"]),
        ("a100", ["A100-SXM-40GB", "A100-SXM-80GB", "A100-PCIE-80GB"]),
        ("L40S", ["L40S-48GB"]),
        ("MI300X", ["MI300X-192GB"]),
    ],
)
def test_a_gpu_family_name_suggests_its_catalog_keys(
    tmp_path: Path, gpu: str, named: list[str]
) -> None:
    path = _write(tmp_path, manifest(hardware={"gpu": gpu, "tensorParallelSize": 1}))
    result = runner.invoke(app, ["plan", str(path)])
    assert result.exit_code == 2, result.output
    hint = result.output.split("did you mean", 1)[1].split("?)", 1)[0]
    assert sorted(n.strip(" ',") for n in hint.replace(" or ", ",").split(",")) == sorted(named)


# --- smaller: the model's source names the file it came from --------------------------------


def test_model_source_names_the_hf_config_file(tmp_path: Path) -> None:
    config = (HF_CONFIGS / "Llama-3.1-8B-Instruct.json").read_text()
    (tmp_path / "config.json").write_text(config)
    model = {"name": "meta-llama/Llama-3.1-8B-Instruct", "catalog": None}
    path = _write(tmp_path, manifest(model={**model, "hfConfigFile": "config.json"}))
    assert _plan_json(path)["model_source"] == "spec.model.hfConfigFile (config.json)"
    inline = _write(tmp_path, manifest(model={**model, "hfConfig": json.loads(config)}), "i.yaml")
    assert _plan_json(inline)["model_source"] == "spec.model.hfConfig"


# --- smaller: a broken YAML file's error is one line citing the file and line ---------------


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("a: 1\n  b: 2\n", "line 2, column 4"),
        ("spec:\n  model: {name: a\n  hardware: [\n", "line 3, column 11"),
    ],
)
@pytest.mark.parametrize("command", ["plan", "check"])
def test_a_broken_yaml_file_is_one_line_naming_file_and_line(
    tmp_path: Path, text: str, where: str, command: str
) -> None:
    path = _write(tmp_path, text, "broken.yaml")
    result = runner.invoke(app, [command, str(path)], env={"COLUMNS": "300"})
    assert result.exit_code == 2, result.output
    assert "<unicode string>" not in result.output
    (line,) = [x for x in result.output.splitlines() if "not YAML or JSON" in x]
    assert str(path) in line
    assert where in line
    assert len([x for x in result.output.splitlines() if x.strip()]) == 2  # header + the line


# --- smaller: an unknown model with no network fails fast -----------------------------------


def test_an_unreachable_hub_fails_fast_and_names_offline_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the Hub client retried an unreachable host five times with backoff (≈ 25 s)."""
    from huggingface_hub import constants  # noqa: PLC0415 - the Hub client's own settings

    for variable in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:1")  # nothing listens there
    began = time.monotonic()
    with pytest.raises(SpecError) as err:
        hub_config("someorg/not-a-model", tmp_path)
    assert time.monotonic() - began < 20  # the client's five retries alone take 23 s
    (issue,) = err.value.issues
    assert issue.path == "spec.model.name"
    assert "cannot be reached" in issue.message
    assert "HF_HUB_OFFLINE=1" in issue.message


# --- spec.scaling.schedule: the windows in the plan, their cut, a day's cost -----------------

L4_EXAMPLE = ROOT / "deploy" / "examples" / "llama-3.1-8b-l4.yaml"
#: The L4 example (a need of 27 replicas) with a night window capped at 3 and business hours
#: held at 30 or more.
WINDOWS = [
    {"name": "night", "cron": "0 22 * * *", "durationSeconds": 8 * 3600, "maxReplicas": 3},
    {
        "name": "business-hours",
        "cron": "0 8 * * 1-5",
        "durationSeconds": 10 * 3600,
        "minReplicas": 30,
    },
]


def _scheduled(tmp_path: Path, windows: list[dict[str, Any]]) -> Path:
    doc = yaml.safe_load(L4_EXAMPLE.read_text())
    doc["spec"]["scaling"]["schedule"] = windows
    return _write(tmp_path, doc, "scheduled.yaml")


def test_the_schedule_is_costed_minute_by_minute(tmp_path: Path) -> None:
    data = _plan_json(_scheduled(tmp_path, WINDOWS))
    day = data["schedule"]
    need = data["replicas"]["with_redundancy"]
    assert day["need"] == need == 27
    night, business = day["windows"]
    assert (night["replicas"], night["cuts_need"], night["hours_per_week"]) == (3, True, 56.0)
    assert (business["replicas"], business["cuts_need"]) == (30, False)
    assert business["hours_per_week"] == 50.0  # five 10-hour weekdays, none inside the night
    rest = 7 * 24 - 56 - 50
    per_day = (56 * 3 + 50 * 30 + rest * need) / 7  # one GPU per replica
    assert day["gpu_hours_per_day"] == pytest.approx(per_day)
    assert day["gpu_hours_per_day_without"] == pytest.approx(24 * need)
    price = data["cost_per_hour"] / data["gpus_total"]
    assert day["cost_per_day"] == pytest.approx(per_day * price)
    (warning,) = day["warnings"]
    assert "spec.scaling.schedule[0] (night" in warning
    assert "maxReplicas 3 is below the 27 replicas" in warning


def test_a_window_open_all_week_costs_its_own_bounds(tmp_path: Path) -> None:
    always = [{"cron": "* * * * *", "durationSeconds": 60, "minReplicas": 30}]
    day = _plan_json(_scheduled(tmp_path, always))["schedule"]
    assert day["windows"][0]["hours_per_week"] == pytest.approx(168.0)
    assert day["gpu_hours_per_day"] == pytest.approx(30 * 24)


def test_no_schedule_is_null_in_json(tmp_path: Path) -> None:
    assert _plan_json(_write(tmp_path, manifest()))["schedule"] is None


@pytest.mark.parametrize("fmt", ["table", "wide", "markdown"])
def test_the_schedule_windows_and_their_cut_are_in_the_plan(tmp_path: Path, fmt: str) -> None:
    path = _scheduled(tmp_path, WINDOWS)
    result = runner.invoke(app, ["plan", str(path), "-o", fmt], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.replace("│", " ").split())
    assert "night ('0 22 * * *', 8 h)" in text or "night '0 22 * * *', 8 h" in text, text
    assert "3 replicas (bounds 2–3; cuts the need of 27)" in text
    assert "30 replicas (bounds 30–40; raised from the need of 27)" in text
    assert "a day with the windows: 477 GPU-h (648 without)" in text
    assert "maxReplicas 3 is below the 27 replicas the plan needs" in text


def test_check_fails_a_window_that_cuts_the_need(tmp_path: Path) -> None:
    result = runner.invoke(app, ["check", str(_scheduled(tmp_path, WINDOWS)), "-o", "json"])
    data = json.loads(result.output)
    (item,) = [i for i in data["items"] if i["item"] == "schedule"]
    assert item["ok"] is False
    assert "maxReplicas 3 is below the 27 replicas" in item["why"]
    result = runner.invoke(app, ["check", str(_scheduled(tmp_path, WINDOWS[1:])), "-o", "json"])
    (item,) = [i for i in json.loads(result.output)["items"] if i["item"] == "schedule"]
    assert item["ok"] is True
    assert "a day with the windows" in item["why"]


def test_a_kv_bound_row_no_longer_ranks_first_in_the_sweep() -> None:
    """70B BF16 at TP 2 holds ten requests: at the knee's batch it looked cheaper per token
    than TP 4 and ranked first; at the batch its pool holds it costs more."""
    rows = sweep(spec(**KV_BOUND), gpus=["H100-SXM-80GB"], tp_sizes=[2, 4], dtypes=["bf16"])
    order = [r.tensor_parallel_size for r in rows if r.plan is not None and r.plan.feasible]
    assert order == [4, 2]
    by_tp = {r.tensor_parallel_size: r.plan for r in rows if r.plan is not None}
    assert by_tp[2].assumptions["operating_point_limited_by"] == "KV pool"


_L4_SERVICE = InferenceService.model_validate(yaml.safe_load(L4_EXAMPLE.read_text()))
_L4_PLAN = plan_service(_L4_SERVICE.spec, "l4")


@st.composite
def _windows(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for _ in range(draw(st.integers(1, 3))):
        hour, minute = draw(st.integers(0, 23)), draw(st.integers(0, 59))
        days = draw(st.sampled_from(["*", "1-5", "0,6", "3"]))
        lo = draw(st.integers(1, 30))
        out.append(
            {
                "cron": f"{minute} {hour} * * {days}",
                "durationSeconds": draw(st.integers(60, 3 * 86_400)),
                "minReplicas": lo,
                "maxReplicas": lo + draw(st.integers(1, 30)),
            }
        )
    return out


@settings(max_examples=40, deadline=None)
@given(_windows())
def test_a_day_with_windows_is_bounded_by_the_replicas_they_keep(
    windows: list[dict[str, Any]],
) -> None:
    doc = yaml.safe_load(L4_EXAMPLE.read_text())
    doc["spec"]["scaling"]["schedule"] = windows
    service = InferenceService.model_validate(doc)
    day = schedule_day(service.spec, _L4_PLAN)
    assert day is not None
    kept = [day.replicas_outside, *(w.replicas for w in day.windows)]
    assert min(kept) * 24 - 1e-6 <= day.gpu_hours_per_day <= max(kept) * 24 + 1e-6
    assert sum(w.hours_per_week for w in day.windows) <= 168 + 1e-9
    for w in day.windows:
        assert w.replicas == min(max(day.need, w.min_replicas), w.max_replicas)
        assert w.cuts_need == (w.max_replicas < day.need)
    unused = [w for w in day.windows if w.hours_per_week == 0]
    if len(unused) == len(day.windows):
        assert day.gpu_hours_per_day == pytest.approx(day.gpu_hours_per_day_without)


# --- the new lines fit the terminal -----------------------------------------------------------


@pytest.mark.parametrize("columns", [80, 100, 120])
@pytest.mark.parametrize("fmt", ["table", "wide"])
@pytest.mark.parametrize("case", ["cannot-serve", "kv-bound", "speculative", "schedule"])
def test_the_new_lines_fit_the_width(tmp_path: Path, case: str, fmt: str, columns: int) -> None:
    docs = {
        "cannot-serve": manifest(**DOES_NOT_FIT),
        "kv-bound": manifest(**KV_BOUND),
        "speculative": manifest(**SPECULATIVE),
    }
    path = _scheduled(tmp_path, WINDOWS) if case == "schedule" else _write(tmp_path, docs[case])
    result = runner.invoke(app, ["plan", str(path), "-o", fmt], env={"COLUMNS": str(columns)})
    assert result.exit_code in (0, 1), result.output
    lines = result.output.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= columns, result.output
    assert not [line for line in lines if "…" in line], result.output
