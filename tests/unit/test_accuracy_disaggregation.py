"""The published P/D measurements: every number traceable to its quote, a third held out, and
the scoring script runs."""

import json
import os
import subprocess
import sys

import yaml

from tests.helpers import ROOT

DATA = ROOT / "benchmarks" / "accuracy" / "disaggregation.yaml"


def test_every_entry_names_its_source_and_quotes_its_number() -> None:
    data = yaml.safe_load(DATA.read_text())
    for m in data["measurements"]:
        assert m["source"] in data["sources"], m["id"]
        assert m["split"] in ("fit", "held-out"), m["id"]
        if m["kind"] in ("kv_transfer_s", "pd_ttft_s", "pd_ttft_at_rate_s"):
            ms = m["value"] * 1000
            assert f"| {ms:.2f} |" in m["quote"] or f"**{ms:g}ms**" in m["quote"], m["id"]
            if m.get("scored") is False:
                assert m["note"].startswith("Not scored: "), m["id"]
        elif m["kind"] in ("prefill_s", "decode_step_s"):
            assert m["unit"] == "ms", m["id"]
            assert repr(float(m["value"])) in m["quote"], m["id"]
        else:
            assert "not vLLM" in m["note"], m["id"]
            assert m["scored"] is False, m["id"]


def test_a_third_is_held_out() -> None:
    data = yaml.safe_load(DATA.read_text())
    first = [m for m in data["measurements"] if m["source"] == "mooncake-vllm-pd"]
    for kind in ("kv_transfer_s", "pd_ttft_s"):
        entries = [m for m in first if m["kind"] == kind]
        held = [m for m in entries if m["split"] == "held-out"]
        assert len(held) * 3 == len(entries)
    # The entries added later: every third scored one, in file order, is held out.
    later = [
        m
        for m in data["measurements"]
        if m["source"] not in ("mooncake-vllm-pd", "mooncake-sglang-pd") and m.get("scored", True)
    ]
    assert len(later) >= 3
    for i, m in enumerate(later, start=1):
        assert m["split"] == ("held-out" if i % 3 == 0 else "fit"), m["id"]


def test_the_scorer_runs() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "operator")}
    out = subprocess.run(
        [sys.executable, "benchmarks/accuracy_disaggregation.py", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    rows = json.loads(out.stdout)
    assert len(rows) == len(yaml.safe_load(DATA.read_text())["measurements"])
    assert all(r["estimate"] > 0 for r in rows)
    at_rate = [r for r in rows if r["kind"] == "pd_ttft_at_rate_s"]
    assert at_rate
    assert all(r["prefill_utilization"] > 0 for r in at_rate)
