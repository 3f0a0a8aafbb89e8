"""The physical floor a timing measurement cannot beat: the rates it implies against the GPU's
datasheet peaks.

A measured time ``t`` for work of ``F`` FLOPs and ``M`` HBM bytes implies ``F/t`` FLOP/s and
``M/t`` bytes/s. Compute and memory traffic can overlap inside a step, so the sound test is
on each rate alone: a measurement is physically possible only if neither exceeds the replica's
peak (``TP ×`` the datasheet figure). Work is counted with the planner's own formulas
(:class:`~tokenscale.planning.PerfModel`: ``prefill_flops``, ``weight_read_bytes``, the KV
geometry), at the minimum the stated conditions require:

- a prefill of ``N`` prompt tokens: ``prefill_flops(N)`` FLOPs and one read of the weights;
- a decode step at batch ``B`` whose sequences hold ``c`` tokens of context: ``B ×
  prefill_flops(1, c)`` FLOPs and ``weight_read_bytes(B)`` plus ``B × c`` tokens of KV bytes;
- a throughput of ``X`` output tokens/s at concurrency ``C`` with ``in``/``out`` tokens per
  request: per second, ``X/out`` prefills and ``X/C`` decode steps at batch ``C``;
- a KV transfer of ``N`` prompt tokens between two replicas: the KV bytes of ``N`` tokens, each
  GPU sending its rank's share over its own link (:func:`transfer_verdict`).

Two prefill measurements of one series (same source, model, GPU, TP, dtype, concurrency) give
a third test, on the difference: the extra ``F₂ − F₁`` FLOPs of the longer prompt took
``t₂ − t₁`` seconds. This assumes the first ``N₁`` tokens cost no less inside the longer
prompt than alone, which holds once GEMMs are large (``N₁ ≥ MARGINAL_MIN_TOKENS``); a longer
prompt that is not slower is rejected outright.

The peak is the datasheet's dense tensor figure for the weights' dtype (FP8/INT8 cores where
the GPU has them, else BF16; weight-only INT4 runs on BF16 cores), with no efficiency applied:
the margin (``PHYSICS_MARGIN``) only absorbs counting slack, since real kernels stay well below
the peak.
"""

import math
from dataclasses import dataclass

from tokenscale.api.hardware import GpuSpec
from tokenscale.api.model import WeightDtype
from tokenscale.planning.formulas import GB, GIB
from tokenscale.planning.performance import PerfModel

#: How far above the datasheet peak an implied rate may go before the measurement is rejected:
#: counting slack (the attention's FLOPs, a rounded quote), not kernel headroom.
PHYSICS_MARGIN = 0.10

#: The shorter prompt of a pair must be at least this long for the difference test.
MARGINAL_MIN_TOKENS = 512


def datasheet_flops(gpu: GpuSpec, dtype: WeightDtype) -> float:
    """Dense tensor peak, FLOP/s per GPU, of the cores the weights' dtype runs on."""
    if dtype == "fp8" and gpu.fp8_tflops:
        return gpu.fp8_tflops * 1e12
    if dtype == "int8" and gpu.int8_tops:
        return gpu.int8_tops * 1e12
    if dtype == "fp32":
        return gpu.bf16_tflops * 0.5e12
    return gpu.bf16_tflops * 1e12


@dataclass(frozen=True)
class Work:
    """What a measurement says was done, and in how long (whole replica)."""

    flops: float
    hbm_bytes: float
    seconds: float
    what: str
    """How the work was counted, for the verdict's reason."""


@dataclass(frozen=True)
class Verdict:
    """Implied rates per GPU and their fractions of the datasheet peaks."""

    flops_per_s_per_gpu: float
    bytes_per_s_per_gpu: float
    flops_fraction: float
    bytes_fraction: float
    possible: bool
    reason: str


def judge(
    work: Work, gpu: GpuSpec, dtype: WeightDtype, tp: int, margin: float = PHYSICS_MARGIN
) -> Verdict:
    """Whether ``work`` fits in its measured time on ``tp`` GPUs, and the rates it implies."""
    peak_flops = datasheet_flops(gpu, dtype)
    peak_bytes = gpu.hbm_bandwidth_gbps * GB
    if work.seconds <= 0:
        reason = f"{work.what}: more work in no more time"
        return Verdict(math.inf, math.inf, math.inf, math.inf, False, reason)
    flops_rate = work.flops / work.seconds / tp
    bytes_rate = work.hbm_bytes / work.seconds / tp
    f_frac, b_frac = flops_rate / peak_flops, bytes_rate / peak_bytes
    possible = f_frac <= 1.0 + margin and b_frac <= 1.0 + margin
    verdict = "within" if possible else "above"
    reason = (
        f"{work.what}: {flops_rate / 1e12:,.0f} TFLOP/s per GPU ({f_frac:.0%} of the "
        f"{peak_flops / 1e12:,.0f} peak), {bytes_rate / 1e9:,.0f} GB/s ({b_frac:.0%} of "
        f"{peak_bytes / 1e9:,.0f}): {verdict} the peak + {margin:.0%}"
    )
    return Verdict(flops_rate, bytes_rate, f_frac, b_frac, possible, reason)


def kv_pool_verdict(
    perf: PerfModel, gpu: GpuSpec, tokens: float, margin: float = PHYSICS_MARGIN
) -> Verdict:
    """Whether ``tokens`` of KV cache fit beside the weights in one GPU's memory (per rank)."""
    pool = tokens * perf.geometry.bytes_per_token_per_rank
    # every weight except the input embedding's gather (all experts touched): a floor
    weights = perf.weight_read_bytes(1e9) / perf.tp
    memory = gpu.memory_gib * GIB
    fraction = (pool + weights) / memory
    possible = fraction <= 1.0 + margin
    reason = (
        f"{tokens:,.0f} KV tokens ({pool / GIB:,.2f} GiB per GPU) beside {weights / GIB:,.2f} GiB "
        f"of weights: {fraction:.0%} of {gpu.memory_gib:,.2f} GiB, "
        f"{'within' if possible else 'above'} the memory + {margin:.0%}"
    )
    return Verdict(0.0, 0.0, 0.0, fraction, possible, reason)


def _kv_bytes(perf: PerfModel, tokens: float) -> float:
    """KV bytes of ``tokens`` tokens of context, whole replica (every rank's share)."""
    g = perf.geometry
    return g.bytes_per_token_per_rank * perf.tp * g.tokens_held(tokens)


def prefill_work(perf: PerfModel, tokens: float, seconds: float) -> Work:
    """A cold prefill of ``tokens`` prompt tokens (a TTFT at concurrency 1)."""
    return Work(
        flops=perf.prefill_flops(tokens),
        hbm_bytes=perf.weight_read_bytes(1.0),
        seconds=seconds,
        what=f"prefill of {tokens:,.0f} tokens in {seconds * 1e3:.4g} ms",
    )


def marginal_prefill_work(
    perf: PerfModel, short: tuple[float, float], long: tuple[float, float]
) -> Work:
    """The difference of two prefills (``(tokens, seconds)`` each) of one series."""
    (n1, t1), (n2, t2) = short, long
    return Work(
        flops=perf.prefill_flops(n2) - perf.prefill_flops(n1),
        hbm_bytes=0.0,
        seconds=t2 - t1,
        what=(
            f"{n1:,.0f} → {n2:,.0f} prompt tokens adds {(t2 - t1) * 1e3:.3g} ms "
            f"({t1 * 1e3:.4g} → {t2 * 1e3:.4g} ms)"
        ),
    )


def decode_step_work(perf: PerfModel, batch: float, context: float, seconds: float) -> Work:
    """One decode step at ``batch`` sequences of ``context`` tokens each (a TPOT)."""
    return Work(
        flops=batch * perf.prefill_flops(1.0, context),
        hbm_bytes=perf.weight_read_bytes(batch) + batch * _kv_bytes(perf, context),
        seconds=seconds,
        what=f"decode step at batch {batch:g}, {context:,.0f}-token context, "
        f"{seconds * 1e3:.4g} ms",
    )


def batch_latency_work(
    perf: PerfModel, batch: float, input_tokens: float, output_tokens: float, seconds: float
) -> Work:
    """An offline batch: ``batch`` prefills, then ``output − 1`` decode steps at that batch."""
    steps = max(output_tokens - 1.0, 0.0)
    context = input_tokens + output_tokens / 2.0
    step = decode_step_work(perf, batch, context, 0.0)
    return Work(
        flops=batch * perf.prefill_flops(input_tokens) + steps * step.flops,
        hbm_bytes=perf.weight_read_bytes(1.0) + steps * step.hbm_bytes,
        seconds=seconds,
        what=f"batch {batch:g} × ({input_tokens:,.0f} in, {output_tokens:,.0f} out) "
        f"in {seconds:.4g} s",
    )


def throughput_work(
    perf: PerfModel,
    concurrency: float,
    input_tokens: float,
    output_tokens: float,
    output_tokens_per_s: float,
) -> Work:
    """One second of a closed loop at ``concurrency``: its prefills and its decode steps."""
    requests = output_tokens_per_s / max(output_tokens, 1.0)
    steps = output_tokens_per_s / max(concurrency, 1.0)
    context = input_tokens + output_tokens / 2.0
    step = decode_step_work(perf, concurrency, context, 0.0)
    return Work(
        flops=requests * perf.prefill_flops(input_tokens) + steps * step.flops,
        hbm_bytes=steps * step.hbm_bytes,
        seconds=1.0,
        what=f"{output_tokens_per_s:,.0f} output tok/s at concurrency {concurrency:g} "
        f"({input_tokens:,.0f} in, {output_tokens:,.0f} out)",
    )


def transfer_verdict(
    perf: PerfModel,
    link_bytes_per_s: float | None,
    tokens: float,
    seconds: float,
    same_node: bool,
    margin: float = PHYSICS_MARGIN,
) -> Verdict:
    """Whether ``tokens`` of KV cache can leave the sending replica in ``seconds``: every rank
    sends its share over its own link of ``link_bytes_per_s`` (the GPU's datasheet figure;
    None: the GPU states none, nothing to judge)."""
    kv = _kv_bytes(perf, tokens)
    where = "NVLink" if same_node else "the inter-node NICs"
    if link_bytes_per_s is None:
        reason = f"{kv / 1e6:,.0f} MB over {where}: the GPU states no link figure"
        return Verdict(0.0, 0.0, 0.0, 0.0, True, reason)
    if seconds <= 0:
        return Verdict(0.0, math.inf, 0.0, math.inf, False, "a transfer in no time")
    rate = kv / seconds / perf.tp
    fraction = rate / link_bytes_per_s
    possible = fraction <= 1.0 + margin
    reason = (
        f"KV of {tokens:,.0f} tokens ({kv / 1e6:,.0f} MB) over {where} in {seconds * 1e3:.4g} ms: "
        f"{rate / 1e9:,.1f} GB/s per GPU ({fraction:.0%} of {link_bytes_per_s / 1e9:,.0f}), "
        f"{'within' if possible else 'above'} the link + {margin:.0%}"
    )
    return Verdict(0.0, rate, 0.0, fraction, possible, reason)
