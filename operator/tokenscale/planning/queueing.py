"""Closed forms for the prefill queue and the prefill work a decoding request shares its steps
with: M/G/1 waits (Pollaczek–Khinchine), a compound Poisson quantile, lognormal spreads.

All closed form (no grids, no iteration past a memoized one-dimensional solve): the operating
point's searches ask for these at every batch they probe.

- **Wait, mean** (Pollaczek–Khinchine): ``W = ρ/(1−ρ) · s · (1 + C²)/2`` for Poisson arrivals,
  service ``s`` of squared coefficient of variation ``C²`` (1: exponential, M/M/1; 0:
  identical, M/D/1).
- **Wait, tail**: a share ``ρ`` of arrivals wait at all, and those wait ``W/ρ`` on average. Their
  wait is taken as a Weibull of that mean whose squared coefficient of variation is the
  residual service's (:func:`residual_scv`): a third for identical prompts, where the wait is the
  rest of one prefill, about uniform — lighter than exponential; ``(1 + 4C²)/3`` for lognormal
  prompts, whose long ones leave long residuals; 1 (exponential, M/M/1's exact tail) when the
  spread is unknown. Llama-2-7B, 2,048-token prompts on an A100 (0.105 s prefill) at 0.5 req/s:
  P99 wait 0.083 s where M/M/1 says 0.18 (the exact M/D/1 wait is 0.085).
- **Compound Poisson quantile**: ``n`` events on average, each adding ``x`` (mean ``x̄``,
  lognormal spread ``C²``: ``E[x²] = x̄²(1+C²)``, ``E[x³] = x̄³(1+C²)³``); the total at the
  normal quantile ``z`` corrected for skew (Cornish–Fisher, first order), the Bernoulli part of
  the variance doubled (the arrivals that bring the work also raise the batch).
"""

import math
from functools import lru_cache
from statistics import NormalDist

from tokenscale.api.workload import TokenDistribution

#: Skew beyond which the Cornish–Fisher correction is held (it is a first-order expansion).
MAX_SKEW = 6.0


def mg1_wait_seconds(rho: float, service_s: float, scv: float) -> float:
    """Pollaczek–Khinchine mean wait: ``ρ/(1−ρ) · s · (1 + C²)/2`` (module docstring)."""
    if rho <= 0 or service_s <= 0:
        return 0.0
    return rho / (1.0 - rho) * service_s * (1.0 + scv) / 2.0


@lru_cache(maxsize=256)
def weibull_shape(scv: float) -> float:
    """The Weibull shape ``β`` whose squared coefficient of variation is ``scv``:
    ``Γ(1 + 2/β) / Γ(1 + 1/β)² − 1`` falls from ∞ to 0 as β grows (β = 1: 1, exponential)."""
    target = max(scv, 1e-3)
    lo, hi = 0.2, 20.0
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        got = math.gamma(1.0 + 2.0 / mid) / math.gamma(1.0 + 1.0 / mid) ** 2 - 1.0
        if got > target:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


def residual_scv(scv: float | None) -> float:
    """The squared coefficient of variation of a lognormal service's residual (the equilibrium
    excess, ``E[S³]/(3E[S])`` over ``(E[S²]/(2E[S]))²``): ``(1 + 4C²)/3`` — a third for
    identical services; 1 (the exponential's own residual) when the spread is unknown (None)."""
    if scv is None:
        return 1.0
    return (1.0 + 4.0 * max(scv, 0.0)) / 3.0


def mg1_wait_quantile_seconds(
    rho: float, service_s: float, scv: float, tail: float, wait_scv: float = 1.0
) -> float:
    """The wait only a share ``tail`` of arrivals exceed (module docstring): 0 when ``ρ ≤
    tail``, else the Weibull of mean ``W/ρ`` (``W`` from the service's ``C²``) and squared
    coefficient of variation ``wait_scv`` (:func:`residual_scv`), at ``P(W > t) = tail``."""
    if rho <= tail or tail <= 0 or service_s <= 0:
        return 0.0
    conditional_mean = mg1_wait_seconds(rho, service_s, scv) / rho
    beta = weibull_shape(wait_scv)
    scale = conditional_mean / math.gamma(1.0 + 1.0 / beta)
    return float(scale * math.log(rho / tail) ** (1.0 / beta))


def compound_quantile(
    events: float, mean_each: float, scv: float, z: float, stretch: float = 1.0
) -> float:
    """The total of a compound Poisson sum at the normal quantile ``z`` (module docstring):
    ``n·x̄ + q·σ·stretch``, ``σ² = n·(E[x²] + x̄²)``, ``q = z + (z² − 1)·γ/6``,
    ``γ = n·E[x³]/σ³``; ``stretch`` widens the deviation (a busy period's ``1/(1 − ρ)``)."""
    if events <= 0 or mean_each <= 0:
        return 0.0
    spread = 1.0 + max(scv, 0.0)
    second = mean_each * mean_each * spread
    variance = events * (second + mean_each * mean_each)
    sigma = math.sqrt(variance)
    skew = min(MAX_SKEW, events * mean_each**3 * spread**3 / (sigma * variance))
    q = z + (z * z - 1.0) * skew / 6.0
    return events * mean_each + q * sigma * stretch


Z_P99 = 2.326


def lognormal_scv(mean: float, p99: float) -> float:
    """``C² = exp(σ²) − 1`` of the lognormal with this mean and P99 (``P99/mean =
    exp(2.326σ − σ²/2)``, the smaller root; σ at most 2.326, where that ratio peaks)."""
    if mean <= 0 or p99 <= mean:
        return 0.0
    sigma = Z_P99 - math.sqrt(max(Z_P99 * Z_P99 - 2.0 * math.log(p99 / mean), 0.0))
    return math.exp(sigma * sigma) - 1.0


def prompt_scv(tokens: TokenDistribution) -> float | None:
    """The prompts' ``C²`` for the prefill queue and the TPOT tail: the lognormal's through the
    stated mean and P99 (P99 = mean: identical prompts, 0), or None when no P99 is stated
    (the timing model then takes 1, exponential: M/M/1's convention)."""
    if tokens.p99 is None:
        return None
    return lognormal_scv(tokens.mean, tokens.p99)


def _bins() -> tuple[tuple[float, float], ...]:
    """(standard normal quantile, weight) of bins even in ``−log10(1 − p)``, four decades: the
    tail resolved as finely as the body, each bin at its middle probability."""
    unit = NormalDist()
    points = []
    for i in range(_GRID_POINTS):
        lo = 1.0 - 10.0 ** (-_GRID_DECADES * i / _GRID_POINTS)
        hi = 1.0 - 10.0 ** (-_GRID_DECADES * (i + 1) / _GRID_POINTS)
        mid = 1.0 - 10.0 ** (-_GRID_DECADES * (i + 0.5) / _GRID_POINTS)
        points.append((unit.inv_cdf(mid), hi - lo))
    return tuple(points)


_GRID_DECADES = 4.0
_GRID_POINTS = 12
LOGNORMAL_BINS = _bins()
"""The fixed quadrature of :func:`lognormal_points` (computed once)."""


@lru_cache(maxsize=512)
def lognormal_points(mean: float, p99: float) -> tuple[tuple[float, float], ...]:
    """(value, weight) points standing for the lognormal with this mean and P99 (a point mass
    at the mean when ``p99 ≤ mean``); the weights sum to 1 − 10⁻⁴ (the rest lies past them)."""
    if mean <= 0 or p99 <= mean:
        return ((max(mean, 0.0), 1.0),)
    sigma = Z_P99 - math.sqrt(max(Z_P99 * Z_P99 - 2.0 * math.log(p99 / mean), 0.0))
    mu = math.log(mean) - sigma * sigma / 2.0
    return tuple((math.exp(mu + sigma * z), w) for z, w in LOGNORMAL_BINS)


def sum_quantile(
    own: tuple[tuple[float, float], ...],
    rho: float,
    wait_s: float,
    wait_scv: float,
    tail: float,
) -> float:
    """The time only a share ``tail`` exceed of ``own + wait``: ``own`` a distribution of
    (seconds, weight) points, the wait independent of it, 0 with probability ``1 − ρ`` and else
    the Weibull of :func:`mg1_wait_quantile_seconds` with mean ``wait_s/ρ``. Bisection on
    ``Σ w·P(wait > t − own)``."""
    top = max(t for t, _ in own)
    if rho <= 0 or wait_s <= 0:
        lo, hi = min(t for t, _ in own), top
        rho = 0.0
        scale = beta = 1.0
    else:
        beta = weibull_shape(wait_scv)
        scale = wait_s / rho / math.gamma(1.0 + 1.0 / beta)
        lo = min(t for t, _ in own)
        hi = top + scale * max(math.log(rho / tail), 0.0) ** (1.0 / beta) + 1e-9

    def exceed(x: float) -> float:
        total = 0.0
        for t, w in own:
            if t > x:
                total += w
            elif rho > 0:
                total += w * rho * math.exp(-(((x - t) / scale) ** beta))
        return total

    if exceed(lo) <= tail:
        return lo
    for _ in range(40):
        mid = (lo + hi) / 2.0
        if exceed(mid) > tail:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-4 * hi:
            break
    return hi
