"""Every worked example in docs/formulas.md, reproduced exactly."""

import math

import pytest

from tests.helpers import spec
from tokenscale.api.model import BYTES_PER_ELEMENT
from tokenscale.catalog import MODEL_CATALOG
from tokenscale.planning import forecast_conditions, formulas, perf_at, plan_service, resolve
from tokenscale.planning.memory import kv_geometry


def test_input_and_output_tps() -> None:
    assert formulas.token_rates(100, 1200, 300) == (120_000, 30_000)


def test_input_and_output_tps_through_the_planner() -> None:
    s = spec(
        workload={
            "rps": {"mean": 100},
            "inputTokens": {"mean": 1200, "p99": 1200},
            "outputTokens": {"mean": 300, "p99": 300},
        }
    )
    p = plan_service(s)
    assert (p.input_tps, p.output_tps) == (120_000, 30_000)


def test_attention_growth() -> None:
    assert formulas.attention_growth(0.20) == pytest.approx(1.44)


@pytest.mark.parametrize(("dtype", "gb"), [("fp32", 280), ("bf16", 140), ("fp8", 70), ("int4", 35)])
def test_weights_70b(dtype: str, gb: float) -> None:
    assert formulas.weight_bytes(70e9, BYTES_PER_ELEMENT[dtype]) == gb * 1e9


def test_prefill_flops_70b_4000_tokens() -> None:
    assert formulas.prefill_linear_flops(70e9, 4_000) == 560e12


def test_decode_bound() -> None:
    bound = formulas.decode_tokens_per_s_bound(3_000e9, 70e9)
    assert math.floor(bound * 10) / 10 == 42.8


def test_chunks() -> None:
    assert formulas.chunk_count(100_000, 4_000) == 25


def test_kv_per_token_llama_70b_formula() -> None:
    assert formulas.kv_bytes_per_token(80, 8, 128, 2) == 327_680


def test_kv_per_token_llama_70b_from_catalog_and_plan() -> None:
    arch = MODEL_CATALOG["llama-3.1-70b"].architecture
    assert kv_geometry(arch, 2.0, tp=1).bytes_per_token == 327_680
    p = plan_service(
        spec(
            model={"name": "meta-llama/Llama-3.1-70B", "catalog": "llama-3.1-70b"},
            hardware={"tensorParallelSize": 4},
        )
    )
    assert p.kv_bytes_per_token == 327_680


def test_performance_model_attention_is_the_maps_formula() -> None:
    """PerfModel's prefill FLOPs = 2·P·N (+ LM head once) + the map's causal attention term."""
    p = plan_service(spec())  # Llama-3.1-8B: no sliding window
    r = resolve(spec())
    perf = perf_at(r, forecast_conditions(r), 1, p.max_num_batched_tokens)
    arch = MODEL_CATALOG["llama-3.1-8b"].architecture
    n = 4096.0
    params = perf.params
    linear = formulas.prefill_linear_flops(params.active - params.embedding - params.lm_head, n)
    attention = formulas.attention_flops_full(arch.layers, n, arch.hidden_size, causal=True)
    assert perf.prefill_flops(n) == pytest.approx(linear + 2 * params.lm_head + attention)
    assert formulas.attention_flops_full(80, 1.2 * n, 8192, causal=True) == pytest.approx(
        formulas.attention_growth(0.2) * formulas.attention_flops_full(80, n, 8192, causal=True)
    )
