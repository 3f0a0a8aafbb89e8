"""PURE: a quantile read from histogram buckets is a range, not a point.

Prometheus' ``histogram_quantile`` interpolates linearly inside the bucket that holds the
rank, so a TPOT P99 of 0.07 s from vLLM's buckets only says the P99 lies in (0.05, 0.075].
For scale-down the engine reads that range honestly: a latency counts as low when the
interpolated value is below the low watermark, or when its bucket starts below the low
watermark and ends below the SLO (the true P99 may well be low, and cannot be over the SLO).

Scale-up reads latency as attainment (:func:`over_slo` and :func:`latency_breach`): from the
bucket counts over the rate window, the share of requests over the SLO is known only up to
the bucket holding the SLO (its requests may be on either side), so it is a range
``[lower, upper]``. A breach is acted on only when its lower bound is surely over the error
budget ``1 − spec.scaling.targetAttainment`` — more requests surely over the SLO than a fleet
exactly at the budget shows by chance in one window more than once in twenty
(:func:`surely_over_budget`: one request of 96 over is 1.04 % but within chance, three of 100
too, five of 100 not) — or, when the budget lies inside the range, when a load signal reads
high too and the interpolated P99 is above the SLO's own bucket. A P99 that
Prometheus interpolates inside the SLO's own bucket (TTFT SLO 3 s in vLLM's (2.5, 5] bucket
reading 4.25 s while every request met 3 s) is never a breach by itself.
"""

import bisect
import math
from collections.abc import Sequence

import mpmath
from pydantic import BaseModel, ConfigDict, Field

from tokenscale.catalog.vllm_metrics import INTER_TOKEN_BUCKETS, TTFT_BUCKETS

CHANCE = 0.05
"""A breach's lower bound is acted on when a fleet exactly at the error budget would show that
many requests over the SLO (or more) in one window with at most this probability."""

BOUNDS: dict[str, Sequence[float]] = {
    "ttft_p99_s": TTFT_BUCKETS,
    "tpot_p99_s": INTER_TOKEN_BUCKETS,
}


def bucket_range(value: float, bounds: Sequence[float]) -> tuple[float, float]:
    """``(lower, upper]``: the bucket an interpolated quantile ``value`` lies in."""
    i = bisect.bisect_left(bounds, value)
    if i >= len(bounds):
        return (float(bounds[-1]), math.inf)
    return (0.0 if i == 0 else float(bounds[i - 1]), float(bounds[i]))


def reads_low(name: str, value: float, low: float, high: float) -> tuple[bool, str]:
    """Whether a latency quantile counts as low for scale-down, and the range it came from."""
    if value < low:
        return True, ""
    bounds = BOUNDS.get(name)
    if bounds is None:
        return False, ""
    lower, upper = bucket_range(value, bounds)
    return lower < low and upper < high, f" (bucket ({lower:g}, {upper:g}])"


class BucketCounts(BaseModel):
    """Requests observed per bucket of one latency histogram over the rate window, as
    ``sum by (le) (increase(…_bucket[w]))`` answers: counts (Prometheus extrapolates them to the
    window, so not always whole), whose total says how sure a share over the SLO is."""

    model_config = ConfigDict(frozen=True)

    bounds: tuple[float, ...] = Field(description="The finite upper bounds (le), ascending.")
    cumulative: tuple[float, ...] = Field(description="Requests at or below each bound.")
    total: float = Field(description="All requests (the +Inf bucket).")


def over_slo(counts: BucketCounts | None, slo: float) -> tuple[float, float] | None:
    """``(lower, upper)``: the least and the most share of the window's requests that can be
    over ``slo``. Requests above the SLO's bucket are surely over it, those in it may be on
    either side; an SLO on a bucket bound is exact (lower == upper). None: no request."""
    if counts is None or counts.total <= 0 or len(counts.bounds) != len(counts.cumulative):
        return None
    total, bounds, cum = counts.total, counts.bounds, counts.cumulative
    # exact on a bound only when it is the bound: an SLO a rounding above one holds the
    # requests between them on either side (its bucket is the next)
    i = bisect.bisect_left(bounds, slo)
    surely_met = cum[i - 1] if i > 0 else 0.0
    maybe_met = cum[i] if i < len(bounds) else total
    if i < len(bounds) and bounds[i] == slo:
        surely_met = maybe_met
    lower = min(max((total - maybe_met) / total, 0.0), 1.0)
    upper = min(max((total - surely_met) / total, lower), 1.0)
    return lower, upper


def chance_of(over: float, total: float, budget: float) -> float:
    """The probability that ``total`` requests, each over the SLO with probability ``budget``,
    put ``over`` or more over it: the binomial tail ``P(X ≥ over)``, continuous in both counts
    (``I_budget(over, total − over + 1)``) since extrapolated counts are not whole. mpmath's
    regularized incomplete beta, not SciPy's: SciPy's special functions cost the operator
    27 MB resident for this one call (mpmath: 8 MB)."""
    if over <= 0:
        return 1.0
    if budget <= 0:
        return 0.0
    tail = mpmath.betainc(over, max(total - over, 0.0) + 1.0, 0.0, budget, regularized=True)
    return min(max(float(tail), 0.0), 1.0)


def surely_over_budget(lower: float, total: float | None, budget: float) -> bool:
    """Whether a share ``lower`` of ``total`` requests surely over the SLO is more than a fleet
    at the ``budget`` shows by chance (:data:`CHANCE`). No total (a share read from rates):
    the share alone, against the budget."""
    if lower <= budget:
        return False
    if total is None:
        return True
    return chance_of(lower * total, total, budget) <= CHANCE


def in_slo_bucket(value: float, slo: float, bounds: Sequence[float]) -> bool:
    """Whether an interpolated quantile ``value`` lies in the bucket that holds the SLO (the
    bucket ``(lower, upper]`` with ``lower < slo ≤ upper``): it then says nothing about which
    side of the SLO the requests are."""
    lower, upper = bucket_range(value, bounds)
    return lower < slo <= upper


def latency_breach(
    value: float | None,
    slo: float,
    share: tuple[float, float] | None,
    budget: float,
    load_high: bool,
    bounds: Sequence[float] | None,
    total: float | None = None,
) -> tuple[bool, str]:
    """Whether a latency signal is a breach to act on (module docstring), and why, in words.

    ``share``: :func:`over_slo`'s range (None: no bucket counts, the interpolated ``value``
    alone decides, never inside the SLO's own bucket); ``load_high``: a load signal reads high;
    ``total``: the window's requests the share is of (None: the share alone decides).
    """
    inside = value is not None and bounds is not None and in_slo_bucket(value, slo, bounds)
    if share is None:
        if value is None or value < slo:
            return False, ""
        if inside:
            lo, hi = bucket_range(value, bounds or ())
            return False, f" (in the SLO's own bucket ({lo:g}, {hi:g}]: not a breach)"
        return True, ""
    lower, upper = share
    words = f" ({_pct(lower)}–{_pct(upper)} over the SLO, budget {_pct(budget)})"
    if surely_over_budget(lower, total, budget):
        return True, words
    if lower > budget and total is not None:
        over = lower * total
        words = f"{words[:-1]}: {over:.3g} of {total:.3g} requests, within chance)"
    confirmed = load_high and upper > budget and value is not None and value >= slo
    if confirmed and not inside:
        return True, words[:-1] + ", confirmed by load)"
    return False, words


def _pct(share: float) -> str:
    return f"{share * 100:.3g} %"
