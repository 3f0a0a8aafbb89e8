"""PURE: capacity sized for the arrival process actually seen, not for Poisson arrivals.

**The statistic** (read by ``metrics/promql.py`` from Prometheus, and by the simulator from its
own counters, ``simulation/observe.py``: the same definition). Requests reaching their first
token (the TTFT histogram's ``_count``, the arrival rate the engine plans for) are counted per
``COUNT_WINDOW_S`` (15 s) window, at steps ``COUNT_WINDOW_S`` apart over the last
``DISPERSION_RANGE_S`` (30 min): ``N_k``, the counter's increase from step ``k − 1`` to ``k``.
Three numbers come back: the windows' mean count ``m``, their Allan variance
``A = ½·mean((N_k − N_{k−1})²)`` and how many differences it averages. The **index of
dispersion** is ``I = A / m``: 1 for Poisson arrivals (Var N = E N), about ``c²`` for renewal
arrivals whose inter-arrival times have a coefficient of variation ``c``, far above 1 for short
spikes on top of a steady rate.

Why the Allan variance and not the windows' plain variance: a load that steps or ramps moves
the mean within the half hour, and the plain variance reads that as dispersion (a 10 → 30 RPS
step reads I ≈ 80 a quarter of an hour later). Successive differences cancel a slow trend (the
same step reads I ≈ 4: one window's jump) and keep what changes within 15 s; for independent
windows ``A`` equals the variance.

**The sizing.** The planner's per-replica figures assume Poisson arrivals: the batch a request
decodes in is Poisson around its mean (``planning/performance.py``, ``B + z·√B``), and its
replica count serves the mean. Assumptions, written down:

1. the fleet's count of requests in flight is dispersed like the 15-s arrival counts (a
   request that stays about 15 s; shorter ones see less of the dispersion, so this errs
   towards capacity);
2. that count is normal with variance ``I·m`` (a variance-scaled normal; a negative binomial
   with the same two moments has the same normal limit);
3. the Poisson plan serves its own P99 count, ``m + z·√m`` (z = 2.326), so an over-dispersed
   count needs the capacity of its P99 over that:

       room = (m + z·√(I·m)) / (m + z·√m)      within [1, MAX_DISPERSION_ROOM]

``I ≤ 1`` gives exactly 1 (today's sizing, unchanged); ``room`` never falls as ``I`` rises. The
engine multiplies the model's need by ``max(SLO headroom, room)`` (``scaling/engine.py``): both
answer bursts the rate window cannot see, the learned one from breaches after the fact, this one
from the counts before any breach.

**Off by default** (``spec.scaling.policy.dispersionSizing``): measured on the suite it lifted
attainment only after a bursty service's first cold start (most misses fall before it) while
holding ~27 % more GPU-hours than without it (docs/performance.md); off, the index is still
computed and reported in the decision, and the room is 1.

**When it is not used** (room 1, the reason said): the switch is off, no count was read (an
older operator's Prometheus, a service younger than two windows), fewer than ``MIN_WINDOWS``
differences (under ``MIN_WINDOWS × 15`` s of history: the estimate is noise), no arrivals, or a
value that is not a finite non-negative number.
"""

import math

from pydantic import BaseModel, ConfigDict

from tokenscale.scaling.snapshot import Snapshot

COUNT_WINDOW_S = 15.0
"""One count: the usual scrape interval, the resolution arrivals are seen at."""
DISPERSION_RANGE_S = 1800.0
"""The counts' history: half an hour (bursts minutes apart appear several times)."""
MIN_WINDOWS = 8
"""Differences needed before the index is used: two minutes of counts (the rate window)."""
Z_P99 = 2.326
MAX_DISPERSION_ROOM = 2.0
"""The same ceiling as the learned SLO headroom (``scaling/headroom.py``)."""


class Dispersion(BaseModel):
    """The arrival counts' dispersion and the room it asks for (written into the decision)."""

    model_config = ConfigDict(frozen=True)

    index: float | None
    """Allan variance ÷ mean of the 15-s counts; None when not usable (``reason`` says why)."""
    mean_count: float | None
    windows: int
    room: float
    """The multiplier on the model's need (1: Poisson sizing, as before)."""
    reason: str


def room_for(index: float, mean_count: float, z: float = Z_P99) -> float:
    """``(m + z√(I·m)) / (m + z√m)`` within ``[1, MAX_DISPERSION_ROOM]``; exactly 1 for
    ``I ≤ 1`` (see the module docstring)."""
    if index <= 1.0 or mean_count <= 0.0:
        return 1.0
    poisson = mean_count + z * math.sqrt(mean_count)
    dispersed = mean_count + z * math.sqrt(index * mean_count)
    return min(MAX_DISPERSION_ROOM, max(1.0, dispersed / poisson))


def _usable(value: float | None) -> bool:
    return value is not None and math.isfinite(value) and value >= 0.0


def dispersion_of(snap: Snapshot, sizing: bool = True) -> Dispersion:
    """The snapshot's arrival dispersion and its room (1 with the reason when not usable, and
    when ``sizing`` is off: ``spec.scaling.policy.dispersionSizing``, the index still
    reported)."""
    mean, allan, windows = (
        snap.arrivals_per_window_mean,
        snap.arrivals_per_window_allan,
        snap.arrival_windows,
    )
    n = int(windows) if windows is not None and math.isfinite(windows) and windows > 0 else 0

    def unused(why: str) -> Dispersion:
        return Dispersion(
            index=None,
            mean_count=mean if _usable(mean) else None,
            windows=n,
            room=1.0,
            reason=f"Poisson sizing: {why}",
        )

    if mean is None or allan is None or windows is None:
        return unused("no arrival counts read (15-s windows over 30 min)")
    if not (_usable(mean) and _usable(allan) and _usable(windows)):
        return unused(
            f"arrival counts not usable (mean {mean!r}, Allan variance {allan!r}, "
            f"windows {windows!r})"
        )
    if n < MIN_WINDOWS:
        return unused(f"{n} count windows, fewer than {MIN_WINDOWS}")
    if mean <= 0.0:
        return unused("no arrivals in the counted windows")
    index = allan / mean
    room = room_for(index, mean)
    verdict = (
        "Poisson or steadier: no room"
        if room <= 1.0
        else f"room ×{room:.2f} for its P99 count against Poisson's"
    )
    if not sizing:
        room, verdict = 1.0, f"{verdict}, not applied (dispersionSizing is off)"
    return Dispersion(
        index=round(index, 4),
        mean_count=round(mean, 4),
        windows=n,
        room=round(room, 4),
        reason=f"arrivals' index of dispersion {index:.2f} (15-s counts, mean {mean:.1f}, "
        f"{n} windows): {verdict}",
    )
