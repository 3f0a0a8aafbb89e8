"""Replica count: ``max(throughput, concurrency, KV) × redundancy`` within bounds.

Each constraint is the knowledge map's formula evaluated self-consistently at the batch that
limits it (so the plan is monotone: more traffic or longer requests never need fewer replicas):

- throughput (work): ``design output TPS / output TPS per replica`` at the operating batch
  (before the knee, within the SLOs and ``maxNumSeqs``);
- concurrency (slots): ``Little's-law concurrency / safe concurrency``, where the safe
  concurrency ``B_safe = min(maxNumSeqs, SLO batch)`` is the most sequences a replica holds
  while meeting the SLOs and the concurrency is ``design RPS × (TTFT + out × TPOT)`` at
  ``B_safe``; it binds when the SLOs, not efficiency, limit the batch;
- KV (memory): ``concurrency × KV tokens of a mean request / (pool × target − reserve for one
  P99 request)``, the concurrency taken at the batch the pool holds, ``B_kv``, over the time a
  request holds KV (its prefill and decode; queued requests hold none). A mean request holds its
  prompt plus half its output on average. Where the pool holds few requests the count in use
  swings past it well before its mean does: ``B_kv`` is then the batch at which the TTFT tail
  does not wait for a seat (``planning/kv_wait.py``).
"""

from dataclasses import dataclass

from tokenscale.api.scaling import Scaling
from tokenscale.planning.formulas import batch_text, ceil_replicas, counted
from tokenscale.planning.result import Constraint, ConstraintName, Replicas


@dataclass(frozen=True)
class ConstraintInput:
    """One constraint: at ``batch`` in-flight requests a replica takes ``request_s`` per request."""

    batch: float
    request_s: float

    def replicas(self, design_rps: float) -> float:
        """``λ × request_s / batch``: Little's law concurrency over what one replica holds."""
        if design_rps <= 0:
            return 0.0
        return design_rps * self.request_s / self.batch

    def concurrency(self, design_rps: float) -> float:
        return design_rps * self.request_s


@dataclass(frozen=True)
class SizingInputs:
    design_rps: float
    output_tokens_mean: float
    throughput: ConstraintInput
    slots: ConstraintInput
    kv: ConstraintInput
    kv_tokens_mean_request: float
    kv_tokens_reserve: float
    kv_capacity_tokens: float
    kv_target_utilization: float
    kv_wait: str | None = None
    """Why the KV batch is below the pool's room: at it the TTFT tail would wait for a seat
    (``planning/kv_wait.py``)."""


@dataclass(frozen=True)
class Sizing:
    replicas: Replicas
    constraints: list[Constraint]
    binding: ConstraintName
    warnings: list[str]
    shortfall: str | None = None
    """Why the bounds leave the need unmet (``maxReplicas`` below it): the plan is infeasible."""


def _explain(s: SizingInputs) -> list[Constraint]:
    lam = s.design_rps
    t, c, k = s.throughput, s.slots, s.kv
    out_tps = lam * s.output_tokens_mean
    per_replica = t.batch / t.request_s * s.output_tokens_mean
    return [
        Constraint(
            name="throughput",
            replicas=t.replicas(lam),
            formula=f"{out_tps:,.0f} output tok/s ÷ {per_replica:,.1f} per replica "
            f"at the operating batch {batch_text(t.batch)}",
        ),
        Constraint(
            name="concurrency",
            replicas=c.replicas(lam),
            formula=f"{c.concurrency(lam):,.1f} in flight at batch {c.batch:,.0f} per replica "
            f"({lam:,.2f} RPS × {c.request_s:,.2f} s, Little's law) ÷ {c.batch:,.0f} safe per "
            "replica",
        ),
        Constraint(
            name="kv",
            replicas=k.replicas(lam),
            formula=f"{k.concurrency(lam):,.1f} in flight at batch {k.batch:,.1f} per replica "
            f"({lam:,.2f} RPS × {k.request_s:,.2f} s) × {s.kv_tokens_mean_request:,.0f} KV "
            f"tokens each ÷ ({s.kv_capacity_tokens:,.0f} × {s.kv_target_utilization:.2f} − "
            f"{s.kv_tokens_reserve:,.0f} kept for one P99 request) = room for {k.batch:,.1f} "
            "per replica"
            if s.kv_wait is None
            else f"{k.concurrency(lam):,.1f} in flight at batch {k.batch:,.1f} per replica "
            f"({lam:,.2f} RPS × {k.request_s:,.2f} s) ÷ {k.batch:,.1f}: {s.kv_wait}",
        ),
    ]


def size(s: SizingInputs, scaling: Scaling) -> Sizing:
    constraints = _explain(s)
    by_tps, by_conc, by_kv = (c.replicas for c in constraints)
    needed = max(by_tps, by_conc, by_kv)
    binding: ConstraintName = "none"
    if needed > 0:
        # a tie with kv is kv's: the operating batch is then the one the KV pool holds
        binding = max(constraints, key=lambda c: (c.replicas, c.name == "kv")).name
    factor = scaling.redundancy.factor
    with_redundancy = ceil_replicas(needed * factor) + scaling.redundancy.spare_replicas
    warnings: list[str] = []
    shortfall: str | None = None
    if scaling.replicas is not None:
        total = scaling.replicas
        if total < with_redundancy:
            warnings.append(
                f"spec.scaling.replicas pins {counted(total, 'replica')} but the plan needs "
                f"{with_redundancy}: SLOs will be missed at the design rate"
            )
    else:
        total = min(max(with_redundancy, scaling.min_replicas), scaling.max_replicas)
        if with_redundancy > scaling.max_replicas:
            carried = scaling.max_replicas / with_redundancy
            bound = f"spec.scaling.maxReplicas={scaling.max_replicas}"
            if "max_replicas" not in scaling.model_fields_set:
                bound = f"spec.scaling.maxReplicas (not set: the default {scaling.max_replicas})"
            shortfall = (
                f"{bound} is below the "
                f"{with_redundancy:,} replicas the plan needs ({with_redundancy - total:,} short;"
                f" {scaling.max_replicas} carry {carried:.0%} of the design load): set "
                f"maxReplicas to at least {with_redundancy:,} or lower the load"
            )
    if total == 0:
        warnings.append("the plan allows zero replicas: requests will fail until it scales up")
    return Sizing(
        replicas=Replicas(
            throughput=by_tps,
            concurrency=by_conc,
            kv=by_kv,
            needed=needed,
            with_redundancy=with_redundancy,
            total=total,
        ),
        constraints=constraints,
        binding=binding,
        warnings=warnings,
        shortfall=shortfall,
    )
