"""The physics gate: no scored measurement implies more than the GPU's datasheet peaks."""

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from benchmarks import accuracy, accuracy_refit
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import ROOT
from tokenscale.catalog.gpus import GPU_CATALOG
from tokenscale.planning import PerfModel, physics

DATA = yaml.safe_load((ROOT / "benchmarks" / "accuracy" / "measurements.yaml").read_text())
A100 = GPU_CATALOG["A100-SXM-80GB"].spec

#: tt-inference-server issue 340's Qwen3-1.7B TTFTs on an A100 at concurrency 1, as the
#: dataset first held them (before they were excluded).
TT_340 = [
    {
        "id": f"ttft-a100-qwen3-1.7b-{n}",
        "kind": "ttft_s",
        "model": "Qwen/Qwen3-1.7B",
        "gpu": "A100-SXM-80GB",
        "tp": 1,
        "weight_dtype": "bf16",
        "kv_dtype": "auto",
        "input_tokens": n,
        "output_tokens": 128,
        "concurrency": 1,
        "value": ms,
        "unit": "ms",
        "source": "tt-340",
    }
    for n, ms in ((128, 11.4), (1024, 26.4), (2048, 30.9))
]


def _data(entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {**{k: v for k, v in DATA.items() if k != "measurements"}, "measurements": entries}


def _perf(entry: dict[str, Any]) -> PerfModel:
    perf, _ = accuracy._perf(_data([entry]), entry)
    return perf


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "operator")}
    return subprocess.run(
        [sys.executable, "benchmarks/accuracy.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_tt_340_pair_is_rejected_on_its_own_and_the_short_prompt_is_not() -> None:
    checks = {c.id: c for c in accuracy.physics_check(_data(copy.deepcopy(TT_340)))}
    assert checks["ttft-a100-qwen3-1.7b-1024"].possible is False
    assert checks["ttft-a100-qwen3-1.7b-2048"].possible is False
    assert "1,024 → 2,048" in checks["ttft-a100-qwen3-1.7b-2048"].reason
    # each TTFT alone is possible: only the difference is not
    assert checks["ttft-a100-qwen3-1.7b-128"].possible is True


def test_tt_340_difference_takes_about_2_3_times_the_a100_bf16_peak() -> None:
    perf = _perf(TT_340[2])
    work = physics.marginal_prefill_work(perf, (1024, 0.0264), (2048, 0.0309))
    verdict = physics.judge(work, A100, "bf16", 1)
    assert 2.1 < verdict.flops_fraction < 2.5
    assert not verdict.possible


def test_a_longer_prompt_that_is_not_slower_is_rejected() -> None:
    perf = _perf(TT_340[2])
    # the thread's 4,096-token TTFT (217 ms) below its 2,048-token one (283 ms)
    work = physics.marginal_prefill_work(perf, (2048, 0.283), (4096, 0.217))
    assert not physics.judge(work, A100, "bf16", 1).possible


def test_a_plausible_batch_1_decode_passes_and_an_impossible_one_is_rejected() -> None:
    entry = next(e for e in DATA["measurements"] if e["id"] == "tpot-a100-40-llama31-8b-c1")
    perf = _perf(entry)
    gpu = GPU_CATALOG["A100-SXM-40GB"].spec
    ok = physics.judge(physics.decode_step_work(perf, 1, 1088, 1 / 75), gpu, "bf16", 1)
    assert ok.possible
    assert 0.6 < ok.bytes_fraction < 0.9
    # 15 GB of weights (the input embedding is a gather) in 5 ms: 3 TB/s on a 1.55 TB/s GPU
    fast = physics.judge(physics.decode_step_work(perf, 1, 1088, 0.005), gpu, "bf16", 1)
    assert not fast.possible
    assert fast.bytes_fraction > 1.8


def test_the_peak_is_the_datasheet_figure_of_the_weights_cores() -> None:
    h100 = GPU_CATALOG["H100-SXM-80GB"].spec
    assert physics.datasheet_flops(h100, "fp8") == h100.fp8_tflops * 1e12  # type: ignore[operator]
    # weight-only INT4 runs on BF16 cores, with no efficiency applied
    assert physics.datasheet_flops(A100, "int4") == A100.bf16_tflops * 1e12
    assert physics.datasheet_flops(A100, "fp8") == A100.bf16_tflops * 1e12  # no FP8 cores


@settings(max_examples=40, deadline=None)
@given(
    tokens=st.floats(min_value=64, max_value=32768),
    factor=st.floats(min_value=0.2, max_value=5.0),
)
def test_a_prefill_passes_exactly_when_its_time_is_within_the_margin_of_the_roofline(
    tokens: float, factor: float
) -> None:
    perf = _perf(TT_340[2])
    roofline = perf.prefill_flops(tokens) / physics.datasheet_flops(A100, "bf16")
    memory = perf.weight_read_bytes(1.0) / (A100.hbm_bandwidth_gbps * 1e9)
    seconds = max(roofline, memory) * factor
    verdict = physics.judge(physics.prefill_work(perf, tokens, seconds), A100, "bf16", 1)
    assert verdict.possible == (factor >= 1.0 / (1.0 + physics.PHYSICS_MARGIN) - 1e-9)


def test_kv_capacity_above_the_memory_is_rejected() -> None:
    entry = next(e for e in DATA["measurements"] if e["id"] == "kv-h100-llama31-8b")
    perf = _perf(entry)
    h100 = GPU_CATALOG["H100-SXM-80GB"].spec
    assert physics.kv_pool_verdict(perf, h100, 420_864).possible
    assert not physics.kv_pool_verdict(perf, h100, 800_000).possible


def test_the_four_files_pass_the_gate_and_every_entry_is_judged() -> None:
    result = _run("--check")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "REJECTED" not in result.stdout
    # the excluded tt-340 pair is still caught, and shown as such
    assert result.stdout.count("rejected (excluded)") >= 2
    for name, path in accuracy.FILES.items():
        assert f"== {path.name}" in result.stdout, name
        data = yaml.safe_load(path.read_text())
        checks = accuracy.physics_check(data)
        assert len(checks) == len(data["measurements"])
        judged = [c for c in checks if c.possible is not None]
        # every file has entries the gate counts the work of, not only ratios
        assert judged, name


def _entry(name: str, entry_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    data = yaml.safe_load(accuracy.FILES[name].read_text())
    entry = next(e for e in data["measurements"] if e["id"] == entry_id)
    return data, copy.deepcopy(entry)


@pytest.mark.parametrize(
    ("name", "entry_id", "field", "factor", "what"),
    [
        # 4.5 GiB of KV over 8 × 25 GB/s NICs in a tenth of the measured 31.65 ms
        ("disaggregation", "transfer-h800-qwen3-8b-32768", "value", 0.1, "inter-node NICs"),
        # a prefill of 32,768 tokens of Qwen3-8B on 8 × H800 in 75 ms: above the BF16 peak
        ("disaggregation", "ttft-h800-qwen3-8b-32768", "value", 0.1, "prefill of 32,768"),
        # Llama-2-70B's decode step on 8 × H100 in 3 ms: 140 GB of weights read at 5.8 TB/s
        ("disaggregation", "step-h100-llama2-70b-tp8-batch1", "value", 0.1, "decode step"),
        # Llama-3.1-8B at batch 1 in 2.1 ms per token: 15 GB of weights at 7 TB/s on an H100
        ("speculative", "e1-k2", "tpot_ms_without", 0.3, "decode step"),
        # Llama-3.1-405B FP8 on 8 × H100 at 10 × the quoted output rate
        ("multinode", "tput-h100x8-llama405b-fp8-tp8", "value", 20.0, "output tok/s"),
    ],
)
def test_the_gate_rejects_an_impossible_entry_in_each_file(
    name: str, entry_id: str, field: str, factor: float, what: str
) -> None:
    data, entry = _entry(name, entry_id)
    assert accuracy.physics_check(data | {"measurements": [entry]})[0].possible is True
    entry[field] = float(entry[field]) * factor
    if name == "speculative":
        entry.pop("tpot_ms_with", None)
    entry["validity"] = "measured"
    (check,) = accuracy.physics_check(data | {"measurements": [entry]})
    assert check.possible is False, check.reason
    assert what in check.reason


def test_check_exits_1_naming_each_rejected_entry(tmp_path: Path) -> None:
    data = copy.deepcopy(DATA)
    for e in data["measurements"]:
        if e["source"] == "tt-340":
            e.pop("validity", None)
            e.pop("validity_reason", None)
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    result = _run("--check", str(path))
    assert result.returncode == 1
    rejected = [ln.split()[0] for ln in result.stdout.splitlines() if " REJECTED " in ln]
    assert rejected == ["ttft-a100-qwen3-1.7b-1024", "ttft-a100-qwen3-1.7b-2048"]
    assert "2 rejected entries" in result.stdout


@pytest.mark.parametrize(
    "text", ["measurements: [", "measurements:\n  - {id: x, kind: ttft_s}\n", "just text\n"]
)
def test_check_exits_2_on_a_file_that_is_not_a_measurements_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    result = _run("--check", str(path))
    assert result.returncode == 2, result.stdout + result.stderr
    assert str(path) in result.stderr
    assert "Traceback" not in result.stderr
    missing = _run("--check", str(tmp_path / "absent.yaml"))
    assert missing.returncode == 2
    assert "cannot read it" in missing.stderr


@pytest.mark.parametrize("name", list(accuracy.FILES))
def test_every_entry_of_every_file_states_its_validity_and_why(name: str) -> None:
    data = yaml.safe_load(accuracy.FILES[name].read_text())
    for e in data["measurements"]:
        assert e.get("validity") in accuracy.VALIDITY, (name, e["id"])
        assert str(e.get("validity_reason", "")).strip(), (name, e["id"])
        assert "scored" not in e, (name, e["id"])  # validity says it, once


def test_excluded_entries_are_not_scored_and_bounds_are_scored_as_bounds() -> None:
    bound = next(
        e for e in DATA["measurements"] if e["id"] == "tput-a100pcie-qwen25-7b-tp1-2048x512-c32"
    )
    low, high = copy.deepcopy(bound), copy.deepcopy(bound)
    low["id"], high["id"] = "a-low", "b-high"
    high["value"] = float(bound["value"]) * 10  # no estimate is that fast
    excluded = copy.deepcopy(bound) | {"id": "c-excluded", "validity": "excluded"}
    rows = {r.id: r for r in accuracy.evaluate(_data([low, high, excluded]))}
    assert rows["a-low"].bound_held is True
    assert rows["b-high"].bound_held is False
    assert rows["c-excluded"].bound_held is None
    summary = accuracy.summarize(list(rows.values()))["all"]["throughput"]
    assert (summary["n"], summary["bounds"], summary["bounds_held"]) == (0, 2, 1)
    assert summary["excluded"] == 1
    assert summary["met"] is False


def test_the_held_out_set_is_whole_sources_in_every_file() -> None:
    files = accuracy.load_files()
    for name, data in files.items():
        splits = accuracy.split_of(data)
        for src, meta in data["sources"].items():
            assert meta.get("split") in ("fit", "held-out"), (name, src)
            mine = {splits[str(e["id"])] for e in data["measurements"] if e["source"] == src}
            assert len(mine) <= 1, (name, src, mine)  # a source is never cut in two
        assert not any("split" in e or "held_out" in e for e in data["measurements"]), name
    rows = accuracy.evaluate_all(files)
    held = {r.source for r in rows if r.split == "held-out" and r.validity != "excluded"}
    fit = {r.source for r in rows if r.split == "fit" and r.validity != "excluded"}
    assert len(held) >= 3
    assert not held & fit


def test_an_entry_added_to_a_held_out_source_is_held_out() -> None:
    entries = copy.deepcopy(DATA["measurements"])
    before = accuracy.split_of(_data(entries))
    held_src = next(s for s, m in DATA["sources"].items() if m["split"] == "held-out")
    fit_src = next(s for s, m in DATA["sources"].items() if m["split"] == "fit")
    added = [
        copy.deepcopy(entries[0]) | {"id": "aaa-held", "source": held_src},
        copy.deepcopy(entries[0]) | {"id": "aaa-fit", "source": fit_src},
    ]
    after = accuracy.split_of(_data([*added, *entries]))
    assert after.pop("aaa-held") == "held-out"
    assert after.pop("aaa-fit") == "fit"
    assert after == before


def test_the_refit_reads_only_the_fit_set_and_lands_on_the_grid() -> None:
    fit = accuracy_refit.timing_subset(DATA, "fit")
    held = accuracy_refit.timing_subset(DATA, "held-out")
    splits = accuracy.split_of(DATA)
    fit_ids = {e["id"] for e in fit["measurements"]}
    assert fit_ids
    assert all(splits[i] == "fit" for i in fit_ids)
    assert not fit_ids & {e["id"] for e in held["measurements"]}
    assert all(e.get("validity") != "excluded" for e in fit["measurements"])
    # two decode entries: the search must not end worse than it started, on grid values
    small = fit | {"measurements": fit["measurements"][:2]}
    optimum, before, after = accuracy_refit.refit(small, ("stepOverheadSeconds",))
    assert after <= before
    assert optimum["stepOverheadSeconds"] in accuracy_refit.GRID["stepOverheadSeconds"] + [
        accuracy_refit.defaults()["stepOverheadSeconds"]
    ]
    others = {k: v for k, v in optimum.items() if k != "stepOverheadSeconds"}
    assert others == {k: v for k, v in accuracy_refit.defaults().items() if k in others}
