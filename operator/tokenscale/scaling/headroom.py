"""PURE: standing headroom learned from the SLO itself, and backlogs that drain on their own.

**SLO headroom.** The model sizes the fleet for the arrival rate the metrics show over the
rate window; bursts shorter than that window (a 10-second spike at 5× the mean) are invisible
in it, and shorter than any pod's start, so replicas added *after* a breach arrive after the
burst has gone. What the burst leaves behind is the breach: a TTFT or TPOT P99 over its SLO.
So every breach raises a standing multiplier on the model's count,

    h ← min(MAX_SLO_HEADROOM, h × RAISE)      (at most once per RAISE_INTERVAL_S)

(the P99 window keeps showing one breach for a rate window and more: one burst, one raise), and a
spell in which every latency signal reads low lets it decay back towards 1,

    h ← 1 + (h − 1) × 0.5^(dt / DECAY_HALF_LIFE_S)

slowly, because bursts recur minutes apart and the spell between two of them is no proof
that the next one will not come. The fleet then *stands* at ``ceil(model × h)`` — it does not
chase each burst with replicas that come too late — and the scale-down path keeps it there.

**A backlog that drains before a replica could start is no reason to add one.** A queue seen
once, while the fleet's spare capacity (``rps_per_replica × ready − arrivals``) clears it in
less than the lead time, is a burst that will be gone before a new pod is Ready; it counts as
pressure when it cannot drain within the lead time, when arrivals exceed the fleet's
capacity, or when the previous decision saw it too (a step up in load keeps the queue; a
burst does not). Only the queue signal is demoted: KV usage is judged on its own, because
adding a queue to a full cache must never lower the count the cache alone asks for.
"""

import math

from pydantic import BaseModel, ConfigDict

from tokenscale.scaling.snapshot import Snapshot

MAX_SLO_HEADROOM = 2.0
RAISE = 1.2
RAISE_INTERVAL_S = 240.0
DECAY_HALF_LIFE_S = 1800.0


def raised(h: float, last_raise_s: float | None, now_s: float) -> tuple[float, float | None]:
    """After a breach: ``(h, when it was last raised)``; unchanged within RAISE_INTERVAL_S."""
    if last_raise_s is not None and now_s - last_raise_s < RAISE_INTERVAL_S:
        return h, last_raise_s
    return min(MAX_SLO_HEADROOM, h * RAISE), now_s


def decayed(h: float, dt_s: float) -> float:
    """After ``dt_s`` seconds in which every latency signal read low."""
    if dt_s <= 0 or h <= 1.0:
        return max(h, 1.0)
    return 1.0 + (h - 1.0) * math.pow(0.5, dt_s / DECAY_HALF_LIFE_S)


def drain_seconds(waiting: float, capacity_rps: float, arrival_rps: float) -> float:
    """How long the fleet's spare capacity takes to clear ``waiting`` requests (inf when
    arrivals reach the capacity)."""
    spare = capacity_rps - arrival_rps
    if waiting <= 0:
        return 0.0
    return math.inf if spare <= 0 else waiting / spare


class Backlog(BaseModel):
    """The queue against the fleet's spare capacity (``scaling/headroom.py``)."""

    model_config = ConfigDict(frozen=True)

    seen: bool
    """The queue is over its high watermark now."""
    drain_s: float
    lead_s: float
    transient: bool
    """Seen now but not at the previous decision, and drains within the lead time."""


def backlog_of(
    snap: Snapshot,
    per_replica_rps: float | None,
    high_per_replica: float,
    lead_s: float,
    seen_at_s: float | None,
    now: float,
    interval_s: float,
) -> Backlog | None:
    """None without a queue, an arrival rate or a per-replica rate to judge it by."""
    if snap.waiting is None or snap.arrival_rps is None or per_replica_rps is None:
        return None
    n = max(snap.replicas_reporting, 1)
    capacity = per_replica_rps * n
    drain = drain_seconds(snap.waiting, capacity, snap.arrival_rps)
    seen_before = seen_at_s is not None and now - seen_at_s <= 2.5 * interval_s
    return Backlog(
        seen=snap.waiting / n >= high_per_replica,
        drain_s=drain,
        lead_s=lead_s,
        transient=not seen_before and drain < lead_s,
    )
