"""Prefill and decode timing for one replica (TP GPUs): a roofline with explicit efficiencies.

Prefill of N prompt tokens (compute-bound, docs/formulas.md "Compute and bandwidth"):
``t = max(FLOPs / (TP·peak·η_prefill), weights/TP / (BW·η_bw)) + 2·L all-reduces + overhead``
with ``FLOPs = 2·P_linear·N + attention`` (causal ``2·L·N²·d_attn``; windowed layers attend to at
most W tokens) and the LM head applied to the last token only.

Decode step at batch B (bandwidth-bound until the ridge):
``t = max(bytes / (BW·η_bw), FLOPs / (peak·η_decode)) + 2·L all-reduces(B·d) + overhead``,
``bytes = weights read (MoE: experts touched by B tokens, E·(1−(1−k/E)^B)) / TP
+ B × KV of the mean in-flight context per rank``.

Prefill interference: with continuous batching and chunked prefill, prompts share the GPU
with decode. A request's own prefill is its TTFT; while it decodes ``out`` tokens the other
``B − 1`` running requests are each replaced once, so the TPOT it sees (first token excluded,
as vLLM measures it) is ``TPOT(B) = t_step(B) + (B − 1)·t_prefill/out``, ``t_prefill`` a
prefill's mean over the prompts (:attr:`PerfModel.mean_prefill_seconds`: the mean prompt's,
plus what attention's square term adds over their spread). The GPU does all B prefills, so a
replica completes ``λ = B / (out·t_step(B) + B·t_prefill)`` requests per second and emits
``λ·out`` output tokens per second. That is a fixed batch (the planner's operating point);
traffic observed live is open, where the prompts arriving during one decode average the
decode batch itself (Little's law), ``t_step(B) + B·t_prefill/out``
(:meth:`PerfModel.tpot_open_seconds`, what the engine's calibration compares against).
"""

import math
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from tokenscale.api.assumptions import Assumptions
from tokenscale.api.hardware import GpuSpec
from tokenscale.api.model import Architecture, WeightDtype
from tokenscale.catalog.params import ParamCount
from tokenscale.planning.formulas import GB, chunk_count, ring_allreduce_seconds
from tokenscale.planning.memory import KvGeometry
from tokenscale.planning.queueing import (
    BusyTimes,
    compound_quantile,
    lognormal_moment_points,
    lognormal_points,
    mg1_wait_quantile_seconds,
    mg1_wait_seconds,
    sum_quantile,
    tail_point,
)

#: Weight-only quantized GEMMs (INT4 AWQ/GPTQ, FP8/INT8 weights on GPUs without those cores)
#: dequantize tiles to 16 bits inside the kernel; at prefill sizes that costs tensor-core time,
#: so they reach this fraction of the BF16 peak a plain BF16 GEMM would (fitted on the
#: 16,000-token TTFT of Qwen3-14B-AWQ on A100, benchmarks/accuracy).
WEIGHT_ONLY_GEMM_EFFICIENCY = 0.6

#: Weight-only INT4 GEMMs (Marlin, AWQ, GPTQ) at decode batch sizes read their packed weights at
#: this fraction of the bandwidth a BF16 GEMM reaches: the dequantization and the scale loads
#: sit on the critical path of a memory-bound kernel. Fitted on the fit third of vLLM's INT4
#: Marlin decode latencies of Llama-3.1-8B on H100 (batch 1, 4, 8; benchmarks/accuracy, vLLM
#: PR 23197); held out: batch 16 and the Qwen3-14B-AWQ TPOT on A100.
WEIGHT_ONLY_DECODE_BANDWIDTH_EFFICIENCY = 0.45

#: Bytes per parameter of the embedding and LM-head matrices: quantized checkpoints
#: (AWQ, GPTQ, FP8) keep them in 16 bits.
EMBEDDING_BYTES_PER_PARAM = 2.0


def peak_flops(gpu: GpuSpec, dtype: WeightDtype) -> tuple[float, str]:
    """Tensor peak (FLOP/s) the GEMMs run at for this weight dtype, and why.

    FP8 uses FP8 cores where present (W8A8), INT8 uses INT8 cores (W8A8); INT4 and the
    Marlin FP8 fallback on GPUs without FP8 cores dequantize to BF16 inside the GEMM, which costs
    tensor-core time (``WEIGHT_ONLY_GEMM_EFFICIENCY``); FP32 runs at TF32 ≈ BF16/2.
    """
    if dtype == "fp8" and gpu.fp8_tflops:
        return gpu.fp8_tflops * 1e12, "FP8 tensor cores"
    if dtype == "int8" and gpu.int8_tops:
        return gpu.int8_tops * 1e12, "INT8 tensor cores"
    if dtype == "fp32":
        return gpu.bf16_tflops * 0.5e12, "TF32 (half the BF16 peak)"
    note = "BF16 tensor cores"
    if dtype in ("fp8", "int8", "int4"):
        note += (
            f" ({dtype} weights dequantized by weight-only kernels: "
            f"{WEIGHT_ONLY_GEMM_EFFICIENCY:.0%} of the BF16 peak)"
        )
        return gpu.bf16_tflops * 1e12 * WEIGHT_ONLY_GEMM_EFFICIENCY, note
    return gpu.bf16_tflops * 1e12, note


class PrefillMoments(NamedTuple):
    """A prefill over the prompts: the tokens to prefill (mean, variance), its compute time at
    the prefill efficiency (mean s, variance) and the two's covariance."""

    tokens: float
    tokens_var: float
    compute_s: float
    compute_var: float
    covariance: float


@dataclass(frozen=True)
class PerfModel:
    """Timing model for one replica. Pure arithmetic; all inputs explicit."""

    arch: Architecture
    params: ParamCount
    geometry: KvGeometry
    weight_bytes_per_param: float
    tp: int
    hbm_bytes_per_s: float
    link_bytes_per_s: float
    flops_per_s: float
    assumptions: Assumptions
    max_num_batched_tokens: int
    chunked_prefill: bool
    mean_input_tokens: float
    mean_output_tokens: float
    prefix_cache_hit_rate: float
    tail_input_tokens: float = 0.0
    """The P99 prompt (0: the mean), for the chunk a tail request shares its steps with."""
    weight_read_efficiency: float = 1.0
    """Fraction of the decode bandwidth at which the weights are read (weight-only INT4 kernels:
    ``WEIGHT_ONLY_DECODE_BANDWIDTH_EFFICIENCY``); KV reads are not affected."""
    decode_bandwidth_factor: float = 1.0
    """The GPU's own factor on the decode bandwidth (:mod:`tokenscale.planning.decode_gpu`)."""
    tail_output_tokens: float = 0.0
    """The P99 answer (0: the mean), for the answer lengths of the TPOT tail."""
    prompt_length_scv: float | None = None
    """Squared coefficient of variation of the (lognormal) prompt lengths
    (:func:`~tokenscale.planning.queueing.prompt_scv`): the spread of a prompt's prefill work,
    for the prefill queue (M/G/1) and the TPOT tail; 0 for identical prompts, None when no P99
    says (then :attr:`prompt_scv` is 1, exponential: M/M/1's convention)."""

    @property
    def prompt_scv(self) -> float:
        """The prompts' ``C²`` (:attr:`prompt_length_scv`, 1 when unknown)."""
        return 1.0 if self.prompt_length_scv is None else self.prompt_length_scv

    @cached_property
    def prefill_flops_per_s(self) -> float:
        """The replica's prefill FLOP rate: TP × the peak × ``prefillComputeEfficiency``."""
        return self.tp * self.flops_per_s * self.assumptions.prefill_compute_efficiency

    # -- the spread of prompts: a prefill's cost is not linear in its length -------------------
    @cached_property
    def prompt_grid(self) -> tuple[tuple[float, float], ...]:
        """(prompt tokens, weight) points standing for the prompts: the lognormal with the mean
        and ``C²`` the planner holds (:attr:`prompt_length_scv`, whose ``C²`` is already cut at
        the longest prompt; :func:`~tokenscale.planning.queueing.lognormal_moment_points`). One
        point at the mean when the spread is unknown or nil."""
        scv = self.prompt_length_scv
        return lognormal_moment_points(self.mean_input_tokens, 0.0 if scv is None else scv)

    @cached_property
    def _prefill_moments(self) -> PrefillMoments:
        """What a prefill's service time at any batch is made of, over the prompts
        (:meth:`prefill_service_seconds`, :meth:`prefill_service_scv`)."""
        hit = self.prefix_cache_hit_rate
        rate = self.prefill_flops_per_s
        pts = [
            (n * (1.0 - hit), self.prefill_flops(n * (1.0 - hit), n * hit) / rate, w)
            for n, w in self.prompt_grid
        ]
        n_bar = sum(n * w for n, _, w in pts)
        c_bar = sum(c * w for _, c, w in pts)
        return PrefillMoments(
            tokens=n_bar,
            tokens_var=sum(w * (n - n_bar) ** 2 for n, _, w in pts),
            compute_s=c_bar,
            compute_var=sum(w * (c - c_bar) ** 2 for _, c, w in pts),
            covariance=sum(w * (n - n_bar) * (c - c_bar) for n, c, w in pts),
        )

    @cached_property
    def prefill_spread_seconds(self) -> float:
        """What the prompts' spread adds to the mean prompt's prefill: the mean compute over
        the prompts less the mean prompt's. Attention grows with the square of the prompt, so
        the mean prefill is longer than the mean prompt's (Jensen): 15k-token prompts with a
        60k P99 on Llama-3.1-8B, +11 %; chat prompts, about +1 %. The rest of a prefill (the
        steps, the weight read, the all-reduces) stays the mean prompt's."""
        hit = self.prefix_cache_hit_rate
        n = self.mean_input_tokens
        at_mean = self.prefill_flops(n * (1.0 - hit), n * hit) / self.prefill_flops_per_s
        return self._prefill_moments.compute_s - at_mean

    # -- prefill -----------------------------------------------------------------------------
    @cached_property
    def _attention_dim(self) -> int:
        a = self.arch
        if a.is_mla:
            qk = (a.qk_nope_head_dim or a.effective_head_dim) + (a.qk_rope_head_dim or 0)
            v = a.v_head_dim or a.qk_nope_head_dim or a.effective_head_dim
            return a.attention_heads * (qk + v) // 2
        return a.attention_heads * a.effective_head_dim

    def prefill_flops(self, tokens: float, context_before: float = 0.0) -> float:
        """FLOPs to prefill ``tokens`` new tokens after ``context_before`` cached ones."""
        p = self.params
        linear_params = p.active - p.embedding - p.lm_head
        linear = 2.0 * linear_params * tokens + 2.0 * p.lm_head
        d_attn = self._attention_dim
        g = self.geometry
        end = context_before + tokens
        # causal: token i attends to i earlier tokens -> sum = (end² − start²) / 2
        full_pairs = (end * end - context_before * context_before) / 2.0
        win_pairs = full_pairs
        if g.window_tokens is not None:
            win_pairs = min(full_pairs, tokens * float(g.window_tokens))
        pairs = g.full_layers * full_pairs + g.window_layers * win_pairs
        return linear + 4.0 * pairs * d_attn

    def allreduce_seconds(self, tokens: float) -> float:
        """Two all-reduces per layer. A ring all-reduce takes ``2 (TP − 1)`` hops, so its fixed
        latency grows with TP: ``allreduceLatencySeconds`` is the TP = 2 figure, ×(TP − 1) above
        (A100 TP 4 → TP 8 decode steps of Mixtral-8x22B, benchmarks/accuracy)."""
        payload = tokens * self.arch.hidden_size * 2.0
        per = ring_allreduce_seconds(
            payload,
            self.tp,
            self.link_bytes_per_s * self.assumptions.interconnect_efficiency,
            self.assumptions.allreduce_latency_seconds * max(self.tp - 1, 1),
        )
        return 2.0 * self.arch.layers * per

    def _weight_read_seconds(self, batch: float) -> float:
        return self.weight_read_bytes(batch) / self.tp / (self._bw * self.weight_read_efficiency)

    @cached_property
    def _bw(self) -> float:
        return (
            self.hbm_bytes_per_s
            * self.assumptions.decode_bandwidth_efficiency
            * self.decode_bandwidth_factor
        )

    @cached_property
    def _prefill_memo(self) -> dict[tuple[float, float], float]:
        return {}

    def prefill_seconds(self, tokens: float, cached: float = 0.0) -> float:
        """Time to prefill ``tokens`` uncached prompt tokens after ``cached`` prefix-cached ones
        (their attention still reads the cached context) on an otherwise idle replica
        (memoized: the operating-point search asks for the same prompt many times)."""
        memo = self._prefill_memo
        key = (tokens, cached)
        if key not in memo:
            memo[key] = self._prefill_seconds(tokens, cached)
        return memo[key]

    def _prefill_seconds(self, tokens: float, cached: float) -> float:
        if tokens <= 0:
            return 0.0
        compute = self.prefill_flops(tokens, cached) / self.prefill_flops_per_s
        steps = chunk_count(tokens, self.max_num_batched_tokens) if self.chunked_prefill else 1
        weight_floor = steps * self._weight_read_seconds(1)
        comm = self.allreduce_seconds(tokens) + (steps - 1) * 2 * self.arch.layers * (
            self.assumptions.allreduce_latency_seconds * (self.tp - 1) if self.tp > 1 else 0.0
        )
        return max(compute, weight_floor) + comm + steps * self.assumptions.step_overhead_seconds

    # -- decode ------------------------------------------------------------------------------
    def weight_read_bytes(self, batch: float) -> float:
        """Bytes of weights one decode step reads (whole replica). MoE: expected experts touched.

        The LM head (the embedding matrix when tied) stays in 16 bits in quantized checkpoints,
        so it is read at 2 B/param whatever the weight dtype."""
        p, a = self.params, self.arch
        read = p.decode_read_params
        if a.experts is not None and a.experts_per_token is not None and p.routed_experts > 0:
            active_routed = p.routed_experts * a.experts_per_token / a.experts
            touched = 1.0 - (1.0 - a.experts_per_token / a.experts) ** max(batch, 1.0)
            read += p.routed_experts * touched - active_routed
        head = p.lm_head or p.embedding
        head_extra = head * max(EMBEDDING_BYTES_PER_PARAM - self.weight_bytes_per_param, 0.0)
        return read * self.weight_bytes_per_param + head_extra

    @cached_property
    def decode_context_tokens(self) -> float:
        """Mean tokens in a decoding sequence's context: the prompt plus half the output."""
        return self.mean_input_tokens + self.mean_output_tokens / 2.0

    @cached_property
    def _decode_held_tokens(self) -> float:
        return self.geometry.tokens_held(self.decode_context_tokens)

    @cached_property
    def _decode_flops_per_seq(self) -> float:
        p = self.params
        return 2.0 * (p.active - p.embedding) + 4.0 * self._decode_held_tokens * (
            self.arch.layers * self._attention_dim
        )

    @cached_property
    def _decode_flops_rate(self) -> float:
        return self.tp * self.flops_per_s * self.assumptions.decode_compute_efficiency

    @cached_property
    def _step_memo(self) -> dict[float, float]:
        return {}

    @cached_property
    def search_memo(self) -> dict[tuple[object, ...], float | None]:
        """Answers of searches over this model (the operating point's SLO batch), by inputs."""
        return {}

    def step_seconds(self, batch: float) -> float:
        """One decode step for ``batch`` sequences: roofline max + all-reduce + overhead
        (memoized: the operating-point and knob searches ask for the same batches often)."""
        memo = self._step_memo
        if batch not in memo:
            memo[batch] = self._step_seconds(batch)
        return memo[batch]

    def _step_seconds(self, batch: float) -> float:
        g = self.geometry
        kv_bytes = batch * g.bytes_per_token_per_rank * self._decode_held_tokens
        mem = self._weight_read_seconds(batch) + kv_bytes / self._bw
        comp = batch * self._decode_flops_per_seq / self._decode_flops_rate
        return (
            max(mem, comp) + self.allreduce_seconds(batch) + self.assumptions.step_overhead_seconds
        )

    def mixed_step_seconds(
        self,
        decode_seqs: float,
        decode_context_tokens: float,
        prefill_flops: float,
        tokens: float,
    ) -> float:
        """One scheduler step mixing ``decode_seqs`` decodes (``decode_context_tokens`` summed
        over them) with prefill chunks worth ``prefill_flops``; ``tokens`` scheduled in all.

        The planner's convention, so a simulated replica and the plan agree at mismatch 1:
        ``max(weights + KV read, decode FLOPs) + prefill FLOPs / (TP·peak·η_prefill)
        + all-reduces(tokens) + overhead`` — the decode part is bandwidth-bound, the chunks are
        compute added on top (prefill interference, module docstring). Sliding-window layers
        are applied to the mean context.
        """
        g = self.geometry
        held = decode_context_tokens
        if decode_seqs > 0 and g.window_tokens is not None:
            held = decode_seqs * g.tokens_held(decode_context_tokens / decode_seqs)
        mem = (
            self._weight_read_seconds(max(decode_seqs, 1))
            + held * g.bytes_per_token_per_rank / self._bw
        )
        comp = (
            decode_seqs * 2.0 * (self.params.active - self.params.embedding)
            + 4.0 * held * self.arch.layers * self._attention_dim
        ) / self._decode_flops_rate
        prefill = prefill_flops / self.prefill_flops_per_s
        return (
            max(mem, comp)
            + prefill
            + self.allreduce_seconds(max(tokens, 1))
            + self.assumptions.step_overhead_seconds
        )

    def mixed_step_extra_seconds(self, decode_seqs: float) -> float:
        """What a step carrying ``decode_seqs`` decodes and one prompt's chunk pays beyond
        :meth:`mixed_step_seconds`: nothing here (LoRA: the kernels of their adapters, as the
        simulated replica adds them to its mixed step)."""
        return 0.0

    # -- serving at batch B --------------------------------------------------------------------
    @cached_property
    def mean_prefill_seconds(self) -> float:
        """A replica's time per prefill, on average over the prompts: the mean prompt's and
        what the spread adds (:attr:`prefill_spread_seconds`)."""
        hit = self.prefix_cache_hit_rate
        n = self.mean_input_tokens
        return self.prefill_seconds(n * (1.0 - hit), n * hit) + self.prefill_spread_seconds

    def tpot_seconds(self, batch: float) -> float:
        """Per-request TPOT at batch B with prefill interference (module docstring)."""
        return self._tpot_beside(batch, max(batch - 1.0, 0.0))

    def tpot_open_seconds(self, batch: float) -> float:
        """Mean TPOT under open (Poisson) arrivals at the time-average decode batch ``B``:
        the prompts that arrive while a request decodes, each prefilled beside it once, are
        ``λ·T_decode = B`` on average (Little's law on the decode stage), not the ``B − 1``
        others of :meth:`tpot_seconds`' fixed batch. The two differ by one prompt's prefill
        spread over ``out`` tokens: nothing at a chat batch of 100, most of the interference at
        the batch of 1–2 that 15k-token prompts leave (what live traffic shows, and what the
        engine's calibration compares against)."""
        return self._tpot_beside(batch, max(batch, 0.0))

    def _tpot_beside(self, batch: float, prompts: float) -> float:
        """The step at batch ``batch`` plus ``prompts`` mean prefills spread over the output."""
        return self.step_seconds(batch) + prompts * self.mean_prefill_seconds / max(
            self.mean_output_tokens, 1.0
        )

    def tpot_quantile_seconds(self, batch: float, z: float) -> float:
        """TPOT at a high percentile (z = 2.326 for P99, 1.645 for P95) under Poisson arrivals.

        Two things vary around the mean. The batch a request decodes in is an M/G/∞ count,
        Poisson around B, so its steps take ``t_step(B + z·√B)``. And the prefill work its steps
        share: while it decodes ``k = out − 1`` tokens about ``Λ = B − 1`` other prompts are
        prefilled beside it, each adding ``x`` seconds (a mean prompt's ``x̄``, the prompts'
        spread ``C²``, :attr:`prompt_scv`) — a compound Poisson sum (:func:`compound_quantile`):
        mean ``Λ·x̄``, variance ``Λ·E[x²]`` doubled in its Bernoulli part because the arrivals
        that bring the prompts also raise the batch, skewed by the long prompts (``Λ·E[x³]``,
        Cornish–Fisher). Spread over its ``k`` tokens that is at most a whole chunk per token
        (``c``: a P99 prompt capped by the chunk budget), and at least the part of its decode a
        tail request spends in a prefill backlog (:meth:`_backlog_share`). Memoized by batch."""
        key = ("tpot_q", batch, z)
        memo = self.search_memo
        found = memo.get(key)
        if found is None:
            found = memo[key] = self._tpot_quantile(batch, z)
        return found

    def _tpot_quantile(self, batch: float, z: float) -> float:
        b_z = batch + z * math.sqrt(max(batch, 0.0))
        out = max(self.mean_output_tokens, 1.0)
        others = max(batch - 1.0, 0.0)
        x = self.mean_prefill_seconds
        mean_interference = others * x / out
        c = self.tail_chunk_seconds
        if mean_interference <= 0.0 or c <= 0.0:
            return self.step_seconds(b_z) + mean_interference
        k = max(out - 1.0, 1.0)
        # the prefill work stretches the decode window it lands in, and more arrive in the
        # stretch: the work's spread grows as a busy period's, by 1/(1 − ρ) in deviation, ρ the
        # share of the window that is prefill work
        # and at most one chunk lands on a step: a share p of the steps carry one, so the count
        # is binomial, not Poisson, past its mean (variance × (1 − p))
        busy = mean_interference / (self.step_seconds(batch) + mean_interference)
        p = min(1.0, mean_interference / c)
        stretch = math.sqrt(1.0 - p) / (1.0 - busy)
        # what a prompt adds to the steps it shares is its FLOPs (mixed_step_seconds): the
        # spread is of that; the mean keeps the fitted prefill (tpot_seconds, request_rate)
        added = self.chunk_seconds(self.mean_input_tokens * (1.0 - self.prefix_cache_hit_rate))
        spread = mean_interference + self._deviation_over_answers(others, added, z, stretch)
        share = self._backlog_share(batch, k, z)
        return self.step_seconds(b_z) + max(mean_interference, min(c, spread), c * share)

    def _deviation_over_answers(
        self, others: float, added: float, z: float, stretch: float
    ) -> float:
        """The per-token prefill work above its mean that only a share ``tail(z)`` of requests
        exceed, over the answer lengths (the lognormal through the mean and
        :attr:`tail_output_tokens`, :func:`lognormal_points`): an answer of ``k`` tokens sees
        ``others·k/out`` prompts, so its deviation per token, ``d(k)``
        (:func:`compound_quantile`), shrinks as ``1/√k`` — short answers set the tail. Each
        answer's excess is taken as a normal of that quantile; the mixture's is found by
        bisection. With no stated spread, the mean answer's."""
        out = max(self.mean_output_tokens, 1.0)

        def deviation(k: float) -> float:
            seen = others * k / out
            extra = compound_quantile(seen, added, self.prompt_scv, z, stretch) - seen * added
            return extra / max(k - 1.0, 1.0)

        points = [
            (k, w) for k, w in lognormal_points(out, max(self.tail_output_tokens, out)) if k >= 2.0
        ]
        if len(points) <= 1:
            return deviation(out)
        devs = [(deviation(k), w) for k, w in points]
        tail = 0.5 * math.erfc(z / math.sqrt(2.0)) * sum(w for _, w in devs)

        def exceed(y: float) -> float:
            return sum(w * 0.5 * math.erfc(y * z / (d * math.sqrt(2.0))) for d, w in devs if d > 0)

        hi = max(d for d, _ in devs) * 2.0
        if hi <= 0.0:
            return 0.0
        return tail_point(exceed, tail, 0.0, hi, 30, 1e-3)

    def _backlog_share(self, batch: float, intervals: float, z: float) -> float:
        """The share of a tail request's decode steps taken inside a prefill backlog, where
        every step carries a full chunk (``t_step + c`` seconds). In an M/M/1 queue at
        utilisation ρ with service time s the busy period still ahead of a random moment
        outlasts ``t`` with probability about ``ρ·exp(−t(1−√ρ)²/s)`` (the busy period's decay
        rate); the request at the percentile (a share ``tail`` above it) decodes inside one for
        ``t = s·ln(ρ/tail)/(1−√ρ)²`` seconds, ``t / (t_step + c)`` of its ``intervals`` steps.
        Near full prefill utilisation the backlogs outlast short answers, and their TPOT tail is
        a whole chunk per token however rare chunks are on average."""
        tail = 0.5 * math.erfc(z / math.sqrt(2.0))
        rho = self.prefill_utilization(batch)
        if rho <= tail:
            return 0.0
        s = self.prefill_service_seconds(batch)
        covered = s * math.log(rho / tail) / (1.0 - math.sqrt(rho)) ** 2
        full_step = self.step_seconds(batch) + self.tail_chunk_seconds
        return min(1.0, covered / full_step / max(intervals, 1.0))

    @cached_property
    def weight_floor_seconds(self) -> float:
        """A decode step that only reads every weight once (all experts of an MoE model),
        plus its all-reduces and overhead: the workload-independent reference for the knee."""
        p = self.params
        read = (p.total - (p.embedding if p.lm_head > 0 else 0.0)) * self.weight_bytes_per_param
        head = p.lm_head or p.embedding  # kept in 16 bits by quantized checkpoints
        read += head * max(EMBEDDING_BYTES_PER_PARAM - self.weight_bytes_per_param, 0.0)
        return (
            read / self.tp / (self._bw * self.weight_read_efficiency)
            + self.allreduce_seconds(1)
            + self.assumptions.step_overhead_seconds
        )

    def knee_floor_seconds(self, batch: float) -> float:
        """The knee's reference at batch B: what a step of B sequences pays however many share
        it (:func:`~tokenscale.planning.operating_point.knee_batch`). Here the weight-read
        floor, whatever B; a model whose shared work grows with the batch (LoRA's kernels per
        distinct adapter) says so."""
        return self.weight_floor_seconds

    def output_tps(self, batch: float) -> float:
        """Output tokens/s of one replica at batch B, prefills included (module docstring)."""
        out = max(self.mean_output_tokens, 1.0)
        return batch * out / (out * self.step_seconds(batch) + batch * self.mean_prefill_seconds)

    def request_rate(self, batch: float) -> float:
        """Requests/s one replica completes at batch B: output TPS ÷ mean output tokens."""
        return self.output_tps(batch) / max(self.mean_output_tokens, 1.0)

    def prefill_service_seconds(self, batch: float) -> float:
        """GPU time a prompt's prefill holds the scheduler at batch B, on average over the
        prompts (:attr:`prompt_grid`): the FLOPs of its chunks and its tokens' all-reduces, and
        for every step its chunks fill, that step's decode part (the B decodes' weight and KV
        reads, all-reduces and overhead, :meth:`step_seconds`), as :meth:`mixed_step_seconds`
        times a step. A chunk gets the budget the decodes leave (``budget − B`` tokens); a
        prompt shorter than that shares its step with the next, so the step count is
        fractional: ``n / (budget − B)``. Without chunked prefill a prompt is one step."""
        m = self._prefill_moments
        if m.tokens <= 0:
            return 0.0
        return (
            m.tokens * self._per_token_step_seconds(batch)
            + self._steps_unchunked(batch)
            + m.compute_s
        )

    def _per_token_step_seconds(self, batch: float) -> float:
        """What a prompt's steps cost per prompt token at batch B beyond its FLOPs: its share of
        a chunked step (``t_step(B) / (budget − B)``; none without chunked prefill) and its
        tokens' all-reduces (a step's all-reduce payload grows with the tokens it carries,
        :meth:`mixed_step_seconds`)."""
        comm = self._allreduce_per_token_seconds
        if not self.chunked_prefill:
            return comm
        share = self.step_seconds(max(batch, 0.0)) / max(1.0, self.max_num_batched_tokens - batch)
        return share + comm

    @cached_property
    def _allreduce_per_token_seconds(self) -> float:
        """The all-reduces' time per token a step carries (their bandwidth part: the latency is
        the step's, :meth:`step_seconds`); 0 at TP 1."""
        return self.allreduce_seconds(1.0) - self.allreduce_seconds(0.0)

    def _steps_unchunked(self, batch: float) -> float:
        """Without chunked prefill a prompt is one step, whatever its length."""
        return 0.0 if self.chunked_prefill else self.step_seconds(max(batch, 0.0))

    def prefill_service_scv(self, batch: float) -> float | None:
        """``C²`` of a prefill's service time at batch B (:meth:`prefill_service_seconds`)
        over the prompts: ``k·n + c`` for a prompt of ``n`` tokens to prefill, ``k`` the step
        cost per token, ``c`` its compute — the spread of the queue's service, wider than the
        prompts' when attention's square term matters. None when the prompts' spread is
        unknown (the queue then takes M/M/1's exponential)."""
        if self.prompt_length_scv is None:
            return None
        m = self._prefill_moments
        mean = self.prefill_service_seconds(batch)
        if m.tokens <= 0 or mean <= 0:
            return 0.0
        k = self._per_token_step_seconds(batch)
        spread = k * k * m.tokens_var + 2.0 * k * m.covariance + m.compute_var
        return max(0.0, spread) / (mean * mean)

    def prefill_utilization(self, batch: float) -> float:
        """The share of scheduler steps that carry prefill chunks at batch B (at most 0.99):
        ``ρ = request_rate(B) × prefill_service_seconds(B)`` — the prefill queue's server is the
        whole step, decodes included, so the queue fills as the GPU does, not as the prefill
        FLOPs alone would say."""
        return min(0.99, self.request_rate(batch) * self.prefill_service_seconds(batch))

    def ttft_seconds(self, batch: float, prompt_tokens: float) -> float:
        """TTFT of a ``prompt_tokens`` prompt arriving while B sequences decode, B being the
        batch this replica carries (the load: ``request_rate(B)`` requests per second).

        Its own prefill, chunked into ``ceil(N / (budget − B))`` steps; each chunk also carries
        the B decodes, which add their KV reads and FLOPs (the weights are read once per step
        and already counted by the prefill); plus the mean wait for prompts ahead
        (:meth:`queue_wait_seconds`). At B → 0 this is the prefill alone: no queue, no decode
        riding along.
        """
        return self.own_ttft_seconds(batch, prompt_tokens) + self.queue_wait_seconds(batch)

    def request_overhead_seconds(self, prompt_tokens: float) -> float:
        """One request's latency outside the GPU: ``requestOverheadSeconds`` + the prompt's
        tokens × ``requestOverheadPerTokenSeconds`` (the server tokenizes the whole prompt,
        prefix-cached or not)."""
        a = self.assumptions
        return a.request_overhead_seconds + max(prompt_tokens, 0.0) * (
            a.request_overhead_per_token_seconds
        )

    def own_ttft_seconds(self, batch: float, prompt_tokens: float) -> float:
        """A prompt's own prefill with ``batch`` decodes riding along its chunks (no queue), plus
        the per-request latency outside the GPU (:meth:`request_overhead_seconds`).

        With decodes running each of its ``ceil(N / (budget − B))`` chunks is one scheduler step
        of :meth:`mixed_step_seconds` — the fleet simulator's step: the B decodes' weight and KV
        reads, then the chunk's FLOPs on top. With none, :meth:`prefill_seconds`, the form the
        measured TTFTs were fitted with (FLOPs or a weight read per chunk, whichever is longer).
        The decodes running when it arrives are a Poisson count around B, none with
        probability ``e^−B``: the two are weighted so (at B → 0 the prefill alone)."""
        n = prompt_tokens * (1.0 - self.prefix_cache_hit_rate)
        cached = prompt_tokens - n
        idle = self.prefill_seconds(n, cached)
        overhead = self.request_overhead_seconds(prompt_tokens)
        if batch <= 0 or n <= 0:
            return idle + overhead
        if self.chunked_prefill:
            budget = max(1, self.max_num_batched_tokens - math.ceil(batch))
            steps = chunk_count(n, budget)
        else:
            steps = 1
        per_step = self.chunk_step_seconds(batch, self.prefill_flops(n, cached) / steps, n / steps)
        alone = math.exp(-batch)
        return alone * idle + (1.0 - alone) * steps * per_step + overhead

    def chunk_step_seconds(self, batch: float, flops: float, chunk_tokens: float) -> float:
        """One scheduler step carrying the B decodes and ``chunk_tokens`` of prefill worth
        ``flops`` (:meth:`mixed_step_seconds` at the decodes' mean context, plus what a step with
        a prompt's chunk pays beyond it, :meth:`mixed_step_extra_seconds`)."""
        return self.mixed_step_seconds(
            batch, batch * self.decode_context_tokens, flops, batch + chunk_tokens
        ) + self.mixed_step_extra_seconds(batch)

    def queue_wait_seconds(self, batch: float) -> float:
        """Mean wait for the prompts ahead at batch B (M/G/1, Pollaczek–Khinchine):
        ``ρ/(1−ρ) · s · (1 + C²)/2``, ``s`` the prefill's service time
        (:meth:`prefill_service_seconds`), ``C²`` its squared coefficient of variation over the
        prompts (:meth:`prefill_service_scv`; 1 when their spread is unknown)."""
        if batch <= 0:
            return 0.0
        return self._mean_wait_seconds(batch, self.prefill_utilization(batch))

    def _mean_wait_seconds(self, batch: float, rho: float) -> float:
        """Pollaczek–Khinchine's mean wait at load ``rho`` for the prefill service at batch B."""
        scv = self.prefill_service_scv(batch)
        return mg1_wait_seconds(
            rho, self.prefill_service_seconds(batch), 1.0 if scv is None else scv
        )

    def queue_wait_quantile_seconds(self, batch: float, tail: float) -> float:
        """The wait that only a share ``tail`` of prompts exceed (0.01: the P99) at batch B
        (:func:`~tokenscale.planning.queueing.mg1_wait_quantile_seconds`: M/M/1's exact tail
        when the prompts' spread is unknown, the rest of one prefill for identical prompts, a
        lognormal prefill's residual of the service's own spread, :meth:`prefill_service_scv`,
        for lognormal prompts)."""
        if batch <= 0 or tail <= 0:
            return 0.0
        rho = self.prefill_utilization(batch)
        s = self.prefill_service_seconds(batch)
        return mg1_wait_quantile_seconds(rho, s, self.prefill_service_scv(batch), tail)

    def ttft_quantile_seconds(
        self, batch: float, prompt_tokens: float, mean_prompt_tokens: float, tail: float
    ) -> float:
        """TTFT that only a share ``tail`` of requests exceed at batch B (0.01: the P99): the
        percentile of a prompt's own prefill plus its wait, the two independent
        (:func:`sum_quantile`). The prompts are the lognormal through the mean and
        ``prompt_tokens`` at that percentile (:func:`lognormal_points`), each one's own TTFT
        interpolated between the mean prompt's and the tail prompt's (both
        :meth:`own_ttft_seconds`: the prefill is close to linear in the prompt); the wait
        :meth:`queue_wait_seconds`' M/G/1 — at low load the long prompts set the tail, near
        full prefill utilisation the queue, in between both. Memoized by its inputs."""
        key = ("ttft_q", batch, prompt_tokens, mean_prompt_tokens, tail)
        memo = self.search_memo
        found = memo.get(key)
        if found is None:
            found = memo[key] = self._ttft_quantile(batch, prompt_tokens, mean_prompt_tokens, tail)
        return found

    def _ttft_quantile(
        self, batch: float, prompt_tokens: float, mean_prompt_tokens: float, tail: float
    ) -> float:
        if batch <= 0:
            return self._queued_ttft_quantile(
                batch, 0.0, 0.0, prompt_tokens, mean_prompt_tokens, tail
            )
        return self._queued_ttft_quantile(
            batch,
            self.prefill_utilization(batch),
            self.request_rate(batch),
            prompt_tokens,
            mean_prompt_tokens,
            tail,
        )

    def _queued_ttft_quantile(
        self,
        batch: float,
        rho: float,
        rate_rps: float,
        prompt_tokens: float,
        mean_prompt_tokens: float,
        tail: float,
    ) -> float:
        """The TTFT percentile of :meth:`ttft_quantile_seconds` for a prefill queue at load
        ``rho`` fed ``rate_rps`` prompts a second: the prompts' own TTFTs at batch B and the
        wait of the prefill service at B, added (:func:`sum_quantile`), the prompts that arrive
        while one waits sharing its last step (:meth:`_busy_times`). One pool's queue and a
        prefill worker's (batch 0) are this one."""
        own, sizes = self._own_ttft_points(batch, prompt_tokens, mean_prompt_tokens)
        return sum_quantile(
            own,
            rho,
            self.prefill_service_seconds(batch) if rho > 0 else 0.0,
            self.prefill_service_scv(batch),
            tail,
            self._busy_times(batch, own, sizes, rho, rate_rps),
        )

    def _own_ttft_points(
        self, batch: float, prompt_tokens: float, mean_prompt_tokens: float
    ) -> tuple[tuple[tuple[float, float], ...], tuple[float, ...]]:
        """The prompts' own TTFTs at batch B as (seconds, weight) points, and their lengths:
        the lognormal through the mean and ``prompt_tokens`` (its tail percentile), each one's
        own TTFT interpolated between the mean prompt's and the tail prompt's
        (:meth:`own_ttft_seconds`), never under the request overhead."""
        at_mean = self.own_ttft_seconds(batch, mean_prompt_tokens)
        at_tail = self.own_ttft_seconds(batch, prompt_tokens)
        span = prompt_tokens - mean_prompt_tokens
        if span <= 0 or at_tail <= at_mean:
            return ((max(at_mean, at_tail), 1.0),), (max(prompt_tokens, mean_prompt_tokens),)
        floor = self.assumptions.request_overhead_seconds
        slope = (at_tail - at_mean) / span
        points = lognormal_points(mean_prompt_tokens, prompt_tokens)
        own = tuple((max(floor, at_mean + slope * (n - mean_prompt_tokens)), w) for n, w in points)
        return own, tuple(n for n, _ in points)

    # -- a prefill worker (P/D): the same queue with no decode riding along --------------------
    @cached_property
    def prefill_worker_service_seconds(self) -> float:
        """A prefill-only worker's (P/D) service per prompt: :meth:`prefill_service_seconds` at
        batch 0 (a prompt's chunk FLOPs and its tokens' all-reduces, and each step's weight read
        shared by the tokens that fill it); its utilization is the prompt rate times this."""
        return self.prefill_service_seconds(0.0)

    def prefill_worker_wait_seconds(self, utilization: float) -> float:
        """Mean wait at a prefill-only worker (P/D) running at ``utilization``: the M/G/1 of
        :meth:`queue_wait_seconds` with no decodes in its steps (service
        :attr:`prefill_worker_service_seconds`, ``C²`` :meth:`prefill_service_scv` at 0)."""
        return self._mean_wait_seconds(0.0, _worker_rho(utilization))

    def prefill_worker_ttft_quantile_seconds(
        self, utilization: float, prompt_tokens: float, mean_prompt_tokens: float, tail: float
    ) -> float:
        """The TTFT (to the prefill's end) only a share ``tail`` of prompts exceed at a
        prefill-only worker running at ``utilization``: one pool's queued TTFT at batch 0
        (:meth:`_queued_ttft_quantile`), the prompts arriving at ``utilization / service``."""
        rho = _worker_rho(utilization)
        service = self.prefill_worker_service_seconds
        rate = rho / service if service > 0 else 0.0
        return self._queued_ttft_quantile(0.0, rho, rate, prompt_tokens, mean_prompt_tokens, tail)

    def _busy_times(
        self,
        batch: float,
        own: tuple[tuple[float, float], ...],
        sizes: tuple[float, ...],
        rho: float,
        rate_rps: float,
    ) -> BusyTimes | None:
        """What the prompts that found the prefill queue busy take (:class:`BusyTimes`): prompts
        arrive behind a waiting prompt at ``λ`` per second, each ``n̄`` tokens, and the scheduler
        fills its last step with them up to the budget the B decodes leave (``budget − B``), so
        its finish moves by their chunk time, ``λ·n̄·∂t_step/∂token`` per second it waited,
        until that step is full. Its steps before the last are its own full chunks (at least
        its own time alone). None without chunked prefill or a queue."""
        if not self.chunked_prefill or rho <= 0:
            return None
        free = max(1, self.max_num_batched_tokens - math.ceil(batch))

        def step(chunk: float) -> float:
            return self.chunk_step_seconds(batch, self.prefill_flops(chunk), chunk)

        per_token = (step(free) - step(0.0)) / free
        hit = 1.0 - self.prefix_cache_hit_rate
        arriving = rate_rps * self.mean_input_tokens * hit
        seconds: list[float] = []
        caps: list[float] = []
        for (alone, _), n_prompt in zip(own, sizes, strict=True):
            n = n_prompt * hit
            steps = chunk_count(n, free)
            last = max(n - (steps - 1) * free, 0.0)
            finish = (steps - 1) * step(free) + step(last)
            seconds.append(max(alone, finish + self.request_overhead_seconds(n_prompt)))
            caps.append((free - last) / arriving if arriving > 0 else 0.0)
        return BusyTimes(tuple(seconds), arriving * per_token, tuple(caps))

    # -- the chunk budget's share of the TPOT tail ------------------------------------------
    def chunk_seconds(self, chunk_tokens: float) -> float:
        """What a prefill chunk of ``chunk_tokens`` adds to the step it shares: its FLOPs at
        the prefill efficiency (the step's weight read is the decode's, already counted)."""
        if chunk_tokens <= 0:
            return 0.0
        return self.prefill_flops(chunk_tokens) / self.prefill_flops_per_s

    @cached_property
    def tail_chunk_seconds(self) -> float:
        """The chunk a tail request's decode steps share: a P99 prompt's, capped by the budget,
        attending to the context a chunk has before it on average. A prompt of ``n`` tokens
        brings ``n / budget`` chunks whose context runs from 0 to ``n``: over the prompts, a
        chunk's mean context is ``E[n²] / (2·E[n]) = (1 + C²)·n̄/2`` less half a chunk (at most
        the P99 prompt's last chunk's) — a long prompt's late chunks cost more than its first."""
        hit = 1.0 - self.prefix_cache_hit_rate
        tokens = (self.tail_input_tokens or self.mean_input_tokens) * hit
        cap = float(self.max_num_batched_tokens) if self.chunked_prefill else tokens
        chunk = min(tokens, cap)
        if chunk <= 0:
            return 0.0
        spread = 1.0 + (self.prompt_length_scv or 0.0)
        context = min(spread * self.mean_input_tokens * hit / 2.0 - chunk / 2.0, tokens - chunk)
        flops = self.prefill_flops(chunk, max(context, 0.0))
        return flops / self.prefill_flops_per_s


def _worker_rho(utilization: float) -> float:
    """A prefill worker's utilization, kept inside the queue's stable range."""
    return min(max(utilization, 0.0), 0.999)


def weight_read_efficiency(dtype: WeightDtype) -> float:
    """The bandwidth fraction a dtype's decode GEMMs read weights at (INT4: weight-only)."""
    return WEIGHT_ONLY_DECODE_BANDWIDTH_EFFICIENCY if dtype == "int4" else 1.0


#: Datasheets quote GPU links as both directions together (H100 NVLink 4: 18 links × 50 GB/s =
#: 900 GB/s, 450 each way; A100 NVLink 3: 600, 300 each way; PCIe Gen4 x16: 64, 32 each way).
#: A KV transfer moves its bytes one way, and each step of a ring all-reduce sends one way
#: while it receives the other, so a transfer's floor is its bytes over *half* the quoted figure.
LINK_DIRECTIONS = 2.0


def link_bytes_per_s(gpu: GpuSpec) -> float:
    """One-way GPU-GPU bandwidth for all-reduce and KV transfer: NVLink/Infinity Fabric if
    present, else PCIe; the datasheet's bidirectional figure over :data:`LINK_DIRECTIONS`."""
    return (gpu.interconnect_gbps or gpu.pcie_gbps) * GB / LINK_DIRECTIONS
