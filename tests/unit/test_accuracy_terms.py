"""The yardstick's fitted terms: the request overhead fitted on the entries that isolate it, an
engine generation's own step cost, and what a TTFT that measures overhead is scored as."""

import copy
from typing import Any

import pytest
import yaml
from benchmarks import accuracy, accuracy_refit

from tokenscale.api.assumptions import Assumptions
from tokenscale.planning import plan_service, replica_perf_model


def _files() -> dict[str, dict[str, Any]]:
    return accuracy.load_files(("measurements", "disaggregation"))


def test_the_overhead_fit_recovers_a_known_overhead() -> None:
    """Entries built so that each TTFT at concurrency 1 is its estimate's rest + k × (30 ms +
    n × 3 µs) (``k`` requests, ``n`` prompt tokens): the fit finds both terms."""
    files = _files()
    now = Assumptions()
    rows = {r.id: r for r in accuracy.evaluate_all(files) if r.group in ("overhead", "ttft")}
    for data in files.values():
        for e in data["measurements"]:
            if e["id"] not in rows or e.get("kind") not in ("ttft_s", "pd_ttft_s"):
                continue
            r, k, n = rows[e["id"]], int(e.get("proxy_requests", 1)), float(e["input_tokens"])
            unit = 1e3 if r.unit == "ms" else 1.0
            fixed = 0.030 - now.request_overhead_seconds
            per_token = 3e-6 - now.request_overhead_per_token_seconds
            e["value"] = r.estimate + k * unit * (fixed + n * per_token)
    found = accuracy_refit.fit_request_overhead(files)
    assert found.seconds == pytest.approx(0.030, rel=1e-6)
    assert found.seconds_per_token == pytest.approx(3e-6, rel=1e-6)
    assert found.fit_ids  # fitted on the fit set's entries only
    assert all(
        abs(err) < 1e-6
        for errs in found.errors.values()
        for entry, err in errs.items()
        if not entry.startswith("ttft-a10")  # under load: the queue is not rebuilt here
    )


def test_the_request_overhead_grows_with_the_prompt_and_costs_no_gpu_time() -> None:
    """TTFT carries ``requestOverheadSeconds`` + prompt × ``requestOverheadPerTokenSeconds``; the
    prefill (the GPU's share, what capacity is made of) carries neither."""
    files = _files()
    data = files["measurements"]
    entry = next(e for e in data["measurements"] if e["id"] == "ttft-a100-80-qwen3-14b-awq-16000")
    base = accuracy.build_spec(data, entry)
    more = accuracy.build_spec(data, entry, {"requestOverheadPerTokenSeconds": 1e-5})
    a, b = (replica_perf_model(s, plan_service(s)) for s in (base, more))
    n = float(entry["input_tokens"])
    extra = n * (1e-5 - base.assumptions.request_overhead_per_token_seconds)
    assert b.own_ttft_seconds(0.0, n) - a.own_ttft_seconds(0.0, n) == pytest.approx(extra)
    assert b.prefill_seconds(n) == a.prefill_seconds(n)


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
