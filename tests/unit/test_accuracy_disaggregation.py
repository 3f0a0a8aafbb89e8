"""The published P/D measurements: every number traceable to its quote, whole sources held out,
the audit's cases labelled, and the scoring script runs."""

import json
import os
import subprocess
import sys

import yaml
from benchmarks import accuracy_disaggregation

from tests.helpers import ROOT

DATA = ROOT / "benchmarks" / "accuracy" / "disaggregation.yaml"


def test_every_entry_names_its_source_and_quotes_its_number() -> None:
    data = yaml.safe_load(DATA.read_text())
    for m in data["measurements"]:
        assert m["source"] in data["sources"], m["id"]
        assert m["validity"] in ("measured", "lower-bound", "excluded"), m["id"]
        if m["kind"] in ("kv_transfer_s", "pd_ttft_s", "pd_ttft_at_rate_s"):
            ms = m["value"] * 1000
            assert f"| {ms:.2f} |" in m["quote"] or f"**{ms:g}ms**" in m["quote"], m["id"]
        elif m["kind"] in ("prefill_s", "decode_step_s"):
            assert m["unit"] == "ms", m["id"]
            assert repr(float(m["value"])) in m["quote"], m["id"]
        else:
            assert "not vLLM" in m["note"], m["id"]
            assert m["validity"] == "excluded", m["id"]


def test_whole_sources_are_held_out() -> None:
    data = yaml.safe_load(DATA.read_text())
    held = {s for s, meta in data["sources"].items() if meta["split"] == "held-out"}
    assert held
    scored = [m for m in data["measurements"] if m["validity"] != "excluded"]
    assert {m["source"] for m in scored} & held, "no scored entry is held out"
    assert {m["source"] for m in scored} - held, "no scored entry is in the fit set"
    for m in data["measurements"]:
        want = "held-out" if m["source"] in held else "fit"
        assert accuracy_disaggregation.split_of(data, m) == want, m["id"]


def test_a_ttft_through_the_toy_proxy_carries_two_request_overheads() -> None:
    """The second request is a whole request: its fixed overhead and its prompt's tokens."""
    data = yaml.safe_load(DATA.read_text())
    m = next(e for e in data["measurements"] if e["id"] == "ttft-h800-qwen3-8b-128")
    assert m["proxy_requests"] == 2
    _, two, _ = accuracy_disaggregation.estimate(data, m)
    _, one, _ = accuracy_disaggregation.estimate(data, {**m, "proxy_requests": 1})
    a = accuracy_disaggregation._spec(data, m, m["layout"]["prefill_tp"], 1.0).assumptions
    per_request = a.request_overhead_seconds + 128 * a.request_overhead_per_token_seconds
    assert a.request_overhead_per_token_seconds > 0
    assert abs((two - one) - per_request) < 1e-9


def test_engines_the_planner_does_not_describe_are_excluded_not_scored() -> None:
    """Splitwise's profiled engine (a fixed per-step cost: the decode step does not shrink with
    TP) and SGLang stay in the file, excluded with the reason."""
    data = yaml.safe_load(DATA.read_text())
    for m in data["measurements"]:
        if m["source"] in ("splitwise-sim", "mooncake-sglang-pd", "lmcache-pdbench"):
            assert m["validity"] == "excluded", m["id"]


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
