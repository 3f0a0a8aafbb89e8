"""The per-replica operating point: the largest batch that meets the SLOs, before the knee.

TPOT, TTFT and E2E all grow with the batch B, so the SLO batch is found by bisection over
integers. The knee is the largest B whose TPOT stays within ``kneeTpotRatio`` (default 2) of the
weight-read floor. For the memory-bound form ``TPOT = a + b·B`` this is ``B = a/b``, exactly
where throughput stops rising faster than TPOT (elasticity ½); beyond it latency is bought
for little throughput (docs/formulas.md: "the operating point belongs before the
throughput knee").
"""

import math
from collections.abc import Callable
from dataclasses import dataclass

from tokenscale.api.slo import Slo
from tokenscale.api.workload import TokenDistribution
from tokenscale.planning.performance import PerfModel


@dataclass(frozen=True)
class SloEstimate:
    name: str
    target_s: float
    estimate_s: float

    @property
    def met(self) -> bool:
        return self.estimate_s <= self.target_s


@dataclass(frozen=True)
class OperatingPoint:
    batch: float
    slo_batch: float | None
    """None when no SLO is set; 0 when the SLOs are missed even at the lightest load. Below 1
    when only a replica that is mostly idle meets them (short answers to long prompts: a
    batch of 1 would mean back-to-back prefills)."""
    knee: int
    limited_by: str
    safe_concurrency: int
    """Most sequences in flight that still meet the SLOs: min(maxNumSeqs, SLO batch)."""


Z_P99 = 2.326
Z_P95 = 1.645
_TAIL = {Z_P99: 0.01, Z_P95: 0.05}
"""The share of requests above each percentile, for the TTFT's queueing tail."""


def _largest(lo: int, hi: int, ok: Callable[[int], bool], hint: int | None = None) -> int:
    """Largest n in [lo, hi] with ok(n), assuming ok is monotone (true then false); lo-1 if none.
    With ``hint`` (a likely answer), the bracket gallops out from it before bisecting."""
    if hint is not None and lo < hint < hi:
        step = 1
        if ok(hint):
            lo = hint
            while lo + step < hi and ok(lo + step):
                lo, step = lo + step, step * 2
            hi = min(hi, lo + step)
        else:
            hi = hint - 1
            while hi - step > lo and not ok(hi - step):
                hi, step = hi - step, step * 2
            lo = max(lo, hi - step)
    if not ok(lo):
        return lo - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _largest_fraction(ok: Callable[[float], bool], floor: float = 1e-3) -> float:
    """Largest batch in (0, 1) with ok(b) (monotone), 0 when even ``floor`` fails."""
    if not ok(floor):
        return 0.0
    lo, hi = floor, 1.0
    for _ in range(24):
        mid = (lo + hi) / 2.0
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


_Targets = tuple[str, float, float | None, float | None, float | None, float, float]


def _percentiles(
    slo: Slo, inputs: TokenDistribution, outputs: TokenDistribution
) -> tuple[_Targets, _Targets]:
    """(name, z, TTFT, TPOT, E2E targets, prompt and answer tokens) at P99 and at P95: P99
    targets use P99 tokens, P95 targets P95 tokens."""
    return (
        (
            "p99",
            Z_P99,
            slo.ttft_p99_seconds,
            slo.tpot_p99_seconds,
            slo.e2e_p99_seconds,
            inputs.p99_or_mean,
            outputs.p99_or_mean,
        ),
        (
            "p95",
            Z_P95,
            slo.ttft_p95_seconds,
            slo.tpot_p95_seconds,
            slo.e2e_p95_seconds,
            inputs.p95 or inputs.mean,
            outputs.p95 or outputs.mean,
        ),
    )


def meets_slos(
    perf: PerfModel, slo: Slo, batch: float, inputs: TokenDistribution, outputs: TokenDistribution
) -> bool:
    """Whether every SLO that is set holds at batch B (the same estimates as
    :func:`slo_estimates`, cheapest first, stopping at the first miss: the searches' predicate)."""
    for _, z, ttft_t, tpot_t, e2e_t, in_tok, out_tok in _percentiles(slo, inputs, outputs):
        if tpot_t is not None and perf.tpot_quantile_seconds(batch, z) > tpot_t:
            return False
        if ttft_t is None and e2e_t is None:
            continue
        ttft = perf.ttft_quantile_seconds(batch, in_tok, inputs.mean, _TAIL[z])
        if ttft_t is not None and ttft > ttft_t:
            return False
        if e2e_t is not None and ttft + out_tok * perf.tpot_seconds(batch) > e2e_t:
            return False
    return True


def slo_estimates(
    perf: PerfModel, slo: Slo, batch: float, inputs: TokenDistribution, outputs: TokenDistribution
) -> list[SloEstimate]:
    """Estimates at batch B for every SLO that is set (P99 uses P99 tokens, P95 uses P95; TTFT
    at a percentile counts the queue's tail, :meth:`PerfModel.ttft_quantile_seconds`)."""
    tpot = perf.tpot_seconds(batch)
    out: list[SloEstimate] = []
    for pct, z, ttft_t, tpot_t, e2e_t, in_tok, out_tok in _percentiles(slo, inputs, outputs):
        ttft = (
            perf.ttft_quantile_seconds(batch, in_tok, inputs.mean, _TAIL[z])
            if (ttft_t or e2e_t)
            else 0.0
        )
        if ttft_t is not None:
            out.append(SloEstimate(f"ttft_{pct}", ttft_t, ttft))
        if tpot_t is not None:
            out.append(SloEstimate(f"tpot_{pct}", tpot_t, perf.tpot_quantile_seconds(batch, z)))
        if e2e_t is not None:
            out.append(SloEstimate(f"e2e_{pct}", e2e_t, ttft + out_tok * tpot))
    return out


def knee_batch(perf: PerfModel, max_batch: int, tpot_ratio: float) -> int:
    """Largest B with ``TPOT(B) ≤ ratio × floor(B)`` (at least 1), ``floor(B)`` the work a
    step of B shares among its sequences (:meth:`PerfModel.knee_floor_seconds`: the
    weight-read floor; with LoRA also the kernels of the adapters the B requests hold).

    The floor does not depend on the prompts, and TPOT(B) grows with B and with the work per
    sequence, so the knee only moves left as prompts grow: sizing stays monotone. With a
    floor that is constant, ``TPOT = a + b·B`` gives ``B = (ratio − 1)·a/b``, where the
    throughput's elasticity to the batch falls to ``1/ratio`` (½ at the default); shared
    work that grows with B and then saturates (distinct adapters) keeps the rule at the
    batch past its growth where the elasticity is back at ``1/ratio``.
    """
    return max(
        1,
        _largest(
            1,
            max_batch,
            lambda b: perf.tpot_seconds(b) <= tpot_ratio * perf.knee_floor_seconds(b),
        ),
    )


def slo_batch(
    perf: PerfModel,
    slo: Slo,
    inputs: TokenDistribution,
    outputs: TokenDistribution,
    max_num_seqs: int,
    hint: float | None = None,
) -> float | None:
    """The largest batch (≤ maxNumSeqs) meeting every SLO that is set: None with no SLO, 0 when
    even the lightest load misses, a fraction when only a mostly idle replica meets them.
    Memoized on the timing model; ``hint`` (a nearby answer) narrows the search."""
    if not slo.any_set:
        return None
    key = ("slo_batch", slo, inputs, outputs, max_num_seqs)
    memo = perf.search_memo
    if key in memo:
        return memo[key]

    def ok(b: float) -> bool:  # ``_largest`` probes integers, ``_largest_fraction`` (0, 1)
        return meets_slos(perf, slo, b, inputs, outputs)

    guess = int(hint) if hint is not None and hint >= 1 else None
    whole = _largest(1, max_num_seqs, ok, guess)
    found = float(whole) if whole >= 1 else _largest_fraction(ok)
    memo[key] = found
    return found


def find_operating_point(
    perf: PerfModel,
    slo: Slo,
    inputs: TokenDistribution,
    outputs: TokenDistribution,
    max_num_seqs: int,
) -> OperatingPoint:
    knee = min(knee_batch(perf, max_num_seqs, perf.assumptions.knee_tpot_ratio), max_num_seqs)
    has_slo = slo.any_set
    limits: dict[str, float] = {"maxNumSeqs": float(max_num_seqs), "knee": float(knee)}
    slo_b = slo_batch(perf, slo, inputs, outputs, max_num_seqs) if has_slo else None
    if slo_b is not None and slo_b > 0:
        limits["SLO"] = slo_b
    limited_by = min(limits, key=lambda k: limits[k])
    safe = min(max_num_seqs, max(math.floor(slo_b), 1)) if slo_b is not None else max_num_seqs
    return OperatingPoint(
        batch=limits[limited_by],
        slo_batch=slo_b,
        knee=knee,
        limited_by=limited_by,
        safe_concurrency=safe,
    )
