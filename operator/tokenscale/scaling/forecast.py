"""PURE: the arrival rate one lead time ahead, and burst headroom from the traffic itself.

**Forecast**: Holt's linear smoother (a level and a trend) over the request rate the metrics
show at each decision, with time constants in seconds so decisions need not be evenly spaced:

    a = 1 − exp(−dt / LEVEL_TAU_S),  b = 1 − exp(−dt / TREND_TAU_S)
    level' = a·r + (1 − a)·(level + trend·dt)
    trend' = b·(r − r_prev) / dt + (1 − b)·trend
    expected(h) = max(r, level' + max(trend', 0)·h)

The trend follows the observed rate's own changes (``r − r_prev``), not Holt's
``level' − level``: on a ramp the two agree once the level has caught up, but after a step
the level goes on catching up with a rate that has stopped rising, and fed by it the trend
kept projecting the step. A step seen through the rate window is a ramp for one window and
then flat; from then on the trend only decays (held-out ``step-down``: 49.8 RPS expected
90 s after the window had filled at 29, and a third replica asked for; docs/performance.md).

A run of the smoother (a fresh service, or after a long gap) learns no trend until one rate
window has passed since its first observation: ``rate()`` over a window that began before the
engines' first sample divides the requests seen by the whole window, so flat traffic reads as
a ramp from 0 to its rate (1.5 RPS of long answers: 0.17 → 1.5 over the first two minutes, a
trend that took the expectation one lead time ahead to 2.6 RPS and held a replica too many for
five minutes).

Only a rising trend moves the expectation above what is seen now: a forecast may add replicas
before the load arrives, never remove them before it has left (scale-down stays the careful
path). ``h`` is the lead time — how long a new replica takes from creation to Ready, measured
from the cluster's pods (``controller/lead_time.py``) or the simulated fleet — plus one
decision interval, plus half the rate window when it is known: ``rate()`` over a window ``W``
is the mean of the last ``W`` seconds, which on a ramp is the rate of ``W/2`` ago, and the
smoother follows that reading, so its level is ``W/2`` old and the expectation must look
``W/2`` further to reach one lead time past *now* (on the mixed suite's ramp the 2-minute
window read 17.9 RPS at 540 s where the trace was at 21; docs/performance.md).

**Burst headroom**: the dispersion of the observed rate around the smoothed one gives
``headroom = 1 + Z·σ / level`` within ``[1, MAX_HEADROOM]``: steady traffic gets none, bursty
traffic gets what its own swings ask for, instead of a fixed redundancy factor. σ² is von
Neumann's estimator over the one-step prediction errors ``e = r − (level + trend·dt)``: half
the mean square of their *successive differences*,

    σ² = EWMA(½·(e − e_prev)²)   (time constant VARIANCE_TAU_S)

A level shift the smoother has not caught up with yet moves the errors' mean slowly — a step
gives a run of large, same-signed errors that shrink as the level catches up, and the squared
errors themselves would read it as burstiness for as long as the EWMA remembers it — while
the differences between successive errors remove a slowly moving mean and keep what changes
from one observation to the next. Assumptions: the errors' mean moves little between two
observations; the rate is a window average (Prometheus' ``rate()``), so a spike shorter than
the window enters it as one jump and leaves as another, and each jump counts in full, while
a change spread over the window (a step seen through the window, a ramp) counts only by its
per-observation increments; fluctuation that is slower than one decision interval reads
small, as a moving level does.

The expectation and the headroom become replicas with the live model's per-replica rate
(the planner's answer at the observed workload and calibration):
``ceil(expected × headroom / rps_per_replica)``.
"""

import math

from pydantic import BaseModel, ConfigDict

from tokenscale.api.status import RateForecast  # the smoother's memory

LEVEL_TAU_S = 60.0
TREND_TAU_S = 180.0
VARIANCE_TAU_S = 600.0
Z = 1.0
MAX_HEADROOM = 1.5
MAX_GAP_S = 900.0
DEFAULT_LEAD_TIME_S = 180.0
"""Until a replica has been seen to start (a fresh service): a typical GPU pod's cold start."""

__all__ = [
    "DEFAULT_LEAD_TIME_S",
    "MAX_GAP_S",
    "Outlook",
    "RateForecast",
    "expected_rps",
    "headroom",
    "outlook",
    "update",
]


class Outlook(BaseModel):
    """What the traffic says one lead time ahead (written into the decision)."""

    model_config = ConfigDict(frozen=True)

    observed_rps: float
    expected_rps: float
    horizon_s: float
    lead_time_s: float
    lead_time_measured: bool
    burst_headroom: float
    replicas: int | None
    """``ceil(expected × headroom / rps_per_replica)``; None without a per-replica rate."""


def update(
    prev: RateForecast | None, rate_rps: float, now_s: float, window_s: float | None = None
) -> RateForecast:
    """One observation; a long gap (or time going back) restarts the smoother. Within one
    rate window (``window_s``) of the run's first observation the rate is read over a window
    that is still filling — ``rate()`` divides the requests seen since the engines' first
    sample by the whole window, so flat traffic reads as a ramp from 0 — and the smoother
    keeps only the level (no trend, no dispersion) until the window is full."""
    if prev is None or now_s <= prev.at_s or now_s - prev.at_s > MAX_GAP_S:
        return RateForecast(level_rps=rate_rps, last_rps=rate_rps, at_s=now_s, since_s=now_s)
    if window_s is not None and prev.since_s is not None and now_s - prev.since_s < window_s:
        return RateForecast(level_rps=rate_rps, last_rps=rate_rps, at_s=now_s, since_s=prev.since_s)
    dt = now_s - prev.at_s
    a = 1.0 - math.exp(-dt / LEVEL_TAU_S)
    b = 1.0 - math.exp(-dt / TREND_TAU_S)
    v = 1.0 - math.exp(-dt / VARIANCE_TAU_S)
    predicted = prev.level_rps + prev.trend_rps_per_s * dt
    level = max(0.0, a * rate_rps + (1.0 - a) * predicted)
    # a memory written before lastRps was kept (an older operator's status): the level's rise
    rise = level - prev.level_rps if prev.last_rps is None else rate_rps - prev.last_rps
    trend = b * rise / dt + (1.0 - b) * prev.trend_rps_per_s
    error = rate_rps - predicted
    change = 0.0 if prev.last_error_rps is None else error - prev.last_error_rps
    variance = v * 0.5 * change * change + (1.0 - v) * prev.variance
    return RateForecast(
        level_rps=level,
        trend_rps_per_s=trend,
        variance=variance,
        last_error_rps=error,
        last_rps=rate_rps,
        at_s=now_s,
        since_s=prev.since_s,
    )


def expected_rps(f: RateForecast, observed_rps: float, horizon_s: float) -> float:
    return max(observed_rps, f.level_rps + max(f.trend_rps_per_s, 0.0) * horizon_s)


def headroom(f: RateForecast) -> float:
    if f.level_rps <= 0:
        return 1.0
    return min(MAX_HEADROOM, 1.0 + Z * math.sqrt(f.variance) / f.level_rps)


def outlook(
    f: RateForecast,
    observed_rps: float,
    lead_time_s: float | None,
    interval_s: float,
    rps_per_replica: float | None,
    window_s: float | None = None,
) -> Outlook:
    lead = DEFAULT_LEAD_TIME_S if lead_time_s is None else max(0.0, lead_time_s)
    horizon = lead + interval_s + (0.0 if window_s is None else window_s / 2.0)
    expected = expected_rps(f, observed_rps, horizon)
    room = headroom(f)
    replicas = (
        math.ceil(expected * room / rps_per_replica - 1e-9)
        if rps_per_replica is not None and rps_per_replica > 0
        else None
    )
    return Outlook(
        observed_rps=observed_rps,
        expected_rps=round(expected, 4),
        horizon_s=horizon,
        lead_time_s=lead,
        lead_time_measured=lead_time_s is not None,
        burst_headroom=round(room, 4),
        replicas=replicas,
    )
