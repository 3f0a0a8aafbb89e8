"""The fleet simulator: trace formats, Prometheus-like quantiles, and the knowledge map's facts.

The validation tests run one simulated engine under controlled load and check qualitative
facts (batching, chunked prefill, prefix caching, KV exhaustion) and the quantitative link to
the planner (its SLO-bound capacity vs the simulated replica's sustainable rate).
"""

import json
import math
import random
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.manifest import parse_manifests
from tokenscale.api.slo import Slo
from tokenscale.catalog.vllm_metrics import TTFT_BUCKETS
from tokenscale.cli.app import app
from tokenscale.data import AZURE_CONVERSATION, bundled_trace
from tokenscale.planning import plan_service
from tokenscale.simulation import (
    Setup,
    SimOptions,
    TraceError,
    parse_trace,
    scale_trace,
    simulate,
    synthetic_trace,
)
from tokenscale.simulation.capacity import oracle_gpu_hours, run_one_replica, sustainable_rps
from tokenscale.simulation.histogram import Histogram, histogram_quantile
from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import Replica, ReplicaConfig, SimRequest, replica_config
from tokenscale.simulation.trace import percentile, trace_stats

ROOT = Path(__file__).resolve().parents[2]
SPEC_FILE = ROOT / "benchmarks" / "specs" / "azure-conv-llama-8b-l40s.yaml"
AZURE = bundled_trace(AZURE_CONVERSATION)


def _spec(**slo: float) -> InferenceServiceSpec:
    spec = parse_manifests(SPEC_FILE.read_text())[0].spec
    return spec.model_copy(update={"slo": Slo(**slo)}) if slo else spec


def _fixed_workload(spec: InferenceServiceSpec, n_in: int, n_out: int) -> InferenceServiceSpec:
    w = spec.workload
    return spec.model_copy(
        update={
            "workload": w.model_copy(
                update={
                    "input_tokens": w.input_tokens.model_copy(
                        update={"mean": n_in, "p95": n_in, "p99": n_in}
                    ),
                    "output_tokens": w.output_tokens.model_copy(
                        update={"mean": n_out, "p95": n_out, "p99": n_out}
                    ),
                }
            )
        }
    )


def _engine(spec: InferenceServiceSpec, **overrides: Any) -> ReplicaConfig:
    cfg = replica_config(spec, plan_service(spec), prefix_block_tokens=512)
    return replace(cfg, **overrides)


def _closed_loop(cfg: ReplicaConfig, concurrency: int, n_in: int, n_out: int) -> Recorder:
    """Keep ``concurrency`` requests in flight (a load tester's concurrency step)."""
    rec = Recorder()
    engine = Replica(cfg, rec, 0.0)
    for _ in range(concurrency):
        engine.add(SimRequest(0.0, n_in, n_out), 0.0)
    sent = concurrency
    while sent < concurrency * 6:
        done = len(rec.outcomes)
        engine.run_until(engine.clock + 1e-3)
        for _ in range(len(rec.outcomes) - done):
            engine.add(SimRequest(engine.clock, n_in, n_out), engine.clock)
            sent += 1
    engine.run_until(math.inf)
    return rec


# -- traces ------------------------------------------------------------------------------------
def test_azure_trace_parses_with_its_published_statistics() -> None:
    trace = parse_trace(AZURE.read_text(), source="azure")
    s = trace_stats(trace)
    # the trace's README (tokenscale/data/traces):
    # 19,366 requests over 58.4 min, mean 5.53 RPS, 1-min peak 8.45
    assert s.requests == 19_366
    assert s.duration_s / 60 == pytest.approx(58.4, abs=0.05)
    assert s.mean_rps == pytest.approx(5.53, abs=0.01)
    assert s.peak_rps == pytest.approx(8.45, abs=0.3)
    assert s.input_mean == pytest.approx(1155, abs=1)
    assert s.output_p99 == pytest.approx(601, abs=1)
    assert trace.requests[0].arrival_s == 0.0


def test_mooncake_and_generic_csv_and_errors() -> None:
    mooncake = "\n".join(
        json.dumps({"timestamp": t, "input_length": 1024, "output_length": 10, "hash_ids": [1, 2]})
        for t in (5000, 3000)
    )
    trace = parse_trace(mooncake)
    assert [r.arrival_s for r in trace.requests] == [0.0, 2.0]
    assert trace.requests[0].prefix_blocks == (1, 2)
    csv_text = "t_ms,prompt,completion\n100,50,5\n600,60,6\n"
    trace = parse_trace(
        csv_text,
        columns={"arrival": "t_ms", "input": "prompt", "output": "completion"},
        arrival_unit="ms",
    )
    assert [r.arrival_s for r in trace.requests] == [0.0, 0.5]
    with pytest.raises(TraceError, match="--columns arrival=COL"):
        parse_trace(csv_text)
    with pytest.raises(TraceError, match="no column 'when'"):
        parse_trace(csv_text, columns={"arrival": "when", "input": "prompt", "output": "x"})
    with pytest.raises(TraceError, match="line 2, column when: cannot read the timestamp"):
        parse_trace(
            "when,i,o\nyesterday,1,1\n", columns={"arrival": "when", "input": "i", "output": "o"}
        )
    with pytest.raises(TraceError, match="line 2"):
        parse_trace('{"timestamp": 1, "input_length": 2, "output_length": 3}\n{"timestamp": 1}')


def test_rate_and_time_scaling_keep_the_shape() -> None:
    trace = parse_trace(AZURE.read_text())
    doubled = scale_trace(trace, rate_scale=2.0)
    assert len(doubled.requests) == 2 * len(trace.requests)
    half = scale_trace(trace, rate_scale=0.5, seed=1)
    assert len(half.requests) == pytest.approx(len(trace.requests) / 2, rel=0.03)
    slow = scale_trace(trace, time_scale=2.0)
    assert slow.duration_s == pytest.approx(2 * trace.duration_s)
    with pytest.raises(TraceError, match="must be > 0"):
        scale_trace(trace, rate_scale=0)


# -- Prometheus-like quantiles -------------------------------------------------------------------
def test_histogram_quantile_interpolates_like_prometheus() -> None:
    h = Histogram(TTFT_BUCKETS)
    before = h.copy_counts()
    for v in (0.03, 0.03, 0.05, 0.07):  # buckets (0.02, 0.04] ×2, (0.04, 0.06], (0.06, 0.08]
        h.observe(v)
    # rank 0.5 × 4 = 2 → the top of the (0.02, 0.04] bucket
    assert histogram_quantile(0.5, TTFT_BUCKETS, before, h.copy_counts()) == pytest.approx(0.04)
    # rank 0.99 × 4 = 3.96 → 96 % into (0.06, 0.08]
    assert histogram_quantile(0.99, TTFT_BUCKETS, before, h.copy_counts()) == pytest.approx(0.0792)
    assert histogram_quantile(0.99, TTFT_BUCKETS, before, before) is None
    h.observe(10_000.0)  # +Inf bucket answers with the largest finite bound
    assert histogram_quantile(1.0, TTFT_BUCKETS, before, h.copy_counts()) == TTFT_BUCKETS[-1]


# -- the knowledge map's facts, on one simulated engine ---------------------------------------
def test_batching_raises_throughput_and_tpot_with_a_knee() -> None:
    cfg = _engine(_spec())
    tps, tpot = [], []
    for c in (1, 2, 4, 8, 16, 32, 64, 128):
        rec = _closed_loop(cfg, c, 512, 128)
        last = max(o.arrival_s + o.e2e_s for o in rec.outcomes)
        tps.append(rec.generation_tokens / last)
        tpot.append(sum(o.tpot_s for o in rec.outcomes) / len(rec.outcomes))
    assert all(b > a for a, b in pairwise(tps))
    assert all(b > a for a, b in pairwise(tpot))
    gains = [b / a for a, b in pairwise(tps)]
    assert gains[0] > 1.8  # nearly linear at small batches (bandwidth-bound decode)
    assert gains[-1] < 1.5  # the knee: doubling the batch buys far less at the end


def test_chunked_prefill_lowers_tpot_p99_when_long_prompts_arrive() -> None:
    spec = _spec()
    rng = random.Random(3)
    arrivals = [
        (i * 0.25, 8000 if rng.random() < 0.15 else 300, 8 if rng.random() < 0.5 else 200)
        for i in range(400)
    ]
    p99 = {}
    itl99 = {}
    for chunked in (True, False):
        budget = 2048 if chunked else 8192
        cfg = _engine(spec, chunked_prefill=chunked, max_num_batched_tokens=budget)
        rec = Recorder()
        engine = Replica(cfg, rec, 0.0)
        for t, n_in, n_out in arrivals:
            engine.run_until(t)
            engine.add(SimRequest(t, n_in, n_out), t)
        engine.run_until(math.inf)
        p99[chunked] = percentile([o.tpot_s for o in rec.outcomes if o.output_tokens > 1], 0.99)
        itl99[chunked] = histogram_quantile(
            0.99, rec.itl.bounds, [0.0] * len(rec.itl.counts), rec.itl.counts
        )
    assert p99[True] < p99[False]
    assert itl99[True] is not None
    assert itl99[False] is not None
    assert itl99[True] < itl99[False] / 2  # no decode waits for a whole 8k prefill


def test_prefix_cache_hits_lower_ttft() -> None:
    spec = _spec()
    cfg = _engine(spec)
    ttft = {}
    for shared in (0, 6):
        trace = synthetic_trace(
            120, 2.0, lambda r: 4096, lambda r: 50, seed=5, shared_prefix_blocks=shared
        )
        rec = Recorder()
        engine = Replica(cfg, rec, 0.0)
        for r in trace.requests:
            engine.run_until(r.arrival_s)
            engine.add(
                SimRequest(r.arrival_s, r.input_tokens, r.output_tokens, r.prefix_blocks),
                r.arrival_s,
            )
        engine.run_until(math.inf)
        ttft[shared] = sum(o.ttft_s for o in rec.outcomes) / len(rec.outcomes)
        if shared:
            assert rec.prefix_hits / rec.prefix_queries > 0.6
    assert ttft[6] < 0.5 * ttft[0]


def test_kv_exhaustion_queues_and_preempts() -> None:
    spec = _spec()
    roomy = _engine(spec)
    tight = _engine(spec, kv_blocks=600)  # 9,600 tokens: a few long requests fill it
    pairs = [(3000, 1500)]
    rec_roomy = run_one_replica(roomy, 0.2, pairs, 120, seed=2)
    rec_tight = run_one_replica(tight, 0.2, pairs, 120, seed=2)
    assert rec_roomy.preemptions == 0
    assert rec_tight.preemptions > 0
    queue = [o.ttft_s for o in rec_tight.outcomes]
    assert percentile(queue, 0.5) > 5 * percentile([o.ttft_s for o in rec_roomy.outcomes], 0.5)


@pytest.mark.parametrize(
    ("n_in", "n_out", "tpot_slo"), [(1000, 200, 0.04), (1000, 200, 0.05), (500, 300, 0.035)]
)
def test_planner_capacity_matches_the_simulated_replica(
    n_in: int, n_out: int, tpot_slo: float
) -> None:
    spec = _fixed_workload(_spec(ttft_p99_seconds=2.0, tpot_p99_seconds=tpot_slo), n_in, n_out)
    plan = plan_service(spec)
    assert plan.operating_batch == plan.concurrency_limits.slo  # the SLO binds, not the knee
    sim = sustainable_rps(_engine(spec), spec.slo, [(n_in, n_out)], plan.rps_per_replica, 2000)
    assert sim == pytest.approx(plan.rps_per_replica, rel=0.10)


def test_mismatch_scales_the_truth() -> None:
    spec = _fixed_workload(_spec(ttft_p99_seconds=2.0, tpot_p99_seconds=0.05), 1000, 200)
    plan = plan_service(spec)
    fast = sustainable_rps(_engine(spec, mismatch=1.3), spec.slo, [(1000, 200)], 4.0, 800)
    slow = sustainable_rps(_engine(spec, mismatch=0.7), spec.slo, [(1000, 200)], 4.0, 800)
    assert slow < plan.rps_per_replica < fast


def test_oracle_is_per_bin_ceiling_of_load_over_capacity() -> None:
    trace = synthetic_trace(600, lambda t: 2.0 if t < 300 else 6.0, lambda r: 10, lambda r: 10)
    hours = oracle_gpu_hours(trace, capacity_rps=2.5, gpus_per_replica=2, min_replicas=1)
    # ≈ 5 min at 1 replica + 5 min at 3 replicas, 2 GPUs each (Poisson noise moves bins a bit)
    assert hours == pytest.approx((5 * 1 + 5 * 3) * 2 / 60, rel=0.25)


# -- the whole loop -----------------------------------------------------------------------------
def _ramp_setup(mismatch: float = 1.0) -> Setup:
    spec = _spec()
    w = spec.workload  # the forecast: the ramp's start, so the engine has to scale up
    rps = w.rps.model_copy(update={"mean": 5.0, "burst_factor": 1.0})
    spec = spec.model_copy(update={"workload": w.model_copy(update={"rps": rps})})
    trace = synthetic_trace(
        1200,
        lambda t: 4.0 + 12.0 * min(1.0, t / 600),
        lambda r: int(r.lognormvariate(6.6, 0.6)),
        lambda r: int(r.lognormvariate(5.0, 0.6)),
        seed=4,
    )
    return Setup(spec, trace, SimOptions(mismatch=mismatch, capacity_requests=600), "ramp")


def test_tokenscale_follows_a_ramp_and_never_scales_blind() -> None:
    setup = _ramp_setup()
    ours = simulate(setup, "tokenscale")
    static = simulate(setup, "static")
    assert ours.slo_attainment >= 0.99
    assert ours.scale_ups >= 1
    assert ours.gpu_hours < static.gpu_hours * 1.1
    assert ours.gpu_hours >= setup.oracle_gpu_hours * 0.95
    assert ours.completed + ours.rejected == ours.requests
    # the fleet always has the replicas it asked for, never zero
    assert min(p.replicas_target for p in ours.timeline) >= setup.spec.scaling.min_replicas


def test_cli_simulate_json_and_plot(tmp_path: Path) -> None:
    trace = synthetic_trace(300, 6.0, lambda r: 800, lambda r: 100, seed=1)
    csv_path = tmp_path / "t.csv"
    csv_path.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        + "".join(f"{r.arrival_s},{r.input_tokens},{r.output_tokens}\n" for r in trace.requests)
    )
    png = tmp_path / "timeline.png"
    result = CliRunner().invoke(
        app,
        ["simulate", str(SPEC_FILE), "--trace", str(csv_path), "-o", "json", "--plot", str(png)],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    for key in (
        "policy",
        "requests",
        "slo_attainment",
        "ttft_p99_s",
        "tpot_p99_s",
        "e2e_p99_s",
        "gpu_hours",
        "oracle_gpu_hours",
        "scale_events",
        "preemptions",
    ):
        assert key in data
    assert data["requests"] == len(trace.requests)
    assert png.stat().st_size > 20_000
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_cli_simulate_bad_input_names_the_fix(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b,c\n1,2,3\n")
    result = CliRunner().invoke(app, ["simulate", str(SPEC_FILE), "--trace", str(bad)])
    assert result.exit_code == 2
    assert "--columns arrival=COL,input=COL,output=COL" in result.output
    result = CliRunner().invoke(
        app, ["simulate", str(SPEC_FILE), "--trace", str(bad), "--rate-scale", "0"]
    )
    assert result.exit_code == 2


def test_a_replica_that_spans_nodes_holds_all_its_gpus() -> None:
    """405B in BF16 on H100: a replica is TP 8 × PP 2, 16 GPUs on 2 nodes (an LWS group)."""
    example = ROOT / "deploy" / "examples" / "llama-3.1-405b-h100-bf16.yaml"
    spec = parse_manifests(example.read_text())[0].spec
    trace = synthetic_trace(240, 0.5, lambda r: 1000, lambda r: 100, seed=3)
    setup = Setup(spec, trace, SimOptions(capacity_requests=100), "big")
    assert setup.forecast.gpus_per_replica == 16
    result = simulate(setup, "static")
    replica_hours = result.replicas_mean * trace.duration_s / 3600.0
    assert result.gpu_hours == pytest.approx(16 * replica_hours)
    assert result.gpu_hours >= 16 * trace.duration_s / 3600.0 * 0.99  # one group, all along
    assert result.completed > 0


def test_an_arrival_during_a_long_decode_stretch_starts_within_a_step() -> None:
    """A lone 8k-token answer is advanced as one stretch up to the next arrival; the step
    time grows with its context, so a stretch sized with the first step's time ran seconds
    past the arrival (7 s on an L4 probe: an idle replica "missed" a 5-s TTFT and the oracle
    fell back to maxReplicas)."""
    spec = _fixed_workload(_spec(), 500, 8000)
    cfg = _engine(spec)
    rec = Recorder()
    engine = Replica(cfg, rec, 0.0)
    engine.add(SimRequest(0.0, 500, 8000), 0.0)

    def step_s(context_tokens: float) -> float:
        return cfg.perf.mixed_step_seconds(1, context_tokens, 0.0, 1) / cfg.mismatch

    arrival = 0.8 * 8000 * step_s(500.0)  # well inside the long answer
    engine.run_until(arrival)
    step = step_s(500.0 + 8000)
    assert engine.clock <= arrival + step + 1e-9
    engine.add(SimRequest(arrival, 500, 10), arrival)
    engine.run_until(math.inf)
    second = next(o for o in rec.outcomes if o.arrival_s == arrival)
    assert second.ttft_s < 10 * step
