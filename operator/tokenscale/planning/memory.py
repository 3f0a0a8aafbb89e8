"""Weight and KV-cache memory, and the per-GPU budget that leaves the KV pool.

Per-GPU budget (vLLM 0.33, ``vllm/v1/worker/gpu_worker.py``): vLLM may use
``gpu_memory_utilization × total``; from that it subtracts the weights (÷ TP), the activation
peak of a ``max_num_batched_tokens`` dummy step, CUDA-graph pools and non-torch memory
(CUDA context, NCCL buffers when TP > 1). The rest is cut into KV blocks of
``block_size × bytes_per_token_per_rank``.
"""

import math
from dataclasses import dataclass

from tokenscale.api.assumptions import Assumptions
from tokenscale.api.hardware import GpuSpec
from tokenscale.api.model import Architecture
from tokenscale.planning.formulas import GIB, kv_bytes_per_token, mla_kv_bytes_per_token


@dataclass(frozen=True)
class KvGeometry:
    """How many KV bytes a token costs, whole model and per tensor-parallel rank."""

    bytes_per_token: float
    """All layers, whole model (the knowledge-map figure)."""
    bytes_per_token_per_rank: float
    """What one GPU stores per token: KV heads split over ranks, replicated when fewer than TP;
    MLA's latent is replicated on every rank."""
    full_layers: int
    window_layers: int
    window_tokens: int | None

    def tokens_held(self, context_tokens: float) -> float:
        """Token-equivalents a request of this context occupies (windowed layers cap at W)."""
        layers = self.full_layers + self.window_layers
        if self.window_tokens is None or self.window_layers == 0:
            return context_tokens
        windowed = min(context_tokens, float(self.window_tokens))
        return (self.full_layers * context_tokens + self.window_layers * windowed) / layers

    def bytes_for_context(self, context_tokens: float) -> float:
        """Whole-model KV bytes one request of this context holds (windows applied)."""
        return self.bytes_per_token * self.tokens_held(context_tokens)


def kv_geometry(arch: Architecture, kv_bytes_per_element: float, tp: int) -> KvGeometry:
    """KV bytes per token: ``2·L·Hkv·d·b`` (MHA/GQA/MQA) or ``L·(r_kv + d_rope)·b`` (MLA)."""
    if arch.kv_lora_rank is not None and arch.qk_rope_head_dim is not None:
        whole = mla_kv_bytes_per_token(
            arch.layers, arch.kv_lora_rank, arch.qk_rope_head_dim, kv_bytes_per_element
        )
        per_rank = whole
    else:
        hkv, d = arch.effective_kv_heads, arch.effective_head_dim
        whole = kv_bytes_per_token(arch.layers, hkv, d, kv_bytes_per_element)
        heads_per_rank = max(1, hkv // tp)
        per_rank = kv_bytes_per_token(arch.layers, heads_per_rank, d, kv_bytes_per_element)
    windowed = 0
    if arch.sliding_window is not None:
        windowed = arch.layers if arch.sliding_window_layers is None else arch.sliding_window_layers
    return KvGeometry(
        bytes_per_token=whole,
        bytes_per_token_per_rank=per_rank,
        full_layers=arch.layers - windowed,
        window_layers=windowed,
        window_tokens=arch.sliding_window,
    )


@dataclass(frozen=True)
class MemoryBudget:
    """Bytes per GPU; ``kv_pool_bytes`` may be negative when the model does not fit."""

    total_bytes: float
    usable_bytes: float
    weights_bytes: float
    activation_bytes: float
    cuda_graph_bytes: float
    nccl_bytes: float
    runtime_bytes: float
    lora_bytes: float = 0.0
    """LoRA slots (planning/lora.py)."""

    @property
    def kv_pool_bytes(self) -> float:
        return self.usable_bytes - (
            self.lora_bytes
            + self.weights_bytes
            + self.activation_bytes
            + self.cuda_graph_bytes
            + self.nccl_bytes
            + self.runtime_bytes
        )


#: Bytes per (sequence × vocabulary entry) that vLLM's sampler warm-up holds at its peak: the
#: dummy sampling step over ``max_num_seqs`` rows keeps several ``[S, V]`` tensors alive at once
#: (the 16-bit logits, their FP32 copy, scaled logits, probabilities, the top-k/top-p sort's
#: values and int64 indices). Fitted on the fit set only: the H100 start-up logs of
#: benchmarks/accuracy (llm-d, January 2026 image, S = 1024) give the activation peak of four
#: models, and each is ``S × V × b + T × d × 2 B`` with b = 38.3 (Qwen3-0.6B 5.56 GiB), 38.4
#: (Qwen3-32B 5.64, Llama-3.1-8B 4.76) and 38.5 B (Llama-3.3-70B TP 2, 4.84 GiB).
SAMPLER_BYTES_PER_LOGIT = 38.4


def activation_peak_bytes(
    arch: Architecture, tp: int, max_num_batched_tokens: int, max_num_seqs: int
) -> float:
    """Estimated activation peak of vLLM's profiling run, per GPU.

    vLLM profiles the forward pass of a ``T = max_num_batched_tokens`` dummy step, then a dummy
    sampling step over ``S = max_num_seqs`` rows while the forward's output ``[T, d]`` is still
    held (``profile_run`` keeps ``hidden_states`` until both have run); the peak is the larger of
    the forward and the sampler with that output, not their sum. Forward: ``T × (3·I/TP + 4·d) ×
    2 B`` for the widest layer's live tensors (gate/up output, activation, residual and normed
    hidden states). Sampler: ``min(S, T) × V × SAMPLER_BYTES_PER_LOGIT + T × d × 2 B`` (the
    hidden states are whole on every tensor-parallel rank; the logits are gathered whole).
    """
    width = float(arch.intermediate_size or 0)
    if arch.experts is not None and arch.experts_per_token is not None:
        expert_width = arch.expert_intermediate_size or arch.intermediate_size or 0
        width = max(width, float(expert_width * arch.experts_per_token))
    hidden = max_num_batched_tokens * (3.0 * width / tp + 4.0 * arch.hidden_size) * 2.0
    held_output = max_num_batched_tokens * float(arch.hidden_size) * 2.0
    sampler = (
        min(max_num_seqs, max_num_batched_tokens)
        * float(arch.vocab_size or 0)
        * SAMPLER_BYTES_PER_LOGIT
        + held_output
    )
    return max(hidden, sampler)


def memory_budget(
    gpu: GpuSpec,
    gpu_memory_utilization: float,
    weight_bytes_total: float,
    tp: int,
    activation_bytes: float,
    assumptions: Assumptions,
) -> MemoryBudget:
    total = gpu.memory_gib * GIB
    return MemoryBudget(
        total_bytes=total,
        usable_bytes=math.ceil(total * gpu_memory_utilization),
        weights_bytes=weight_bytes_total / tp,
        activation_bytes=activation_bytes,
        cuda_graph_bytes=assumptions.cuda_graph_gib * GIB,
        nccl_bytes=assumptions.nccl_buffer_gib * GIB if tp > 1 else 0.0,
        runtime_bytes=assumptions.runtime_overhead_gib * GIB,
    )


def kv_capacity_blocks(pool_bytes: float, geometry: KvGeometry, block_size: int) -> int:
    """``num_blocks = pool // (block_size × bytes_per_token_per_rank)`` (vLLM's floor)."""
    if pool_bytes <= 0:
        return 0
    return int(pool_bytes // (block_size * geometry.bytes_per_token_per_rank))
