"""Which variant a replica count change lands on (``spec.hardware.variants``).

Scale up on the variant with the lowest cost per unit of capacity (``$/h ÷ RPS`` one replica
carries within the SLOs, or GPUs ÷ RPS without prices) that still has room — below its
``maxReplicas``, not marked exhausted, and within the GPUs the namespace's quota leaves for its
resource (``scaling/quota.py``; variants on the same resource share it) —; scale down the
dearest per unit of capacity first. Counts above a bound (a quota lowered, a variant
exhausted) come down first, dearest first. Ties go to the variant listed first. Pure: counts
in, counts out.
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tokenscale.planning.result import Plan


@dataclass(frozen=True)
class VariantSlot:
    """One variant as the scaler sees it."""

    name: str
    cost_per_rps: float
    """Cost (or GPUs) per hour per RPS of capacity: the order of scaling."""
    replicas: int
    """Replicas it runs now."""
    max_replicas: int
    """Most replicas it may run (``maxReplicas``; an exhausted variant: what it runs)."""
    gpus_per_replica: int = 1
    resource: str = "nvidia.com/gpu"


@dataclass(frozen=True)
class VariantCounts:
    counts: dict[str, int]
    unplaced: int
    """Replicas asked for that no variant has room for."""
    reason: str


def scale_variants(
    slots: Sequence[VariantSlot], target: int, gpus_left: Mapping[str, int] | None = None
) -> VariantCounts:
    """Counts per variant summing to ``target`` (or as close as the room allows), moving from
    the current counts (module docstring). ``gpus_left[resource]``: the GPUs of that resource
    the service may hold in all (absent: no quota bounds it)."""
    budget = dict(gpus_left or {})
    order = sorted(range(len(slots)), key=lambda i: (slots[i].cost_per_rps, i))
    counts = {s.name: max(0, min(s.replicas, s.max_replicas)) for s in slots}
    moves: list[str] = []

    def held(resource: str) -> int:
        return sum(counts[s.name] * s.gpus_per_replica for s in slots if s.resource == resource)

    for i in reversed(order):  # within the quota first, dearest first
        s = slots[i]
        while s.resource in budget and held(s.resource) > budget[s.resource] and counts[s.name]:
            counts[s.name] -= 1
            moves.append(f"-1 {s.name} (quota)")
    total = sum(counts.values())
    unplaced = 0
    if target > total:
        need = target - total
        for i in order:
            s = slots[i]
            while (
                need
                and counts[s.name] < s.max_replicas
                and (
                    s.resource not in budget
                    or held(s.resource) + s.gpus_per_replica <= budget[s.resource]
                )
            ):
                counts[s.name] += 1
                need -= 1
                moves.append(f"+1 {s.name}")
        unplaced = need
    else:
        drop = total - target
        for i in reversed(order):
            s = slots[i]
            take = min(drop, counts[s.name])
            if take:
                counts[s.name] -= take
                drop -= take
                moves.append(f"-{take} {s.name}")
    reason = _summary(moves)
    if unplaced:
        reason += f"; {unplaced} replica(s) have no room on any variant"
    return VariantCounts(counts, unplaced, reason)


def _summary(moves: list[str]) -> str:
    """``+1 a, +1 a, +1 b`` → ``+2 a, +1 b`` (first appearance order)."""
    totals: dict[str, int] = {}
    for m in moves:
        amount, _, what = m.partition(" ")
        totals[what] = totals.get(what, 0) + int(amount)
    return ", ".join(f"{n:+d} {what}" for what, n in totals.items()) or "no change"


def mix_counts(
    plan: Plan,
    total: int,
    gpus_left: Mapping[str, int] | None = None,
    room: Mapping[str, int] | None = None,
) -> VariantCounts:
    """Replicas per variant for ``total`` replicas of a mix plan: from the plan's mix, in the
    scale order, within ``gpus_left`` and ``room[variant]`` (an exhausted variant: what it has
    placed), the plan's mix itself when that fits and sums to ``total``. A variant's cost per
    RPS is its price (1 without one) × GPUs ÷ capacity."""
    room = room or {}
    slots = [
        VariantSlot(
            name=v.name,
            cost_per_rps=(
                (v.gpu_hour_price if v.gpu_hour_price is not None else 1.0)
                * v.gpus_per_replica
                / v.capacity_rps_per_replica
                if v.capacity_rps_per_replica > 0
                else math.inf
            ),
            replicas=v.replicas,
            max_replicas=(
                min(v.max_replicas, room.get(v.name, v.max_replicas))
                if v.capacity_rps_per_replica > 0
                else 0
            ),
            gpus_per_replica=v.gpus_per_replica,
            resource=v.resource_name,
        )
        for v in plan.variants
    ]
    return scale_variants(slots, total, gpus_left)
