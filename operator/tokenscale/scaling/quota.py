"""The namespace's GPU quota: never ask for more GPUs than a ResourceQuota leaves.

A ResourceQuota bounds an extended resource as ``requests.<resource>`` (e.g.
``requests.nvidia.com/gpu``; Kubernetes allows only the ``requests.`` form for extended
resources). What this service may hold is ``hard − used`` plus what its own pods hold already
(they count in ``used``), and of those no more than ``used`` itself: ``hard − max(0, used −
held)``. The clamp matters where ``held`` is ahead of ``used`` — pods created after the quota
was read, or a quota whose status the quota controller has not filled yet (nothing ``used``,
so ``hard`` is left): those pods are not room a second time. Several quotas may bound the
same resource: the tightest binds.
Pure: quota figures in, a bound out.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tokenscale.planning.result import Plan
from tokenscale.scaling.variant_order import mix_counts


@dataclass(frozen=True)
class GpuQuota:
    """One ResourceQuota's figures: ``{key: count}`` for its ``status.hard``/``status.used``."""

    name: str
    hard: Mapping[str, int]
    used: Mapping[str, int]


def quota_key(resource: str) -> str:
    """The quota key of an extended resource: ``requests.<resource>``."""
    return f"requests.{resource}"


def gpus_left(quotas: Sequence[GpuQuota], resource: str, held: int) -> tuple[int | None, str]:
    """GPUs of ``resource`` this service may hold in all (``held`` are its own, counted back
    up to ``used``: the rest are not in ``used`` yet); None when no quota bounds it. The reason
    names the quota that binds."""
    key = quota_key(resource)
    best: tuple[int | None, str] = (None, f"no ResourceQuota bounds {key}")
    for q in quotas:
        if key not in q.hard:
            continue
        used = q.used.get(key, 0)
        left = max(0, q.hard[key] - max(0, used - held))
        if best[0] is None or left < best[0]:
            best = (
                left,
                f"ResourceQuota {q.name}: {key} hard {q.hard[key]}, used {used} "
                f"(this service holds {held})",
            )
    return best


def quota_shortfall(wanted_gpus: int, allowed_gpus: int | None, resource: str) -> str | None:
    """How far the quota leaves the wanted GPUs short (None when it does not bind)."""
    if allowed_gpus is None or wanted_gpus <= allowed_gpus:
        return None
    return (
        f"quota-limited: {wanted_gpus} {resource} wanted, {allowed_gpus} allowed "
        f"({wanted_gpus - allowed_gpus} short)"
    )


@dataclass(frozen=True)
class QuotaBound:
    """What the quota leaves of a decision."""

    replicas: int
    """Replicas to run: the decision's, or fewer where the quota binds."""
    counts: dict[str, int] | None
    """Per variant (a mix plan); None for one GPU type."""
    limited: str | None
    """Why fewer, by how much (None when nothing binds)."""
    reason: str = "QuotaLimited"
    """``QuotaLimited``, or ``VariantsExhausted`` when only exhausted variants bind."""


def bound_by_quota(
    plan: Plan,
    replicas: int,
    quotas: Sequence[GpuQuota],
    held: Mapping[str, int],
    resource: str,
    room: Mapping[str, int] | None = None,
) -> QuotaBound:
    """Replicas (and, for a mix plan, replicas per variant in the scale order) within the GPUs
    every quota leaves. ``held[resource]``: GPUs this service's pods request now (counted in
    ``used``); ``resource``: the one-GPU form's extended resource; ``room[variant]``: the most
    an exhausted variant may run (``scaling/stockout.py``)."""
    if plan.is_mix:
        resources = sorted({v.resource_name for v in plan.variants})
        bounds = {r: gpus_left(quotas, r, held.get(r, 0)) for r in resources}
        left = {r: n for r, (n, _) in bounds.items() if n is not None}
        split = mix_counts(plan, replicas, left, room)
        got = sum(split.counts.values())
        if got >= replicas:
            return QuotaBound(got, split.counts, None)
        if not left:
            return QuotaBound(
                got,
                split.counts,
                f"no room: {replicas} replicas wanted, {got} fit the variants that are not "
                f"exhausted ({replicas - got} short)",
                "VariantsExhausted",
            )
        why = "; ".join(bounds[r][1] for r in left)
        return QuotaBound(
            got,
            split.counts,
            f"quota-limited: {replicas} replicas wanted, {got} fit the GPU quota "
            f"({replicas - got} short); {why}",
        )
    left_one, why = gpus_left(quotas, resource, held.get(resource, 0))
    per = max(plan.gpus_per_replica, 1)
    if left_one is None or left_one >= replicas * per:
        return QuotaBound(replicas, None, None)
    fit = left_one // per
    shortfall = quota_shortfall(replicas * per, left_one, resource)
    return QuotaBound(
        fit, None, f"{shortfall}: {fit} of {replicas} replicas × {per} GPUs fit; {why}"
    )
