"""Serving knobs chosen for the SLO: the chunk budget (``--max-num-batched-tokens``) and
``--max-num-seqs``.

With chunked prefill every scheduler step carries the running decodes plus prompt chunks up to
the budget, so a decode that shares a step with a full chunk waits for it: the budget bounds
the TPOT tail (:meth:`PerfModel.tpot_quantile_seconds`). A smaller budget cuts that stall but
reads the weights once more per chunk, so prefill (TTFT, throughput) gets slower. The planner
keeps vLLM's default unless the default's chunk costs more than a tenth of the TPOT SLO; then
it tries the budgets below it and keeps the one that lets a replica complete the most requests
per second within every SLO (ties: the larger budget), if that is at least 5 % more than at
the default. A value the user sets wins; it is
checked, and a warning says when it makes the SLO unreachable and which budget would not.
vLLM requires ``max_num_batched_tokens ≥ max_num_seqs``, so a smaller budget lowers the
sequence cap with it.
"""

from collections.abc import Callable
from dataclasses import dataclass

from tokenscale.api.slo import Slo
from tokenscale.api.workload import TokenDistribution
from tokenscale.planning.operating_point import slo_batch
from tokenscale.planning.performance import PerfModel

CHUNK_CHOICES = (512, 1024, 2048, 4096, 8192, 16384)
MATERIAL_SHARE_OF_TPOT_SLO = 0.1
MATERIAL_GAIN = 1.05
"""A smaller budget replaces vLLM's default only for at least 5 % more requests per replica:
the model's edge on a marginal difference is within its own error."""


@dataclass(frozen=True)
class Knobs:
    max_num_batched_tokens: int
    max_num_seqs: int
    reason: str
    chosen: bool
    """True when the planner changed vLLM's default for the SLO."""
    warnings: tuple[str, ...] = ()


def _capacity(
    perf: PerfModel,
    slo: Slo,
    i: TokenDistribution,
    o: TokenDistribution,
    seqs: int,
    hint: float | None = None,
) -> tuple[float, float | None]:
    """(requests/s a replica completes at the largest batch within the SLOs, that batch); the
    knee aside: the budget is chosen for what the SLOs allow."""
    batch = slo_batch(perf, slo, i, o, seqs, hint)
    if batch is None or batch <= 0:
        return 0.0, batch
    return perf.request_rate(min(batch, float(seqs))), batch


def choose_knobs(
    perf_for: Callable[[int], PerfModel],
    slo: Slo,
    inputs: TokenDistribution,
    outputs: TokenDistribution,
    default_budget: int,
    default_seqs: int,
    user_budget: int | None,
    user_seqs: int | None,
    chunked_prefill: bool,
) -> Knobs:
    seqs = user_seqs or default_seqs
    if user_budget is not None:
        return _check_user(perf_for, slo, inputs, outputs, user_budget, seqs, default_budget)
    tpot_slo = slo.tpot_p99_seconds or slo.tpot_p95_seconds
    if not chunked_prefill or tpot_slo is None:
        return Knobs(default_budget, seqs, f"vLLM's default chunk budget {default_budget:,}", False)
    base = perf_for(default_budget)
    stall = base.tail_chunk_seconds
    if stall <= MATERIAL_SHARE_OF_TPOT_SLO * tpot_slo:
        return Knobs(
            default_budget,
            seqs,
            f"vLLM's default chunk budget {default_budget:,}: its largest chunk adds "
            f"{stall * 1e3:,.1f} ms to a decode step (≤ {MATERIAL_SHARE_OF_TPOT_SLO:.0%} of the "
            f"TPOT SLO)",
            False,
        )
    scores: dict[int, tuple[float, float]] = {}
    # every budget from the default down: capacity need not be single-peaked in the budget
    # (a smaller chunk shortens the stall, but each chunk step pays the decodes' weight reads
    # and, under a backlog, a tail request's every step carries a chunk)
    budgets = sorted({b for b in (*CHUNK_CHOICES, default_budget) if b <= default_budget})
    hint: float | None = None
    for budget in reversed(budgets):
        perf = base if budget == default_budget else perf_for(budget)
        rate, hint = _capacity(perf, slo, inputs, outputs, min(seqs, budget), hint)
        scores[budget] = (rate, perf.tail_chunk_seconds)
    best = max(scores, key=lambda b: (scores[b][0], b))
    rate, best_stall = scores[best]
    default_rate = scores.get(default_budget, (0.0, stall))[0]
    if (
        rate <= 0.0
        or best == default_budget
        or (default_rate > 0.0 and rate < MATERIAL_GAIN * default_rate)
    ):
        why = (
            "no smaller budget meets the SLOs either"
            if rate <= 0
            else f"no smaller budget serves {MATERIAL_GAIN - 1:.0%} more"
        )
        return Knobs(
            default_budget,
            seqs,
            f"vLLM's default chunk budget {default_budget:,} ({why}; its largest chunk adds "
            f"{stall * 1e3:,.1f} ms to a decode step)",
            False,
        )
    reason = (
        f"chunk {best:,}: a {default_budget:,}-token chunk adds {stall * 1e3:,.0f} ms to every "
        f"decode step it shares, a {best:,}-token one {best_stall * 1e3:,.0f} ms; a replica "
        f"completes {rate:,.2f} req/s within the SLOs at {best:,} "
        f"(vs {default_rate:,.2f} at {default_budget:,})"
    )
    if seqs > best:
        reason += f"; maxNumSeqs lowered to {best:,} (vLLM needs the budget ≥ maxNumSeqs)"
    return Knobs(best, min(seqs, best), reason, True)


def _check_user(
    perf_for: Callable[[int], PerfModel],
    slo: Slo,
    inputs: TokenDistribution,
    outputs: TokenDistribution,
    budget: int,
    seqs: int,
    default_budget: int,
) -> Knobs:
    reason = f"spec.serving.maxNumBatchedTokens={budget:,} (set by the user)"
    if not slo.any_set or _capacity(perf_for(budget), slo, inputs, outputs, seqs)[0] > 0:
        return Knobs(budget, seqs, reason, False)
    better = [
        b
        for b in CHUNK_CHOICES
        if b != budget
        and b <= max(default_budget, budget)
        and _capacity(perf_for(b), slo, inputs, outputs, min(seqs, b))[0] > 0
    ]
    hint = f"; {max(better):,} would meet them" if better else ""
    return Knobs(
        budget,
        seqs,
        reason,
        False,
        (
            f"spec.serving.maxNumBatchedTokens={budget:,} makes the SLOs unreachable at any "
            f"batch{hint}",
        ),
    )
