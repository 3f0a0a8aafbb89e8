"""A plan is a set of pools and one coordination rule between them.

Every fleet shape is planned into the same :class:`~tokenscale.planning.result.Pool` rows by
:func:`pool` (one GPU type: one ``serve`` pool; a GPU mix: one ``serve`` pool per variant;
prefill/decode: a ``prefill`` and a ``decode`` pool), and :func:`with_pools` sets the plan's
top-level fleet figures from them with one arithmetic (:func:`totals`):

- ``gpus_total`` and ``cost_per_hour``: sums over the pools (the cost is null when a pool that
  runs replicas has no price);
- the TTFT, TPOT and E2E P99 estimates: the largest over the pools that run replicas, each at
  the load that pool carries (a decode pool has no TTFT of its own, a prefill pool no TPOT;
  a P/D pair's E2E is the decode pool's, which includes the prompt's TTFT);
- the SLO checks on those three estimates judged again against them, and ``feasible`` by one
  rule: no reason against the plan, and every SLO check met (an unmet one becomes a reason).
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tokenscale.planning.result import (
    ConstraintName,
    Coordination,
    Plan,
    Pool,
    PoolRole,
    PoolVariant,
    SloCheck,
)


def variant_of(p: Plan, gpu_hour_price: float | None) -> PoolVariant:
    """The GPU, layout and price one replica of ``p`` runs on."""
    return PoolVariant(
        gpu=p.gpu,
        tensor_parallel_size=p.tensor_parallel_size,
        pipeline_parallel_size=p.pipeline_parallel_size,
        data_parallel_size=p.data_parallel_size,
        expert_parallel=p.expert_parallel,
        nodes_per_replica=p.nodes_per_replica,
        gpus_per_replica=p.gpus_per_replica,
        gpu_hour_price=gpu_hour_price,
    )


@dataclass(frozen=True)
class PoolLoad:
    """What one pool carries and how fast: its share of the load and its latencies there."""

    load_rps: float
    capacity_rps_per_replica: float
    ttft_p99_s: float | None
    tpot_p99_s: float | None
    e2e_p99_s: float | None = None


def pool(
    name: str,
    role: PoolRole,
    variant: PoolVariant,
    replicas: int,
    load: PoolLoad,
    binding: ConstraintName,
) -> Pool:
    """One pool: every shape's pools are made here (the GPUs and the cost are computed once)."""
    gpus = replicas * variant.gpus_per_replica
    price = variant.gpu_hour_price
    runs = replicas > 0
    return Pool(
        name=name,
        role=role,
        variant=variant,
        replicas=replicas,
        load_rps=load.load_rps,
        rps_per_replica=load.load_rps / replicas if runs else 0.0,
        capacity_rps_per_replica=load.capacity_rps_per_replica,
        ttft_p99_s=load.ttft_p99_s if runs else None,
        tpot_p99_s=load.tpot_p99_s if runs else None,
        e2e_p99_s=load.e2e_p99_s if runs else None,
        binding_constraint=binding,
        gpus=gpus,
        cost_per_hour=price * gpus if price is not None else None,
    )


def serve_pool(p: Plan, gpu_hour_price: float | None) -> Pool:
    """The one pool of a one-GPU plan (the degenerate case): all of the load, the plan's own
    latencies; a replica's capacity is the design load ÷ the replicas the binding constraint
    needs (the operating point's rate without a design load)."""
    r = p.replicas
    capacity = p.rps_per_replica
    if r is not None and r.needed > 0 and p.design_rps > 0:
        capacity = p.design_rps / r.needed
    serves = r is not None
    return pool(
        "serve",
        "serve",
        variant_of(p, gpu_hour_price),
        r.total if r is not None else 0,
        PoolLoad(
            load_rps=p.design_rps,
            capacity_rps_per_replica=capacity if serves else 0.0,
            ttft_p99_s=p.ttft_p99_estimate_s if serves else None,
            tpot_p99_s=p.tpot_p99_estimate_s if serves else None,
            e2e_p99_s=p.e2e_p99_estimate_s if serves else None,
        ),
        p.binding_constraint,
    )


@dataclass(frozen=True)
class PoolTotals:
    """The fleet the pools make: sums and extrema (module docstring)."""

    replicas: int
    gpus: int
    cost_per_hour: float | None
    ttft_p99_s: float | None
    tpot_p99_s: float | None
    e2e_p99_s: float | None


def _largest(values: Sequence[float | None]) -> float | None:
    seen = [v for v in values if v is not None]
    return max(seen) if seen else None


def totals(pools: Sequence[Pool]) -> PoolTotals:
    """Sums and extrema over ``pools`` (module docstring)."""
    running = [x for x in pools if x.replicas > 0]
    costs = [x.cost_per_hour for x in running]
    return PoolTotals(
        replicas=sum(x.replicas for x in pools),
        gpus=sum(x.gpus for x in pools),
        cost_per_hour=None if any(c is None for c in costs) else sum(c or 0.0 for c in costs),
        ttft_p99_s=_largest([x.ttft_p99_s for x in running]),
        tpot_p99_s=_largest([x.tpot_p99_s for x in running]),
        e2e_p99_s=_largest([x.e2e_p99_s for x in running]),
    )


def checks_over(checks: Sequence[SloCheck], t: PoolTotals) -> list[SloCheck]:
    """``checks`` with the P99 estimates the pools give (the P95 checks as they are)."""
    by_name = {"ttft_p99": t.ttft_p99_s, "tpot_p99": t.tpot_p99_s, "e2e_p99": t.e2e_p99_s}
    out = []
    for c in checks:
        estimate = by_name.get(c.name)
        if estimate is None or not math.isfinite(estimate):
            out.append(c)
            continue
        out.append(c.model_copy(update={"estimate_s": estimate, "met": estimate <= c.target_s}))
    return out


def unmet(checks: Sequence[SloCheck]) -> list[str]:
    """One reason per SLO check the plan misses, in numbers."""
    return [
        f"{c.name.replace('_', ' ').upper()} {c.estimate_s:.3g} s exceeds the SLO's "
        f"{c.target_s:.3g} s at the load the pools carry"
        for c in checks
        if not c.met
    ]


def with_pools(p: Plan, pools: list[Pool], coordination: Coordination) -> Plan:
    """``p`` with its pools and rule, its fleet figures from them (module docstring)."""
    t = totals(pools)
    checks = checks_over(p.slo_checks, t)
    serves = p.replicas is not None and p.gpus_total is not None
    reasons = list(p.infeasible_reasons)
    if serves and p.feasible:  # the one rule: a plan that misses an SLO is not feasible
        reasons += unmet(checks)
    update: dict[str, object] = {
        "pools": pools,
        "coordination": coordination,
        "slo_checks": checks,
        "feasible": p.feasible and not reasons,
        "infeasible_reasons": reasons,
    }
    if serves:
        update |= {"gpus_total": t.gpus, "cost_per_hour": t.cost_per_hour}
    for key, value in (
        ("ttft_p99_estimate_s", t.ttft_p99_s),
        ("tpot_p99_estimate_s", t.tpot_p99_s),
        ("e2e_p99_estimate_s", t.e2e_p99_s),
    ):
        if serves and value is not None:
            update[key] = value
    return p.model_copy(update=update)
