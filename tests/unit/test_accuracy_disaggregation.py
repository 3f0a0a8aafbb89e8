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
        if m["kind"] == "kv_transfer_s" or m["kind"] == "pd_ttft_s":
            assert f"| {m['value'] * 1000:.2f} |" in m["quote"], m["id"]
        else:
            assert "not vLLM" in m["note"], m["id"]
            assert m["scored"] is False, m["id"]


def test_a_third_is_held_out() -> None:
    data = yaml.safe_load(DATA.read_text())
    for kind in ("kv_transfer_s", "pd_ttft_s"):
        entries = [m for m in data["measurements"] if m["kind"] == kind]
        held = [m for m in entries if m["split"] == "held-out"]
        assert len(held) * 3 == len(entries)


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
