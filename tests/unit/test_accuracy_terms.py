"""The yardstick's fitted terms: the request overhead fitted on the entries that isolate it, an
engine generation's own step cost, and what a TTFT that measures overhead is scored as."""

import copy
from typing import Any

import pytest
import yaml
from benchmarks import accuracy, accuracy_refit

from tokenscale.api.assumptions import Assumptions


def _files() -> dict[str, dict[str, Any]]:
    return accuracy.load_files(("measurements", "disaggregation"))


def test_the_overhead_fit_recovers_a_known_overhead() -> None:
    """Entries built so that each TTFT is its estimate's rest + n × 30 ms: the fit finds 30 ms."""
    files = _files()
    now = Assumptions().request_overhead_seconds
    rows = {r.id: r for r in accuracy.evaluate_all(files) if r.group == "overhead"}
    for data in files.values():
        for e in data["measurements"]:
            if e["id"] not in rows:
                continue
            r, n = rows[e["id"]], int(e.get("proxy_requests", 1))
            unit = 1e3 if r.unit == "ms" else 1.0
            e["value"] = r.estimate + n * unit * (0.030 - now)
    found = accuracy_refit.fit_request_overhead(files)
    assert found.seconds == pytest.approx(0.030, rel=1e-6)
    assert found.fit_ids  # fitted on the fit set's entries only
    assert all(abs(err) < 1e-6 for errs in found.errors.values() for err in errs.values())


def test_a_ttft_that_measures_overhead_is_scored_as_overhead_not_prefill() -> None:
    files = _files()
    rows = {r.id: r for r in accuracy.evaluate_all(files)}
    assert rows["ttft-h100-qwen3-8b-sharegpt-c1"].group == "overhead"
    assert rows["ttft-h800-qwen3-8b-128"].group == "overhead"
    assert rows["ttft-h800-qwen3-8b-32768"].group == "ttft"
    # the flag alone moves an entry between the groups
    entry = next(
        e for e in files["measurements"]["measurements"] if e["id"].startswith("ttft-a100-80")
    )
    assert accuracy.group_of(entry) == "ttft"
    assert accuracy.group_of(entry | {"measures": "request-overhead"}) == "overhead"


def test_an_engine_generation_carries_its_own_step_cost_and_today_s_engine_none() -> None:
    data = yaml.safe_load(accuracy.DATA.read_text())
    old = next(e for e in data["measurements"] if e["source"] == "vllm-3240")
    new = next(e for e in data["measurements"] if e["source"] == "vllm-23197")
    assert accuracy.engine_generation(old) == "vllm<0.6"
    assert accuracy.engine_generation(new) is None
    step = Assumptions().step_overhead_seconds
    extra = accuracy.ENGINE_STEP_OVERHEAD_S["vllm<0.6"]
    assert extra > 0
    old_spec, new_spec = accuracy.build_spec(data, old), accuracy.build_spec(data, new)
    assert old_spec.assumptions.step_overhead_seconds == pytest.approx(step + extra)
    assert new_spec.assumptions.step_overhead_seconds == pytest.approx(step)
    # a refit's own step overhead is the base the generation's cost is added to
    tried = accuracy.build_spec(data, copy.deepcopy(old), {"stepOverheadSeconds": 0.002})
    assert tried.assumptions.step_overhead_seconds == pytest.approx(0.002 + extra)
