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

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning.result import Plan
from tokenscale.planning.variants import variant_spec


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
    RPS is its price (1 without one) × GPUs ÷ capacity; behind a plain Service (round-robin)
    the capacity is at most the slowest of the plan's mix's variants, since every replica
    gets the same share."""
    room = room or {}
    slowest = min(
        (v.capacity_rps_per_replica for v in plan.variants if v.replicas > 0),
        default=math.inf,
    )
    round_robin = plan.mix is not None and plan.mix.routing == "round-robin"

    def effective(cap: float) -> float:
        return min(cap, slowest) if round_robin else cap

    slots = [
        VariantSlot(
            name=v.name,
            cost_per_rps=(
                (v.gpu_hour_price if v.gpu_hour_price is not None else 1.0)
                * v.gpus_per_replica
                / effective(v.capacity_rps_per_replica)
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


def primary_spec(spec: InferenceServiceSpec, plan: Plan) -> InferenceServiceSpec:
    """The spec the decision engine models a mix by: its primary variant's one-GPU spec (the
    plan's per-replica figures are that variant's), with the service's own scaling bounds;
    ``spec`` itself for one GPU type."""
    variants = spec.hardware.variants
    if plan.mix is None or not variants:
        return spec
    names = [v.name for v in plan.variants]
    at = names.index(plan.mix.primary) if plan.mix.primary in names else 0
    return variant_spec(spec, variants[at]).model_copy(update={"scaling": spec.scaling})


def mix_capacity_rps(plan: Plan, counts: Mapping[str, int]) -> float:
    """What ``counts`` carry within the SLOs at the plan's per-replica capacities, under the
    plan's routing: the sum (load-aware), or every replica at the slowest used one's
    (round-robin: each replica gets the same share)."""
    used = [(v.capacity_rps_per_replica, counts.get(v.name, 0)) for v in plan.variants]
    used = [(cap, n) for cap, n in used if n > 0]
    if not used:
        return 0.0
    if plan.mix is not None and plan.mix.routing == "round-robin":
        return sum(n for _, n in used) * min(cap for cap, _ in used)
    return sum(cap * n for cap, n in used)


@dataclass(frozen=True)
class MixNeed:
    total: int
    """The fewest replicas whose split (:func:`mix_counts`) carries the need."""
    need_rps: float
    carried_rps: float
    reason: str


def mix_total(plan: Plan, primary_replicas: float) -> MixNeed:
    """The replicas of a mix that carry what ``primary_replicas`` of its primary variant
    carry: the need in RPS is ``primary_replicas × `` the primary's capacity per replica (every
    variant's capacity assumed to move with the observed workload as the primary's does), and
    the total is the fewest whose split in the scale order carries it (the most the variants'
    ``maxReplicas`` allow when none does)."""
    caps = {v.name: v.capacity_rps_per_replica for v in plan.variants}
    primary = plan.mix.primary if plan.mix is not None else ""
    per = caps.get(primary) or max(caps.values(), default=0.0)
    need = max(0.0, primary_replicas) * per
    most = sum(v.max_replicas for v in plan.variants if v.capacity_rps_per_replica > 0)
    carried = 0.0
    for total in range(most + 1):
        counts = mix_counts(plan, total).counts
        carried = mix_capacity_rps(plan, counts)
        if carried >= need - 1e-9:
            label = " + ".join(f"{n} {name}" for name, n in counts.items() if n) or "none"
            return MixNeed(
                total,
                need,
                carried,
                f"{primary_replicas:.2f} × {primary} = {need:.1f} RPS: {label} carry "
                f"{carried:.1f} RPS",
            )
    return MixNeed(
        most,
        need,
        carried,
        f"{primary_replicas:.2f} × {primary} = {need:.1f} RPS: every variant at its "
        f"maxReplicas carries {carried:.1f} RPS",
    )
