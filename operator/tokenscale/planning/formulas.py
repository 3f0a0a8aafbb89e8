"""The sizing model's formulas, one function each (restated, with worked examples, in
docs/formulas.md).

Everything else in the planner is built from these; each is reproduced by a worked-example test.
"""

import math

GB = 1e9
GIB = float(1 << 30)


def token_rates(
    rps: float, mean_input_tokens: float, mean_output_tokens: float
) -> tuple[float, float]:
    """``input_TPS = RPS × mean_input_tokens``, ``output_TPS = RPS × mean_output_tokens``."""
    return rps * mean_input_tokens, rps * mean_output_tokens


def attention_growth(token_growth: float) -> float:
    """Attention's N² term grows by ``(1 + growth)²``: +20 % tokens → ×1.44."""
    return (1.0 + token_growth) ** 2


def weight_bytes(params: float, bytes_per_param: float) -> float:
    """``weight_bytes = params × bytes_per_param``."""
    return params * bytes_per_param


def kv_bytes_per_token(
    layers: int, kv_heads: int, head_dim: int, bytes_per_element: float
) -> float:
    """``KV_bytes_per_token = 2 × layers × Hkv × d_head × bytes`` (K and V, every layer)."""
    return 2.0 * layers * kv_heads * head_dim * bytes_per_element


def mla_kv_bytes_per_token(
    layers: int, kv_lora_rank: int, qk_rope_head_dim: int, bytes_per_element: float
) -> float:
    """MLA caches one latent per token per layer: ``layers × (r_kv + d_rope) × bytes``."""
    return float(layers * (kv_lora_rank + qk_rope_head_dim)) * bytes_per_element


def prefill_linear_flops(params: float, tokens: float) -> float:
    """``FLOPs_linear ≈ 2 × params × N`` (one multiply-add per parameter per token)."""
    return 2.0 * params * tokens


def attention_flops_full(layers: int, tokens: float, d_model: int, *, causal: bool) -> float:
    """``4 × layers × N² × d_model``; a causal kernel that skips masked tiles does half."""
    full = 4.0 * layers * tokens * tokens * d_model
    return full / 2.0 if causal else full


def decode_tokens_per_s_bound(hbm_bandwidth_bytes_per_s: float, weight_bytes_read: float) -> float:
    """``tokens/s per sequence ≤ HBM_bandwidth / weight_bytes`` (weight-read bound)."""
    return hbm_bandwidth_bytes_per_s / weight_bytes_read


def chunk_count(prompt_tokens: float, chunk_tokens: int) -> int:
    """Chunked prefill splits a prompt into ``ceil(N / chunk)`` steps."""
    return max(1, math.ceil(prompt_tokens / chunk_tokens))


def littles_law_concurrency(rps: float, mean_request_seconds: float) -> float:
    """``concurrency ≈ RPS × mean_request_time`` (Little's law)."""
    return rps * mean_request_seconds


def cost_per_million_tokens(hourly_cost: float, tokens_per_s: float) -> float:
    """``cost_per_1M = hourly_cost / (tokens_per_s × 3600) × 1e6``."""
    return hourly_cost / (tokens_per_s * 3600.0) * 1e6


def ring_allreduce_seconds(
    payload_bytes: float, ranks: int, link_bytes_per_s: float, latency_s: float
) -> float:
    """Ring all-reduce: each rank moves ``2 (n−1)/n × payload`` over its link, plus a latency."""
    if ranks <= 1:
        return 0.0
    return latency_s + 2.0 * (ranks - 1) / ranks * payload_bytes / link_bytes_per_s


def ceil_replicas(value: float) -> int:
    """Round a replica need up, tolerating float noise (3.0000000001 → 3)."""
    return max(0, math.ceil(value - 1e-9))


def batch_text(batch: float) -> str:
    """A batch as a reader needs it: ``156``, ``9.7``, ``8``, ``0.42`` (a fractional batch is a
    replica that is mostly idle, never ``0``)."""
    if batch >= 10:
        return f"{batch:,.0f}"
    if batch >= 1:
        return f"{batch:.1f}".removesuffix(".0")
    return f"{batch:.2g}"


def counted(n: int, noun: str) -> str:
    """``1 GPU``, ``18 GPUs``, ``1 replica``, ``1,024 replicas``."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"
