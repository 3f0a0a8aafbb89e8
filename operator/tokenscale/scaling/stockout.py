"""A variant runs out: its pods cannot be placed (a stockout of that GPU type).

A pod of a variant that the scheduler marked unschedulable (``PodScheduled=False``, reason
``Unschedulable``, the condition the scheduler sets with its ``FailedScheduling`` event) for
longer than ``grace_s`` makes the variant **exhausted**: it keeps the replicas it has placed
and takes no more, so the need moves to the next variant in the scale order
(``scaling/variant_order.py``). The mark is kept for ``retry_s`` from when it was made — the
exhausted variant's pending pods go away when its count drops, so the mark is the memory —
then the variant is tried again (a new stockout marks it again after ``grace_s``). Pure: pod
observations, the previous marks and now in; marks out.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

STOCKOUT_GRACE_S = 300.0
STOCKOUT_RETRY_S = 1800.0


@dataclass(frozen=True)
class VariantPod:
    """One pod of a variant: scheduled, or unschedulable since a time (seconds)."""

    variant: str
    unschedulable_since_s: float | None
    message: str = ""


@dataclass(frozen=True)
class Exhausted:
    """A variant that ran out: ``placed`` replicas run, ``unplaced`` could not be placed."""

    variant: str
    placed: int
    unplaced: int
    since_s: float
    reason: str


def exhausted_variants(
    pods: Sequence[VariantPod],
    now_s: float,
    previous: Mapping[str, Exhausted],
    grace_s: float = STOCKOUT_GRACE_S,
    retry_s: float = STOCKOUT_RETRY_S,
) -> dict[str, Exhausted]:
    """The variants exhausted now (module docstring)."""
    out: dict[str, Exhausted] = {}
    for variant in sorted({p.variant for p in pods} | set(previous)):
        mine = [p for p in pods if p.variant == variant]
        placed = sum(1 for p in mine if p.unschedulable_since_s is None)
        stuck = [
            p
            for p in mine
            if p.unschedulable_since_s is not None and now_s - p.unschedulable_since_s >= grace_s
        ]
        before = previous.get(variant)
        if before is not None and now_s - before.since_s < retry_s:
            # still within the retry period: keep the mark, with what is placed now
            unplaced = max(before.unplaced, len(stuck))
            out[variant] = Exhausted(variant, placed, unplaced, before.since_s, before.reason)
        elif stuck:
            oldest = min(p.unschedulable_since_s or now_s for p in stuck)
            why = stuck[0].message or "Unschedulable"
            reason = (
                f"{len(stuck)} pod(s) of {variant} unschedulable for {now_s - oldest:,.0f} s "
                f"(> {grace_s:,.0f} s): {why}"
            )
            out[variant] = Exhausted(variant, placed, len(stuck), now_s, reason)
    return out


def room_of(marks: Mapping[str, Exhausted]) -> dict[str, int]:
    """An exhausted variant keeps what it has placed and takes no more: ``{variant: placed}``,
    the most each marked variant may run (``scaling/variant_order.mix_counts``' ``room``)."""
    return {v: m.placed for v, m in marks.items()}
