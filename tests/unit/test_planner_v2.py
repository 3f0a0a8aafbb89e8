"""Planner v2: explicit questions at a given TP, latency at the load a replica carries, knobs
chosen for the SLO, needs compared before bounds, no count where nothing can serve."""

import json
import math
import os
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.helpers import spec as make_spec
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.manifest import parse_manifests
from tokenscale.api.slo import Slo
from tokenscale.cli.app import app
from tokenscale.planning import Conditions, plan_at, plan_service, resolve
from tokenscale.planning.load import at_load
from tokenscale.planning.operating_point import meets_slos, slo_estimates
from tokenscale.planning.planner import _choose, perf_at
from tokenscale.scaling import EngineInput, ScalingState, Snapshot, decide
from tokenscale.scaling.engine import live_conditions
from tokenscale.simulation.capacity import run_one_replica, sustainable_rps
from tokenscale.simulation.replica import replica_config
from tokenscale.simulation.trace import percentile

EXAMPLES = int(os.environ.get("TOKENSCALE_HYPOTHESIS_EXAMPLES", "40"))


def _llama70_h100(rps: float, **patch: Any) -> InferenceServiceSpec:
    base: dict[str, Any] = {
        "model": {"name": "meta-llama/Llama-3.1-70B-Instruct", "catalog": "llama-3.1-70b"},
        "hardware": {"gpu": "H100-SXM-80GB", "tensorParallelSize": "auto"},
        "workload": {
            "rps": {"mean": rps},
            "inputTokens": {"mean": 1000, "p99": 1000},
            "outputTokens": {"mean": 250, "p99": 250},
        },
        "slo": {"ttftP99Seconds": 2.0, "tpotP99Seconds": 0.1},
    }
    base.update(patch)
    return make_spec(**base)


def _code_like() -> InferenceServiceSpec:
    return make_spec(
        hardware={"gpu": "H100-SXM-80GB", "tensorParallelSize": 1},
        workload={
            "rps": {"mean": 5},
            "inputTokens": {"mean": 2048, "p99": 7436},
            "outputTokens": {"mean": 28, "p99": 90},
            "maxContextTokens": 16384,
        },
        slo={"ttftP99Seconds": 3.0, "tpotP99Seconds": 0.08},
    )


def _snapshot(rps: float, n: int) -> Snapshot:
    return Snapshot(
        at=0.0,
        replicas_reporting=n,
        waiting=0.0,
        running=8.0 * n,
        kv_usage_max=0.5,
        kv_usage_mean=0.5,
        ttft_p99_s=0.5,
        tpot_p99_s=0.05,
        request_rate_rps=rps,
        prompt_tps=rps * 1000,
        generation_tps=rps * 250,
        newest_sample_age_s=1.0,
    )


@pytest.mark.parametrize("scale", [0.01, 0.1, 1.0, 3.0, 10.0])
def test_the_live_model_sizes_at_the_tp_the_deployment_runs(scale: float) -> None:
    """Auto-TP service; observed load ×0.01…×10: the engine's model never re-chooses the TP."""
    spec = _llama70_h100(30.0, scaling={"maxReplicas": 10_000})
    forecast = plan_service(spec)
    snap = _snapshot(30.0 * scale, forecast.sized.total)
    d = decide(
        EngineInput(
            spec=spec,
            forecast=forecast,
            snapshot=snap,
            state=ScalingState(decided_replicas=forecast.sized.total),
            now_s=0.0,
            interval_s=15.0,
        )
    )
    assert d.calibration is not None
    at_tp = plan_at(
        resolve(spec),
        live_conditions(spec, snap, d.calibration),
        forecast.tensor_parallel_size,
    )
    assert at_tp.tensor_parallel_size == forecast.tensor_parallel_size
    assert d.model_replicas == max(1, min(at_tp.sized.with_redundancy, 10_000))


def test_auto_tp_compares_needs_before_the_bounds() -> None:
    """70B at 300 RPS with the default maxReplicas 64: the layout needing the fewest GPUs wins
    and, when even it needs more than 64 replicas, the plan is not feasible."""
    p = plan_service(_llama70_h100(300.0))
    counted = [c for c in p.tp_candidates if c.gpus_needed is not None]
    assert counted
    best = min(c.gpus_needed or 0 for c in counted)
    chosen = next(c for c in p.tp_candidates if c.tensor_parallel_size == p.tensor_parallel_size)
    assert chosen.gpus_needed == best
    assert p.replicas is not None
    if p.replicas.with_redundancy > 64:
        assert not p.feasible
        # maxReplicas was never set: the reason says it is the default
        assert any("the default 64) is below" in r for r in p.infeasible_reasons)


def test_low_load_ttft_is_the_prefill_and_one_replica_is_ample() -> None:
    """Llama-2-7B FP16, one A100, 2,048-token prompts, 1 output token, 0.5 RPS."""
    spec = make_spec(
        model={"name": "meta-llama/Llama-2-7b-hf", "catalog": "llama-2-7b", "weightDtype": "fp16"},
        hardware={"gpu": "A100-SXM-80GB", "tensorParallelSize": 1},
        workload={
            "rps": {"mean": 0.5},
            "inputTokens": {"mean": 2048, "p99": 2048},
            "outputTokens": {"mean": 1, "p99": 1},
            "maxContextTokens": 4096,
        },
        slo={"ttftP99Seconds": 1.0},
    )
    p = plan_service(spec)
    assert p.sized.total == 1
    assert p.at_load is not None
    assert p.at_load.rps_per_replica == pytest.approx(0.5)
    # prefill alone (published single-request TTFT for this shape on an A100: ~0.13 s)
    assert 0.08 < p.prefill_p99_s < 0.25
    overhead = spec.assumptions.request_overhead_seconds  # outside the GPU, no queue
    assert p.at_load.ttft_mean_s - overhead == pytest.approx(p.prefill_p99_s, rel=0.15)
    # the P99 counts the 1 in 18 prompts that arrive during another's prefill: identical
    # prompts wait for the rest of one prefill (M/D/1, not M/M/1's exponential tail, which
    # said 0.30 s), so the estimate is the simulated replica's P99 within 15 %
    rec = run_one_replica(
        replica_config(spec, p, prefix_block_tokens=512), 0.5, [(2048, 1)], 5000, 0
    )
    sim_p99 = percentile([o.ttft_s for o in rec.outcomes], 0.99)
    # (the simulated replica's TTFT has no request overhead: compare GPU time with GPU time)
    assert p.ttft_p99_estimate_s - overhead == pytest.approx(sim_p99, rel=0.15)


def test_prefill_heavy_capacity_counts_prefill_and_matches_the_simulator() -> None:
    spec = _code_like()
    plan = plan_at(resolve(spec), Conditions(workload=spec.workload, knee="slo"), 1)
    perf = perf_at(
        resolve(spec), Conditions(workload=spec.workload), 1, plan.max_num_batched_tokens
    )
    # a replica can never complete more requests than its prefills allow
    assert plan.rps_per_replica < 1.0 / perf.mean_prefill_seconds
    # the spec's sizes: mean 2,048 and P99 7,436 prompt tokens (1,764 × 95 + 7,436 × 5)
    pairs = [(1764, 28)] * 95 + [(7436, 28)] * 5
    assert sum(n for n, _ in pairs) / len(pairs) == pytest.approx(2048, abs=1)
    sim = sustainable_rps(
        replica_config(spec, plan, prefix_block_tokens=512),
        spec.slo,
        pairs,
        plan.rps_per_replica,
        800,
    )
    assert plan.rps_per_replica == pytest.approx(sim, rel=0.10)


def test_chunk_budget_is_chosen_for_the_tpot_slo_and_explained() -> None:
    spec = _code_like()
    p = plan_service(spec)
    assert p.max_num_batched_tokens < 8192  # vLLM's H100 default stalls decodes too long
    assert p.serving_knobs_reason.startswith(f"chunk {p.max_num_batched_tokens:,}:")
    assert "adds" in p.serving_knobs_reason
    assert p.max_num_seqs <= p.max_num_batched_tokens
    # the user's value wins
    pinned = make_spec(
        hardware={"gpu": "H100-SXM-80GB", "tensorParallelSize": 1},
        workload=spec.workload.model_dump(by_alias=True),
        slo={"ttftP99Seconds": 3.0, "tpotP99Seconds": 0.08},
        serving={"maxNumBatchedTokens": 8192},
    )
    assert plan_service(pinned).max_num_batched_tokens == 8192
    # ... and is checked: a budget under which no batch meets the SLOs says so
    tight = make_spec(
        hardware={"gpu": "L4-24GB", "tensorParallelSize": 1},
        workload={
            "rps": {"mean": 1},
            "inputTokens": {"mean": 2048, "p99": 8000},
            "outputTokens": {"mean": 20, "p99": 40},
            "maxContextTokens": 16384,
        },
        slo={"tpotP99Seconds": 0.1},
        serving={"maxNumBatchedTokens": 8192},
    )
    tp = plan_service(tight)
    assert any("makes the SLOs unreachable" in w for w in tp.warnings) or tp.feasible


def test_a_configuration_that_cannot_serve_reports_no_replica_count() -> None:
    text = """
apiVersion: tokenscale.io/v1alpha1
kind: InferenceService
metadata: {name: too-big}
spec:
  model: {name: meta-llama/Llama-3.1-70B-Instruct, catalog: llama-3.1-70b}
  hardware: {gpu: L4-24GB, tensorParallelSize: 1}
  workload:
    rps: {mean: 5}
    inputTokens: {mean: 1000}
    outputTokens: {mean: 200}
"""
    runner = CliRunner()
    res = runner.invoke(app, ["plan", "-", "-o", "json"], input=text)
    assert res.exit_code == 1
    data = json.loads(res.stdout)
    assert data["replicas"] is None
    assert data["gpus_total"] is None
    assert data["infeasible_reasons"]
    table = runner.invoke(app, ["plan", "-"], input=text)
    assert table.exit_code == 1
    assert "cannot serve" in table.stdout
    assert "21,320" not in table.stdout


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["L4-24GB", "A100-SXM-80GB", "H100-SXM-80GB"]),
    st.floats(50, 8000),
    st.floats(1, 2000),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
)
def test_latency_estimates_are_monotone_in_load(
    gpu: str, n_in: float, n_out: float, u1: float, u2: float
) -> None:
    spec = make_spec(
        hardware={"gpu": gpu, "tensorParallelSize": 1},
        workload={
            "rps": {"mean": 1},
            "inputTokens": {"mean": n_in, "p99": n_in},
            "outputTokens": {"mean": n_out, "p99": n_out},
            "maxContextTokens": 16384,
        },
    )
    r = resolve(spec)
    perf = perf_at(r, Conditions(workload=spec.workload), 1)
    top = perf.request_rate(256.0)
    lo, hi = sorted((u1 * top * 0.99, u2 * top * 0.99))
    a = at_load(perf, lo, spec.workload.input_tokens, spec.workload.output_tokens, 256.0)
    b = at_load(perf, hi, spec.workload.input_tokens, spec.workload.output_tokens, 256.0)
    assert a is not None
    assert b is not None
    for field in ("ttft_mean_s", "ttft_p99_s", "tpot_mean_s", "tpot_p99_s", "e2e_p99_s"):
        assert getattr(b, field) >= getattr(a, field) * (1 - 1e-6), field


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(0.05, 400.0), st.floats(0.01, 0.2), st.floats(0.2, 10.0))
def test_the_search_predicate_agrees_with_the_estimates(
    batch: float, tpot_slo: float, ttft_slo: float
) -> None:
    spec = _code_like().model_copy(
        update={
            "slo": Slo(ttft_p99_seconds=ttft_slo, tpot_p99_seconds=tpot_slo, e2e_p95_seconds=30)
        }
    )
    w = spec.workload
    perf = perf_at(resolve(spec), Conditions(workload=w), 1)
    estimates = slo_estimates(perf, spec.slo, batch, w.input_tokens, w.output_tokens)
    assert meets_slos(perf, spec.slo, batch, w.input_tokens, w.output_tokens) == all(
        e.met for e in estimates
    )


def test_auto_tp_counts_min_replicas_before_breaking_a_tie_on_needed_gpus() -> None:
    """Qwen2.5-7B (the hfConfig example, minReplicas 2) sized at the SLO batch: TP 1 needs
    2 replicas and TP 2 needs 1 — 2 GPUs each — but TP 2 must run two replicas of 2 GPUs."""
    root = Path(__file__).resolve().parents[2]
    service = parse_manifests((root / "deploy/examples/qwen2.5-7b-hfconfig.yaml").read_text())[0]
    r = resolve(service.spec, service.metadata.name)
    plans = [
        plan_at(r, Conditions(workload=service.spec.workload, knee="slo"), tp) for tp in (1, 2)
    ]
    one, two = plans
    assert one.replicas is not None
    assert two.replicas is not None
    assert one.replicas.with_redundancy * 1 == two.replicas.with_redundancy * 2 == 2
    assert two.sized.total == 2  # minReplicas
    chosen = _choose(plans)
    assert chosen.tensor_parallel_size == 1
    assert chosen.gpus_total == 2


def _lognormal_prompts(
    prompts: tuple[float, float, int], out: int, seed: int, service: dict[str, Any]
) -> tuple[list[tuple[int, int]], InferenceServiceSpec]:
    """4,000 lognormal prompts through (mean, P99), cut at the third figure, with ``out``-token
    answers; and a spec of ``service`` (model, hardware, rps, context, slo) stating their mean
    and P99."""
    mean, p99, most = prompts
    rng = random.Random(seed)
    sigma = 2.326 - math.sqrt(2.326**2 - 2.0 * math.log(p99 / mean))
    mu = math.log(mean) - sigma * sigma / 2.0
    pairs = [(min(most, max(1, round(rng.lognormvariate(mu, sigma)))), out) for _ in range(4000)]
    ins = sorted(n for n, _ in pairs)
    spec = make_spec(
        model=service["model"],
        hardware=service["hardware"],
        workload={
            "rps": {"mean": service["rps"]},
            "inputTokens": {"mean": round(sum(ins) / len(ins)), "p99": ins[int(0.99 * len(ins))]},
            "outputTokens": {"mean": out, "p99": out},
            "maxContextTokens": service["context"],
        },
        slo=service["slo"],
    )
    return pairs, spec


def test_a_prompt_that_waited_shares_its_last_step_with_the_prompts_behind_it() -> None:
    """Qwen2.5-32B on one A100 at TP 2, lognormal prompts (1,000 / P99 4,000 tokens), a
    2,048-token chunk budget, 1.4 req/s. The TTFT P99 is set by short prompts queued behind a
    long one; when their turn comes the scheduler fills their step with the prompts that
    arrived meanwhile, so they finish at the end of a fuller step than their own chunk's.
    Without that term the planner's P99 was 17 % below the simulated replica's; with it, within
    12 % (two seeds of 20,000 arrivals pooled: one replay's P99 moves with the few longest
    prompts it draws)."""
    pairs, spec = _lognormal_prompts(
        (1000.0, 4000.0, 30000),
        250,
        1,
        {
            "model": {"name": "Qwen/Qwen2.5-32B-Instruct", "catalog": "qwen2.5-32b"},
            "hardware": {"gpu": "A100-SXM-80GB", "tensorParallelSize": 2},
            "rps": 1.4,
            "context": 32768,
            "slo": {"ttftP99Seconds": 1.0, "tpotP99Seconds": 0.05},
        },
    )
    r = resolve(spec)
    plan = plan_at(r, Conditions(workload=spec.workload, knee="slo"), 2)
    assert plan.max_num_batched_tokens == 2048
    perf = perf_at(r, Conditions(workload=spec.workload), 2, plan.max_num_batched_tokens)
    w = spec.workload
    point = at_load(perf, 1.4, w.input_tokens, w.output_tokens, float(plan.max_num_seqs))
    assert point is not None
    cfg = replica_config(spec, plan, prefix_block_tokens=512)
    ttfts: list[float] = []
    for seed in (1, 2):
        rec = run_one_replica(cfg, 1.4, pairs, 20_000, seed)
        outs = sorted(rec.outcomes, key=lambda o: o.arrival_s)[4000:]
        ttfts += [o.ttft_s for o in outs]
    assert point.ttft_p99_s == pytest.approx(percentile(ttfts, 0.99), rel=0.12)


def test_a_pool_of_few_long_requests_is_sized_where_no_prompt_waits_for_a_seat() -> None:
    """Llama-3.1-8B on one H100, 24,000-token prompts (P99 28,000), 200-token answers: the KV
    pool holds 17 such requests, 16 at its 0.9 target. But a step reads more KV than weights
    here, so when the count in use runs high every holder finishes later and it runs higher
    still — at the rate of a batch of 16 (1.06 req/s) the simulated replica preempts 494 times
    and its TTFT P99 is 47 s against the 8 s objective. The planner now sizes at the batch
    where prompts do not wait for a seat (0.85 req/s), and the simulated replica comes within
    1 % of the objective there (8.05 s)."""
    pairs, spec = _lognormal_prompts(
        (24000.0, 28000.0, 65536),
        200,
        3,
        {
            "model": {"name": "meta-llama/Llama-3.1-8B-Instruct", "catalog": "llama-3.1-8b"},
            "hardware": {"gpu": "H100-SXM-80GB", "tensorParallelSize": 1},
            "rps": 1.0,
            "context": 65536,
            "slo": {"ttftP99Seconds": 8.0, "tpotP99Seconds": 0.1},
        },
    )
    r = resolve(spec)
    plan = plan_at(r, Conditions(workload=spec.workload, knee="slo"), 1)
    kv = next(c for c in plan.constraints if c.name == "kv")
    assert plan.binding_constraint == "kv"
    assert "wait" in kv.formula
    assert "seat" in kv.formula
    perf = perf_at(r, Conditions(workload=spec.workload), 1, plan.max_num_batched_tokens)
    planned_rps = plan.design_rps / plan.sized.needed
    room_rps = perf.request_rate(plan.concurrency_limits.kv_mean_context)
    assert room_rps > 1.15 * planned_rps
    cfg = replica_config(spec, plan, prefix_block_tokens=512)

    def ttft_p99(rps: float) -> float:
        rec = run_one_replica(cfg, rps, pairs, 10_000, 1)
        outs = sorted(rec.outcomes, key=lambda o: o.arrival_s)[2000:]
        return percentile([o.ttft_s for o in outs], 0.99)

    at_plan, at_room = ttft_p99(planned_rps), ttft_p99(room_rps)
    assert at_plan <= 8.0 * 1.05  # the planner's estimate, within 5 % of the objective
    assert at_room > 2.0 * 8.0
