"""Closed forms for the prefill queue and the prefill work a decoding request shares its steps
with: M/G/1 waits (Pollaczek–Khinchine), a compound Poisson quantile, lognormal spreads.

Closed forms, and one memoized grid (the wait's tail, about 0.3 ms per load and spread):
the operating point's searches ask for these at every batch they probe.

- **Wait, mean** (Pollaczek–Khinchine): ``W = ρ/(1−ρ) · s · (1 + C²)/2`` for Poisson arrivals,
  service ``s`` of squared coefficient of variation ``C²`` (1: exponential, M/M/1; 0:
  identical, M/D/1).
- **Wait, tail**: the Pollaczek–Khinchine (Beneš) form, exact: the wait is a geometric sum of
  residuals ``R`` (the equilibrium excess of one service), ``P(W ≤ t) = (1−ρ)·Σₖ ρᵏ·P(R₁ + … +
  Rₖ ≤ t)``, summed on a grid in one FFT (:func:`_wait_table`). For an unknown spread the
  residual is exponential and this is M/M/1's ``ρ·e^{−t(1−ρ)/s}``; for identical prompts the
  residual is uniform on one prefill, for lognormal prompts the lognormal's residual in closed
  form. At light load the first residual sets the tail (Llama-2-7B, 2,048-token prompts on an
  A100, 0.105 s prefill, at 0.5 req/s: P99 wait 0.088 s, M/M/1 says 0.18 s); at heavy load
  several do (identical prompts at ρ 0.9: a P99 wait of 21.9 prefills, where one residual
  stretched to the P-K mean said 9.9 and a simulated queue waits 21.1, the median of three runs
  of 400,000 arrivals).
- **A prompt that waited** (:class:`BusyTimes`): under chunked prefill the prompts that arrived
  while it waited stand behind it, and the scheduler fills its last step with them up to the
  budget, so it finishes later by their chunk time — a stretch of its wait, until that step is
  full. On a lognormal prompt tail this is where the TTFT P99 lives: short prompts queued
  behind a long one (docs/accuracy.md, "A prompt that waited").
- **Waiting for a seat** (:func:`seat_wait_survival`): a replica's KV pool holds ``c`` mean
  requests at once; a request that finds it full waits for one to finish. The seats in use are
  a birth–death chain whose completion rate at ``k`` in use is the replica's own (its steps
  slow as ``k`` grows): Erlang C generalised. With few seats, or steps dominated by the KV they
  read, the count in use swings far around its mean, and a mean occupancy well inside the pool
  already makes requests wait (docs/accuracy.md, "Waiting for KV").
- **Compound Poisson quantile**: ``n`` events on average, each adding ``x`` (mean ``x̄``,
  lognormal spread ``C²``: ``E[x²] = x̄²(1+C²)``, ``E[x³] = x̄³(1+C²)³``); the total at the
  normal quantile ``z`` corrected for skew (Cornish–Fisher, first order), the Bernoulli part of
  the variance doubled (the arrivals that bring the work also raise the batch).
"""

import math
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Any

from tokenscale.api.workload import TokenDistribution
from tokenscale.planning.bisect import first_true

#: Skew beyond which the Cornish–Fisher correction is held (it is a first-order expansion).
MAX_SKEW = 6.0


def mg1_wait_seconds(rho: float, service_s: float, scv: float) -> float:
    """Pollaczek–Khinchine mean wait: ``ρ/(1−ρ) · s · (1 + C²)/2`` (module docstring)."""
    if rho <= 0 or service_s <= 0:
        return 0.0
    return rho / (1.0 - rho) * service_s * (1.0 + scv) / 2.0


def residual_survival(t: float, service_s: float, scv: float | None) -> float:
    """``P(R > t)`` of the residual (equilibrium excess) of a service of mean ``service_s``:
    exponential when the spread is unknown (None: its own residual), uniform on ``[0, s]`` for
    identical services (``C² = 0``), else of the lognormal with that ``C²``:
    ``E[(S − t)⁺]/E[S] = Φ(d₁) − (t/s)·Φ(d₂)``, ``d₁ = (μ + σ² − ln t)/σ``, ``d₂ = d₁ − σ``."""
    return residual(service_s, scv)(t)


def residual(service_s: float, scv: float | None) -> Callable[[float], float]:
    """:func:`residual_survival` of one service as a function of ``t``, its constants (μ, σ)
    worked out once: the quantile searches below evaluate it hundreds of times per call."""
    if service_s <= 0:
        return lambda t: 1.0 if t <= 0 else 0.0
    if scv is None:
        rate = 1.0 / service_s
        return lambda t: 1.0 if t <= 0 else math.exp(-t * rate)
    if scv <= 1e-9:
        return lambda t: 1.0 if t <= 0 else max(0.0, 1.0 - t / service_s)
    top, sigma_root2, shift = _lognormal_residual(service_s, scv)
    erfc, log = math.erfc, math.log

    def survival(t: float) -> float:
        if t <= 0:
            return 1.0
        d1 = (top - log(t)) / sigma_root2  # d₁/√2
        return max(0.0, 0.5 * erfc(-d1) - t / service_s * 0.5 * erfc(shift - d1))

    return survival


_ROOT2 = math.sqrt(2.0)


def _lognormal_residual(service_s: float, scv: float) -> tuple[float, float, float]:
    """The constants of a lognormal service's residual (:func:`residual_survival`):
    ``μ + σ²``, ``σ√2`` and ``σ/√2``, so that ``d₁/√2 = (μ + σ² − ln t)/(σ√2)``."""
    sigma2 = math.log1p(scv)
    sigma_root2 = math.sqrt(sigma2) * _ROOT2
    return math.log(service_s) + sigma2 / 2.0, sigma_root2, sigma2 / sigma_root2


def wait_survival(t: float, rho: float, service_s: float, scv: float | None) -> float:
    """``P(W > t)`` of the M/G/1 wait (module docstring, :func:`wait_survival_fn`)."""
    return wait_survival_fn(rho, service_s, scv)(t)


def wait_survival_fn(rho: float, service_s: float, scv: float | None) -> Callable[[float], float]:
    """``P(W > t)`` as a function of ``t``: M/M/1's ``ρ·e^{−t(1−ρ)/s}`` when the spread is
    unknown (None), else the Pollaczek–Khinchine (Beneš) sum over the residuals of a service of
    mean ``service_s`` and spread ``scv`` (:func:`_wait_table`), worked out once per queue."""
    if rho <= 0 or service_s <= 0:
        return lambda t: 0.0
    if scv is None:
        decay = (1.0 - rho) / service_s
        return lambda t: rho if t <= 0 else rho * math.exp(-t * decay)
    unit, table = _wait_table(min(rho, _RHO_MAX), float(f"{max(scv, 0.0):.3g}"))
    step = unit * service_s
    last = len(table) - 1

    def survival(t: float) -> float:
        # the table's point k holds the waits within half a step of k·step: P(W > (k + ½)·step)
        # is its k-th entry, and between entries the survival is taken linear
        if t <= 0:
            return rho
        x = t / step - 0.5
        if x < 0:
            return rho + (table[0] - rho) * (x + 0.5) * 2.0
        i = int(x)
        if i >= last:
            return 0.0  # past the grid: less than _WAIT_LEFT of the wait lies there
        return table[i] + (table[i + 1] - table[i]) * (x - i)

    return survival


_RHO_MAX = 0.999
_WAIT_POINTS = 1 << 12
"""Grid points of :func:`_wait_table` (the FFT's length is twice that: no wrap-around)."""
_WAIT_LEFT = 1e-7
"""The wait's mass past the grid that :func:`_wait_table` accepts (else it widens the grid)."""


@lru_cache(maxsize=1024)
def _wait_table(rho: float, scv: float) -> "tuple[float, array[float]]":
    """(grid step, ``P(W > (k + ½)·step)`` for k = 0 … N−1) of the M/G/1 wait in units of the
    mean service (the wait scales with it; 32 KB a table), exactly up to the grid:
    ``P(W ≤ t) = (1−ρ)·Σₖ ρᵏ·P(R₁ + … + Rₖ ≤ t)`` (Beneš), ``R`` the residual of one service
    (:func:`residual`), discretised to the nearest grid point and summed in one FFT: the
    transform of the wait is ``(1−ρ) / (1 − ρ·R̂)``. The grid spans a power of two past 30 P-K
    means and past the residual's own reach, and doubles until less than :data:`_WAIT_LEFT` of
    the wait lies past it. ``scv`` comes rounded to three significant figures (the residual's
    grid is then shared by the queues of one workload)."""
    import numpy as np  # noqa: PLC0415 (the CLI loads NumPy only when a queue's tail is asked)

    n = _WAIT_POINTS
    mean_wait = mg1_wait_seconds(rho, 1.0, scv)
    # past the queue's own decay (30 P-K means), and past where one residual alone leaves the
    # wait less than the mass allowed (the tail of a heavy service is one long residual ahead)
    reach = _residual_quantile(scv, _WAIT_LEFT * (1.0 - rho) / rho)
    octave = math.ceil(math.log2(max(30.0 * max(mean_wait, (1.0 + scv) / 2.0), reach)))
    for _ in range(16):
        pmf = np.zeros(2 * n)
        pmf[:n] = _residual_pmf(scv, octave)
        transform = np.fft.rfft(pmf)
        wait_pmf = np.fft.irfft((1.0 - rho) / (1.0 - rho * transform), 2 * n)[:n]
        cdf = np.cumsum(wait_pmf)
        if 1.0 - float(cdf[-1]) <= _WAIT_LEFT:
            break
        octave += 1
    return 2.0**octave / n, array("d", np.clip(1.0 - cdf, 0.0, 1.0).tobytes())


def _residual_quantile(scv: float, tail: float) -> float:
    """The ``t`` a unit-mean service's residual exceeds with probability ``tail``
    (:func:`residual`, by bisection on a doubling bracket)."""
    survival = residual(1.0, scv)
    hi = 1.0
    while survival(hi) > tail and hi < 1e12:
        hi *= 2.0
    return tail_point(survival, tail, 0.0, hi, 60, 1e-3)


@lru_cache(maxsize=256)
def _residual_pmf(scv: float, octave: int) -> Any:
    """The residual of a unit-mean service of spread ``scv`` on :data:`_WAIT_POINTS` points
    spanning ``2^octave`` (:func:`residual`'s closed forms over an array): each point's mass is
    the residual's between the midpoints beside it, what lies past the grid at its end."""
    import numpy as np  # noqa: PLC0415

    n = _WAIT_POINTS
    t = (np.arange(n) + 0.5) * (2.0**octave / n)
    if scv <= 1e-9:
        above = np.clip(1.0 - t, 0.0, 1.0)
    else:
        top, sigma_root2, shift = _lognormal_residual(1.0, scv)
        d1 = (top - np.log(t)) / sigma_root2
        above = np.clip(0.5 * _erfc(np, -d1) - t * 0.5 * _erfc(np, shift - d1), 0.0, 1.0)
    masses = np.empty(n)
    masses[0] = 1.0 - above[0]
    masses[1:] = above[:-1] - above[1:]
    masses[-1] += above[-1]
    return masses


def _erfc(np: Any, x: Any) -> Any:
    """``erfc`` over an array (NumPy has none; SciPy's import would cost the CLI a fifth of a
    second): the Chebyshev fit of Press et al., *Numerical Recipes* §6.2, fractional error
    under 1.2·10⁻⁷ everywhere."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = 0.0
    for c in _ERFC_COEFFICIENTS:
        poly = c + t * poly
    ans = t * np.exp(-z * z + poly)
    return np.where(x >= 0, ans, 2.0 - ans)


_ERFC_COEFFICIENTS = (
    0.17087277,
    -0.82215223,
    1.48851587,
    -1.13520398,
    0.27886807,
    -0.18628806,
    0.09678418,
    0.37409196,
    1.00002368,
    -1.26551223,
)
"""The polynomial of :func:`_erfc` in ``t``, highest power first (Horner's order)."""


def tail_point(
    exceed: Callable[[float], float], tail: float, lo: float, hi: float, steps: int, rel_tol: float
) -> float:
    """The least ``x`` in ``[lo, hi]`` with ``exceed(x) ≤ tail`` (``exceed`` falling), by
    bisection to ``rel_tol`` of ``hi`` or ``steps`` halvings; the upper end is returned."""
    return first_true(lambda x: exceed(x) <= tail, lo, hi, steps, rel_tol)


def mg1_wait_quantile_seconds(
    rho: float, service_s: float, scv: float | None, tail: float
) -> float:
    """The wait only a share ``tail`` of arrivals exceed (:func:`wait_survival_fn`): 0 when
    ``ρ ≤ tail``, else found by bisection (closed form for an unknown spread: M/M/1's
    ``s/(1−ρ)·ln(ρ/tail)``)."""
    if rho <= tail or tail <= 0 or service_s <= 0:
        return 0.0
    if scv is None:
        return service_s / (1.0 - rho) * math.log(rho / tail)
    survival = wait_survival_fn(rho, service_s, scv)
    hi = service_s / (1.0 - rho)
    for _ in range(60):
        if survival(hi) <= tail:
            break
        hi *= 2.0
    return tail_point(survival, tail, 0.0, hi, 50, 1e-4)


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


def lognormal_mu_sigma(mean: float, p99: float) -> tuple[float, float]:
    """``(μ, σ)`` of the lognormal with this mean and P99 (``P99/mean = exp(2.326σ − σ²/2)``,
    the smaller root; σ at most 2.326, where that ratio peaks). σ 0 when ``p99 ≤ mean``."""
    if mean <= 0 or p99 <= mean:
        return math.log(max(mean, 1e-300)), 0.0
    sigma = Z_P99 - math.sqrt(max(Z_P99 * Z_P99 - 2.0 * math.log(p99 / mean), 0.0))
    return math.log(mean) - sigma * sigma / 2.0, sigma


def lognormal_scv(mean: float, p99: float) -> float:
    """``C² = exp(σ²) − 1`` of the lognormal with this mean and P99
    (:func:`lognormal_mu_sigma`)."""
    if mean <= 0 or p99 <= mean:
        return 0.0
    _, sigma = lognormal_mu_sigma(mean, p99)
    return math.exp(sigma * sigma) - 1.0


def truncated_lognormal_scv(mean: float, p99: float, most: float) -> float:
    """``C²`` of the lognormal with this mean and P99 cut at ``most`` (no value above it):
    ``E[Xᵏ; X ≤ c] = e^{kμ + k²σ²/2}·Φ((ln c − μ − kσ²)/σ)``, renormalised by ``F(c)``. A heavy
    tail's second moment lives far out (σ 1.47 puts half of it above 24 × the mean), where a
    bounded context has no prompt."""
    if mean <= 0 or p99 <= mean:
        return 0.0
    mu, sigma = lognormal_mu_sigma(mean, p99)
    unit = NormalDist()
    if most <= 0 or sigma <= 0:
        return math.exp(sigma * sigma) - 1.0
    at = (math.log(most) - mu) / sigma
    mass = unit.cdf(at)
    if mass <= 1e-12:  # nothing below the cut: no spread left to measure
        return 0.0
    first = math.exp(mu + sigma * sigma / 2.0) * unit.cdf(at - sigma) / mass
    second = math.exp(2.0 * mu + 2.0 * sigma * sigma) * unit.cdf(at - 2.0 * sigma) / mass
    return max(second / (first * first) - 1.0, 0.0)


def prompt_scv(tokens: TokenDistribution, most: float | None = None) -> float | None:
    """The prompts' ``C²`` for the prefill queue and the TPOT tail: the lognormal's through the
    stated mean and P99 (P99 = mean: identical prompts, 0), cut at ``most`` tokens when given
    (the longest prompt vLLM accepts: ``--max-model-len`` less the P99 answer; a longer one is
    refused and never queues), or None when no P99 is stated (the timing model then takes 1,
    exponential: M/M/1's convention)."""
    if tokens.p99 is None:
        return None
    if most is None or most <= tokens.p99:
        return lognormal_scv(tokens.mean, tokens.p99)
    return truncated_lognormal_scv(tokens.mean, tokens.p99, most)


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
    mu, sigma = lognormal_mu_sigma(mean, p99)
    return tuple((math.exp(mu + sigma * z), w) for z, w in LOGNORMAL_BINS)


_MOMENT_Z = tuple(-6.0 + 0.25 * i for i in range(57))
"""Normal quantiles of :func:`lognormal_moment_points`: even from −6 to 8 (step 0.25), the right
end far enough out for the moments of a value's square (centred at 4σ in ``z``)."""


@lru_cache(maxsize=512)
def lognormal_moment_points(mean: float, scv: float) -> tuple[tuple[float, float], ...]:
    """(value, weight) points standing for the lognormal with this mean and ``C²`` for its
    moments, where :func:`lognormal_points` resolves its tail: an even grid in the normal
    quantile (accurate for the mean of anything up to quadratic in the value), the points
    rescaled so that their mean is ``mean``. One point at the mean when ``C²`` is nil."""
    if mean <= 0 or scv <= 1e-9:
        return ((max(mean, 0.0), 1.0),)
    sigma2 = math.log1p(scv)
    sigma, mu = math.sqrt(sigma2), math.log(mean) - sigma2 / 2.0
    weights = [math.exp(-z * z / 2.0) for z in _MOMENT_Z]
    total = sum(weights)
    points = [
        (math.exp(mu + sigma * z), w / total) for z, w in zip(_MOMENT_Z, weights, strict=True)
    ]
    scale = mean / sum(n * w for n, w in points)
    return tuple((n * scale, w) for n, w in points)


def seat_wait_survival(
    t: float, seats: int, arrival_rps: float, completion_rps: Callable[[int], float]
) -> float:
    """P(a request waits longer than ``t`` for one of ``seats``): the seats in use as a
    birth–death chain — arrivals at ``arrival_rps``, completions at ``completion_rps(k)`` with
    ``k`` in use (a replica's steps slow as its batch grows, so ``k`` holders finish at less
    than ``k`` times one's rate) — with ``π(k) ∝ Π λ/μ(j)``; past ``seats`` the queue drains at
    ``μ(seats)``. A request that finds every seat taken waits an exponential of rate
    ``μ(seats) − λ``: ``P(W > t) = P(N ≥ seats) · e^{−(μ(seats) − λ)·t}``. With ``μ(k) = k/S``
    this is Erlang C (M/M/c); with ``μ(k)`` flat it is M/M/1. Summed in logarithms (a pool of
    thousands of seats stays finite)."""
    if arrival_rps <= 0.0:
        return 0.0
    if seats < 1:
        return 1.0
    full_rate = completion_rps(seats)
    if full_rate <= arrival_rps:
        return 1.0
    log_lam = math.log(arrival_rps)

    def step(k: int) -> float:
        """log π(k) − log π(k − 1)."""
        return log_lam - math.log(completion_rps(k))

    # the chain's mode (completions first outpace arrivals there); the weights fall away from
    # it on both sides, so the sum starts where they are below e^−40 of it (a pool of
    # thousands of seats costs the states near its mode and its top, not all of them)
    lo, hi = 0, seats
    while lo < hi:
        mid = (lo + hi) // 2
        if completion_rps(mid + 1) >= arrival_rps:
            hi = mid
        else:
            lo = mid + 1
    mode = lo
    total, log_w = 1.0, 0.0
    for k in range(mode, 0, -1):
        log_w -= step(k)
        if log_w < -40.0:
            break
        total += math.exp(log_w)
    log_w = 0.0
    for k in range(mode + 1, seats + 1):
        log_w += step(k)
        if log_w < -40.0:  # past the mode the weights only fall: the top is out of reach
            return 0.0
        total += math.exp(log_w)
    # states ≥ seats: π(seats) / (1 − λ/μ(seats)), a geometric tail
    top = math.exp(log_w) if seats > mode else 1.0
    beyond = top * arrival_rps / full_rate / (1.0 - arrival_rps / full_rate)
    waits = (top + beyond) / (total + beyond)
    return waits * math.exp(-(full_rate - arrival_rps) * max(t, 0.0))


@dataclass(frozen=True)
class BusyTimes:
    """What a prompt that found the prefill queue busy takes (:func:`sum_quantile`): its own
    seconds per ``own`` point, the seconds its finish moves per second it waited, and the
    wait after which its last step is full (per point)."""

    seconds: tuple[float, ...]
    stretch: float
    cap_s: tuple[float, ...]


def sum_quantile(
    own: tuple[tuple[float, float], ...],
    rho: float,
    service_s: float,
    scv: float | None,
    tail: float,
    busy: BusyTimes | None = None,
) -> float:
    """The time only a share ``tail`` exceed of ``own + wait``: ``own`` a distribution of
    (seconds, weight) points, the wait independent of it (:func:`wait_survival` of the prefill
    queue at ``ρ`` with service ``service_s`` and spread ``scv``). Bisection on
    ``Σ w·P(wait > t − own)``.

    ``busy`` (:class:`BusyTimes`): the ``ρ`` that found the queue busy take their own time as
    ``busy.seconds`` plus ``busy.stretch`` per second waited — the prompts that arrived
    meanwhile share their last step — for at most ``busy.cap_s`` of the wait (that step is
    then full); the ``1 − ρ`` that found it empty, ``own``. A prompt that waited ``W`` then
    exceeds ``x`` when ``W > w*``, ``w* + t_busy + stretch·min(w*, cap) = x``. Without
    ``busy`` both are ``own`` and this is the sum above."""
    times = busy.seconds if busy is not None else tuple(t for t, _ in own)
    caps = busy.cap_s if busy is not None else tuple(0.0 for _ in own)
    stretch = busy.stretch if busy is not None else 0.0
    lo = min(t for t, _ in own)
    wait_hi = mg1_wait_quantile_seconds(rho, service_s, scv, tail)
    hi = max(t + stretch * c for t, c in zip(times, caps, strict=True)) + wait_hi * (1 + stretch)
    hi += 1e-9

    survival = wait_survival_fn(rho, service_s, scv)

    def waited_past(room: float, cap: float) -> float:
        """The wait beyond which a prompt with ``room`` seconds left (after its busy time)
        exceeds: ``w + stretch·min(w, cap) = room``."""
        w = room / (1.0 + stretch)
        return w if w <= cap else room - stretch * cap

    def exceed(x: float) -> float:
        total = 0.0
        for (t, w), t_busy, cap in zip(own, times, caps, strict=True):
            if t > x:
                total += w
            elif rho > 0:
                room = x - t_busy
                total += w * (rho if room <= 0 else survival(waited_past(room, cap)))
        return total

    if exceed(lo) <= tail:
        return lo
    return tail_point(exceed, tail, lo, hi, 40, 1e-4)
