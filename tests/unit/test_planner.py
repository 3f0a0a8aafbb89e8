"""Planner behaviour: memory, KV, TP choice, infeasibility, sizing, cost, JSON contract."""

import math

import pytest

from tests.helpers import spec
from tokenscale.api.assumptions import Assumptions
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.catalog import GPU_CATALOG, MODEL_CATALOG, count_params
from tokenscale.planning import plan_service
from tokenscale.planning.decode_gpu import decode_bandwidth_factor
from tokenscale.planning.formulas import GIB

LLAMA70 = {"name": "meta-llama/Llama-3.1-70B-Instruct", "catalog": "llama-3.1-70b"}
FIXED_OVERHEADS = {
    "activationPeakGiB": 2.0,
    "cudaGraphGiB": 0.5,
    "runtimeOverheadGiB": 1.0,
    "ncclBufferGiB": 0.5,
}


def test_kv_capacity_follows_vllms_arithmetic() -> None:
    s = spec(hardware={"gpuMemoryUtilization": 0.9}, assumptions=FIXED_OVERHEADS)
    p = plan_service(s)
    params = count_params(MODEL_CATALOG["llama-3.1-8b"].architecture).total
    usable = math.ceil(GPU_CATALOG["H100-SXM-80GB"].spec.memory_gib * GIB * 0.9)
    pool = usable - params * 2 - (2.0 + 0.5 + 1.0) * GIB
    per_token = 2 * 32 * 8 * 128 * 2
    blocks = int(pool // (16 * per_token))
    assert p.memory_per_gpu.kv_pool_bytes == pytest.approx(pool)
    assert p.kv_capacity_blocks_per_replica == blocks
    assert p.kv_capacity_tokens_per_replica == blocks * 16


def test_tp_splits_weights_and_adds_nccl() -> None:
    s1 = spec(model=LLAMA70, hardware={"tensorParallelSize": 4}, assumptions=FIXED_OVERHEADS)
    p = plan_service(s1)
    assert p.memory_per_gpu.weights_bytes == pytest.approx(p.weight_bytes / 4)
    assert p.memory_per_gpu.nccl_bytes == 0.5 * GIB
    # each rank stores 2 of the 8 KV heads
    assert p.kv_bytes_per_token_per_gpu == p.kv_bytes_per_token / 4


def test_fp8_kv_doubles_the_tokens_a_pool_holds() -> None:
    auto = plan_service(spec(assumptions=FIXED_OVERHEADS))
    fp8 = plan_service(spec(model={"kvCacheDtype": "fp8"}, assumptions=FIXED_OVERHEADS))
    assert fp8.kv_bytes_per_token == auto.kv_bytes_per_token / 2
    assert fp8.kv_capacity_tokens_per_replica == pytest.approx(
        2 * auto.kv_capacity_tokens_per_replica, rel=1e-3
    )


def test_tp_auto_picks_the_fleet_with_fewest_gpus() -> None:
    p = plan_service(
        spec(model=LLAMA70, hardware={"tensorParallelSize": "auto"}, workload={"rps": {"mean": 20}})
    )
    by_tp = {c.tensor_parallel_size: c for c in p.tp_candidates}
    assert set(by_tp) == {1, 2, 4, 8}
    assert not by_tp[1].feasible
    assert "does not fit at TP=1" in by_tp[1].reason
    feasible = [c for c in p.tp_candidates if c.feasible]
    assert p.feasible
    assert p.gpus_total == min(c.gpus for c in feasible)
    best = [c for c in feasible if c.gpus == p.gpus_total]
    # ties go to the lower GPU-hours per 1M output tokens (then the smaller TP)
    assert p.tensor_parallel_size in {c.tensor_parallel_size for c in best}


def test_tp_auto_skips_sizes_vllm_would_reject() -> None:
    p = plan_service(
        spec(
            model={"name": "Qwen/Qwen2.5-7B-Instruct", "catalog": "qwen2.5-7b"},
            hardware={"tensorParallelSize": "auto"},
        )
    )
    assert {c.tensor_parallel_size for c in p.tp_candidates} == {1, 2, 4}


def test_model_that_fits_nowhere_is_an_answer() -> None:
    p = plan_service(
        spec(
            model={"name": "meta-llama/Llama-3.1-405B", "catalog": "llama-3.1-405b"},
            hardware={"gpu": "L4-24GB", "tensorParallelSize": "auto"},
        )
    )
    assert not p.feasible
    assert p.infeasible_reasons[0].startswith("does not fit at any TP (1, 2, 4, 8)")
    assert "GiB of weights" in p.infeasible_reasons[0]
    assert p.replicas is None
    assert p.gpus_total is None
    assert math.isfinite(p.ttft_p99_estimate_s)


def test_ttft_slo_unreachable_even_at_batch_one() -> None:
    p = plan_service(spec(slo={"ttftP99Seconds": 0.001}))
    assert not p.feasible
    reason = next(r for r in p.infeasible_reasons if "unreachable" in r)
    assert reason.startswith("SLO unreachable even at batch 1: ttft_p99 estimate")


def test_context_beyond_the_models_max() -> None:
    p = plan_service(spec(workload={"maxContextTokens": 200_000}))
    assert any(
        "context exceeds the model's max" in r and "131,072" in r for r in p.infeasible_reasons
    )


def test_p99_request_longer_than_the_context() -> None:
    p = plan_service(
        spec(
            workload={
                "inputTokens": {"mean": 4000, "p99": 15000},
                "outputTokens": {"mean": 500, "p99": 2000},
            }
        )
    )
    assert any("exceeds the max context 16,384" in r for r in p.infeasible_reasons)


def test_max_model_len_is_fitted_to_the_pool_when_not_given() -> None:
    p = plan_service(spec(hardware={"gpu": "L4-24GB"}, workload={"maxContextTokens": None}))
    assert p.max_model_len < 131_072
    assert p.max_model_len <= p.kv_capacity_tokens_per_replica
    assert any("max model len lowered" in w for w in p.warnings)


def test_long_contexts_make_kv_the_binding_constraint() -> None:
    # KV binds when a replica's KV pool is small next to its weights (8B BF16 on a 24 GB L4)
    p = plan_service(
        spec(
            hardware={"gpu": "L4-24GB"},
            workload={
                "rps": {"mean": 2},
                "inputTokens": {"mean": 4000, "p99": 6000},
                "outputTokens": {"mean": 500, "p99": 1500},
                "maxContextTokens": 8192,
            },
            slo={"ttftP99Seconds": 30, "tpotP99Seconds": 1.0},
        )
    )
    assert p.feasible
    assert p.binding_constraint == "kv"
    assert p.replicas.kv > max(p.replicas.throughput, p.replicas.concurrency)


def test_tight_tpot_makes_concurrency_bind() -> None:
    p = plan_service(
        spec(
            hardware={"gpu": "L4-24GB"},
            workload={"maxContextTokens": 8192, "inputTokens": {"mean": 500, "p99": 2000}},
            slo={"tpotP99Seconds": 0.075, "ttftP99Seconds": 3},
        )
    )
    assert p.assumptions["operating_point_limited_by"] == "SLO"
    assert p.binding_constraint == "concurrency"


def test_redundancy_spares_and_bounds() -> None:
    base = plan_service(spec(workload={"rps": {"mean": 40}}))
    red = plan_service(
        spec(
            workload={"rps": {"mean": 40}},
            scaling={"redundancy": {"factor": 1.5, "spareReplicas": 2}},
        )
    )
    assert red.replicas.with_redundancy == math.ceil(base.replicas.needed * 1.5 - 1e-9) + 2
    capped = plan_service(spec(workload={"rps": {"mean": 40}}, scaling={"maxReplicas": 1}))
    assert capped.replicas is not None
    assert capped.replicas.total == 1
    # a bound that leaves the need unmet is not feasible, and says by how much
    assert not capped.feasible
    assert capped.replicas.with_redundancy > 1
    assert any("maxReplicas=1 is below" in r and "short" in r for r in capped.infeasible_reasons)
    pinned = plan_service(spec(scaling={"replicas": 7}))
    assert pinned.replicas.total == 7


def test_zero_traffic_keeps_the_minimum() -> None:
    p = plan_service(spec(workload={"rps": {"mean": 0}}, scaling={"minReplicas": 2}))
    assert p.replicas.needed == 0
    assert p.replicas.total == 2
    assert p.binding_constraint == "none"


def test_burst_factor_sizes_for_the_peak() -> None:
    mean = plan_service(spec(workload={"rps": {"mean": 30}}))
    burst = plan_service(spec(workload={"rps": {"mean": 30, "burstFactor": 2}}))
    assert burst.design_rps == 60
    assert burst.replicas.throughput == pytest.approx(2 * mean.replicas.throughput)


def test_cost_per_million_tokens_formula() -> None:
    p = plan_service(
        spec(model=LLAMA70, hardware={"tensorParallelSize": 4}, cost={"gpuHourPrice": 2.5})
    )
    hourly = 2.5 * 4
    assert p.cost_per_million_output_tokens == pytest.approx(
        hourly / (p.output_tps_per_replica * 3600) * 1e6
    )
    assert p.cost_per_hour == pytest.approx(hourly * p.replicas.total)
    assert p.cost_per_million_tokens is not None
    assert p.cost_per_million_output_tokens is not None
    assert p.cost_per_million_tokens < p.cost_per_million_output_tokens


def test_no_price_means_no_cost_and_a_warning() -> None:
    p = plan_service(spec(cost={"gpuHourPrice": None}))
    assert p.cost_per_million_output_tokens is None
    assert p.gpu_hours_per_million_output_tokens is not None
    assert any("gpuHourPrice" in w for w in p.warnings)


def test_prefix_cache_hits_lower_ttft() -> None:
    cold = plan_service(spec())
    warm = plan_service(spec(workload={"prefixCacheHitRate": 0.6}))
    assert warm.ttft_p99_estimate_s < cold.ttft_p99_estimate_s
    # the uncached 40 % is prefilled, its attention still reading the cached 60 %: more than
    # a prompt of only the uncached tokens, less than the whole prompt cold
    short = plan_service(spec(workload={"inputTokens": {"mean": 1000, "p99": 1600}}))
    assert short.prefill_p99_s < warm.prefill_p99_s < cold.prefill_p99_s


def test_decode_is_bandwidth_bound_at_batch_one() -> None:
    s = spec(
        workload={
            "rps": {"mean": 0.01},
            "inputTokens": {"mean": 1, "p99": 1},
            "outputTokens": {"mean": 1000, "p99": 1000},
        },
        slo={"tpotP99Seconds": None, "ttftP99Seconds": None},
        serving={"maxNumSeqs": 1},
    )
    p = plan_service(s)
    # the knowledge map's bound: tokens/s per sequence ≤ BW / weight bytes read
    params = count_params(MODEL_CATALOG["llama-3.1-8b"].architecture)
    read = (params.active - params.embedding) * 2
    bound_s = read / (3350e9 * 0.80 * decode_bandwidth_factor("H100-SXM-80GB"))
    assert p.operating_batch == 1
    overhead = Assumptions().step_overhead_seconds
    assert p.decode_step_s == pytest.approx(bound_s + overhead, rel=0.01)


def test_assumption_overrides_are_used_and_reported() -> None:
    slow = plan_service(spec(assumptions={"decodeBandwidthEfficiency": 0.4}))
    fast = plan_service(spec())
    assert slow.decode_step_s > fast.decode_step_s
    assert slow.assumptions["decode_bandwidth_efficiency"] == 0.4


def test_moe_reads_more_experts_as_the_batch_grows() -> None:
    p1 = plan_service(
        spec(
            model={"name": "mixtral", "catalog": "mixtral-8x7b"},
            hardware={"tensorParallelSize": 2},
            scaling={"replicas": 1},
            serving={"maxNumSeqs": 1},
        )
    )
    arch = MODEL_CATALOG["mixtral-8x7b"].architecture
    count = count_params(arch)
    assert p1.active_params == count.active
    # at batch 1 a step reads the active weights (less the input embedding) only
    expected = (count.active - count.embedding) * 2 / 2 / (3350e9 * 0.8)
    assert p1.decode_step_s > expected  # plus all-reduce and overhead
    assert p1.decode_step_s < expected * 1.5


def test_disabling_chunked_prefill_raises_the_token_budget() -> None:
    p = plan_service(spec(serving={"enableChunkedPrefill": False}))
    assert p.max_num_batched_tokens >= p.max_model_len


def test_vllm_defaults_depend_on_the_gpu() -> None:
    assert plan_service(spec()).max_num_seqs == 1024
    assert plan_service(spec(hardware={"gpu": "A100-SXM-80GB"})).max_num_seqs == 256
    assert plan_service(spec(hardware={"gpu": "L4-24GB"})).max_num_batched_tokens == 2048
    assert plan_service(spec(serving={"maxNumSeqs": 64})).max_num_seqs == 64


def test_inline_gpu_spec() -> None:
    p = plan_service(
        spec(
            hardware={
                "gpu": None,
                "gpuSpec": {
                    "name": "RTX 4090",
                    "memoryGiB": 23.99,
                    "hbmBandwidthGBps": 1008,
                    "bf16Tflops": 165,
                },
            },
            workload={"maxContextTokens": 8192},
        )
    )
    assert p.gpu == "RTX 4090"
    assert p.feasible


JSON_NUMBERS = [
    "weight_bytes",
    "kv_bytes_per_token",
    "params",
    "active_params",
    "tensor_parallel_size",
    "kv_capacity_tokens_per_replica",
    "max_concurrency_per_replica",
    "input_tps",
    "output_tps",
    "ttft_p99_estimate_s",
    "tpot_estimate_s",
    "tpot_p99_estimate_s",
    "output_tps_per_replica",
    "cost_per_million_output_tokens",
]


def test_json_contract() -> None:
    data = plan_service(spec()).model_dump(mode="json")
    for key in JSON_NUMBERS:
        assert isinstance(data[key], int | float), key
        assert not isinstance(data[key], bool), key
    assert set(data["replicas"]) >= {"throughput", "concurrency", "kv", "total"}
    assert isinstance(data["replicas"]["total"], int)
    assert data["binding_constraint"] in ("throughput", "concurrency", "kv")
    assert isinstance(data["feasible"], bool)
    assert isinstance(data["warnings"], list)


def test_tpot_p99_estimate_is_the_load_p99_beside_the_mean() -> None:
    p = plan_service(spec())
    assert p.at_load is not None
    assert p.tpot_p99_estimate_s == p.at_load.tpot_p99_s
    assert p.tpot_estimate_s == p.at_load.tpot_mean_s
    assert p.tpot_p99_estimate_s > p.tpot_estimate_s
    # the SLO check on TPOT P99 judges the same figure
    check = next(c for c in p.slo_checks if c.name.startswith("tpot"))
    assert check.estimate_s == pytest.approx(p.tpot_p99_estimate_s)


def test_plan_is_frozen() -> None:
    p = plan_service(spec())
    with pytest.raises(ValueError, match="frozen"):
        p.feasible = False  # type: ignore[misc]
    assert isinstance(spec(), InferenceServiceSpec)
