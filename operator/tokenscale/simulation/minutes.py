"""PURE: a timeline read once per modelled minute, and two such readings compared.

The playground samples its fleet about once a (wall) second and the simulator once a decision;
to compare the two, both are read at the end of every whole minute of the load: the desired
and ready replicas of the last timeline point at or before ``(m + 1) × 60`` s.
"""

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from tokenscale.simulation.result import PoolsPoint, TimelinePoint

MINUTE_S = 60.0


class MinutePoint(BaseModel):
    """The fleet at the end of modelled minute ``minute`` (0-based)."""

    model_config = ConfigDict(frozen=True)

    minute: int
    t_s: float
    """When the point read was taken (≤ the minute's end)."""
    desired: int
    ready: int


def per_minute(timeline: Sequence[TimelinePoint], duration_s: float) -> list[MinutePoint]:
    """One point per whole minute of ``[0, duration_s]`` that has a timeline point at or before
    its end (minutes before the first point are left out)."""
    return _minutes([(p.t_s, p.replicas_target, p.replicas_ready) for p in timeline], duration_s)


def pool_per_minute(
    timeline: Sequence[PoolsPoint], pool: str, duration_s: float
) -> list[MinutePoint]:
    """:func:`per_minute` for one pool of a fleet of several: its asked and ready replicas at
    each decision (``FleetRun.timeline``)."""
    return _minutes(
        [(p.t_s, p.asked[pool], p.ready.get(pool, 0)) for p in timeline if pool in p.asked],
        duration_s,
    )


def _minutes(readings: Sequence[tuple[float, int, int]], duration_s: float) -> list[MinutePoint]:
    """(time, desired, ready) readings as one point per minute (:func:`per_minute`)."""
    points = sorted(readings, key=lambda r: r[0])
    out: list[MinutePoint] = []
    k = -1
    for m in range(math.ceil(duration_s / MINUTE_S - 1e-9)):
        end = min((m + 1) * MINUTE_S, duration_s)
        while k + 1 < len(points) and points[k + 1][0] <= end + 1e-9:
            k += 1
        if k >= 0:
            t, desired, ready = points[k]
            out.append(MinutePoint(minute=m, t_s=t, desired=desired, ready=ready))
    return out


def disagreements(a: Sequence[MinutePoint], b: Sequence[MinutePoint]) -> list[tuple[int, int, int]]:
    """``(minute, desired in a, desired in b)`` for every minute both read and read apart."""
    theirs = {p.minute: p.desired for p in b}
    return [
        (p.minute, p.desired, theirs[p.minute])
        for p in a
        if p.minute in theirs and p.desired != theirs[p.minute]
    ]


def agreement(a: Sequence[MinutePoint], b: Sequence[MinutePoint]) -> float:
    """The share of the minutes both read in which the desired replicas are equal (NaN when
    they share none)."""
    shared = {p.minute for p in a} & {p.minute for p in b}
    if not shared:
        return math.nan
    return 1.0 - len(disagreements(a, b)) / len(shared)
