"""Replica count: ``max(throughput, concurrency, KV) × redundancy`` within bounds.

- throughput (work): ``design output TPS / output TPS per replica at the operating point``
  (the batch before the knee, or less if the SLOs or ``maxNumSeqs`` say so)
- concurrency (slots): ``Little's-law concurrency / safe concurrency per replica``, where the
  safe concurrency is the most sequences in flight that still meet the SLOs, capped by
  ``maxNumSeqs``; it binds when the SLOs, not efficiency, limit the batch
- KV: ``concurrency × KV tokens of a mean request / (pool × target − reserve for one P99
  request)``; a mean request holds its prompt plus half its output on average while running.
"""

from dataclasses import dataclass

from tokenscale.api.scaling import Scaling
from tokenscale.planning.formulas import ceil_replicas
from tokenscale.planning.result import Constraint, ConstraintName, Replicas


@dataclass(frozen=True)
class SizingInputs:
    output_tps: float
    output_tps_per_replica: float
    concurrency: float
    concurrency_per_replica: float
    kv_tokens_mean_request: float
    kv_tokens_p99_request: float
    kv_capacity_tokens: float
    kv_target_utilization: float


@dataclass(frozen=True)
class Sizing:
    replicas: Replicas
    constraints: list[Constraint]
    binding: ConstraintName
    warnings: list[str]


def kv_replicas(s: SizingInputs) -> float:
    usable = s.kv_capacity_tokens * s.kv_target_utilization
    reserve = max(0.0, s.kv_tokens_p99_request - s.kv_tokens_mean_request)
    room = usable - reserve
    if s.concurrency <= 0:
        return 0.0
    return s.concurrency * s.kv_tokens_mean_request / room


def size(s: SizingInputs, scaling: Scaling) -> Sizing:
    by_tps = s.output_tps / s.output_tps_per_replica if s.output_tps > 0 else 0.0
    by_conc = s.concurrency / s.concurrency_per_replica if s.concurrency > 0 else 0.0
    by_kv = kv_replicas(s)
    constraints = [
        Constraint(
            name="throughput",
            replicas=by_tps,
            formula=f"{s.output_tps:,.0f} output tok/s ÷ {s.output_tps_per_replica:,.1f} "
            "per replica at the operating point",
        ),
        Constraint(
            name="concurrency",
            replicas=by_conc,
            formula=f"{s.concurrency:,.1f} in flight (Little's law) ÷ "
            f"{s.concurrency_per_replica:,.0f} safe per replica",
        ),
        Constraint(
            name="kv",
            replicas=by_kv,
            formula=f"{s.concurrency:,.1f} in flight × {s.kv_tokens_mean_request:,.0f} KV tokens "
            f"each ÷ ({s.kv_capacity_tokens:,.0f} × {s.kv_target_utilization:.2f} − "
            f"{max(0.0, s.kv_tokens_p99_request - s.kv_tokens_mean_request):,.0f} reserved "
            "for one P99 request)",
        ),
    ]
    needed = max(by_tps, by_conc, by_kv)
    binding: ConstraintName = "none"
    if needed > 0:
        binding = max(constraints, key=lambda c: c.replicas).name
    factor = scaling.redundancy.factor
    with_redundancy = ceil_replicas(needed * factor) + scaling.redundancy.spare_replicas
    warnings: list[str] = []
    if scaling.replicas is not None:
        total = scaling.replicas
        if total < with_redundancy:
            warnings.append(
                f"spec.scaling.replicas pins {total} replicas but the plan needs "
                f"{with_redundancy}: SLOs will be missed at the design rate"
            )
    else:
        total = min(max(with_redundancy, scaling.min_replicas), scaling.max_replicas)
        if with_redundancy > scaling.max_replicas:
            warnings.append(
                f"maxReplicas={scaling.max_replicas} caps the fleet below the {with_redundancy} "
                "replicas the plan needs: SLOs will be missed at the design rate"
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
    )
