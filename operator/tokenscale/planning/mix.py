"""Plan a service with ``spec.hardware.variants``: the cheapest mix of GPU types.

1. Each variant is planned alone (``planning/variants.py`` narrows the spec; the planner picks
   its layout as for one GPU type, within the variant's ``maxReplicas``). That plan is the
   variant's single-variant alternative, and its three constraints give one replica's capacity
   at the SLOs: ``cap = min over throughput, concurrency, KV of design RPS ÷ replicas needed``
   (each constraint is linear in the rate, so this is the rate one replica carries).
   A variant at ``tensorParallelSize: auto`` is also planned at each valid TP pinned, and every
   one that can serve is offered to the mix: the layout that is best alone (sized to carry the
   whole load within the variant's ``maxReplicas``) is seldom the one that carries a part of it
   most cheaply, so the layout is chosen within the mix, never before it. The mix is therefore
   never dearer than the same variants with that TP pinned to any size.
2. The mix: ``planning/mix_solver.py`` (SciPy ``milp``/HiGHS) minimises cost (or GPUs, when not
   every variant has a price) subject to the design load × redundancy factor, the spare
   replicas, every variant's ``maxReplicas`` and the service's replica bounds, under the
   routing ``spec.gateway`` implies: round-robin (a plain Service; every replica the same share,
   so the slowest variant used must meet the SLOs at it) or load-aware (an InferencePool;
   capacities add).
3. The Plan: the whole service in the top-level keys (``replicas``, ``gpus_total``,
   ``cost_per_hour``, ``feasible``, the constraint needs as replica-equivalents of the mix);
   the per-replica keys are the *primary* variant's (the one with the most replicas, then the
   preferred, then the first); ``variants`` and ``mix`` say the rest.
"""

import math
from dataclasses import dataclass, replace

from tokenscale.api.errors import SpecError, SpecIssue
from tokenscale.api.hardware import HardwareVariant
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.workload import Rps
from tokenscale.planning.conditions import Conditions
from tokenscale.planning.formulas import cost_per_million_tokens
from tokenscale.planning.load import LoadPoint, at_load
from tokenscale.planning.mix_solver import SOLVER, MixOption, MixSolution, solve_mix
from tokenscale.planning.planner import layout_of, perf_at, plan_service
from tokenscale.planning.pools import PoolLoad, pool, variant_of, with_pools
from tokenscale.planning.resolve import resolve
from tokenscale.planning.result import (
    ConstraintName,
    MixCoordination,
    MixSummary,
    Plan,
    Pool,
    Replicas,
    Routing,
    SingleVariant,
    VariantShare,
)
from tokenscale.planning.variants import on_one_node, variant_price, variant_spec

_CONSTRAINTS: tuple[ConstraintName, ...] = ("throughput", "concurrency", "kv")


@dataclass(frozen=True)
class VariantCapacity:
    """One variant planned alone, and one replica's capacity per constraint (RPS)."""

    variant: HardwareVariant
    spec: InferenceServiceSpec
    plan: Plan
    by_constraint: dict[ConstraintName, float]
    price: float | None
    alone: Plan | None = None
    """The variant's single-variant alternative when ``plan`` is one layout of an ``auto``
    variant (None: ``plan`` is it)."""

    @property
    def alone_plan(self) -> Plan:
        return self.alone if self.alone is not None else self.plan

    @property
    def capacity_rps(self) -> float:
        return min(self.by_constraint.values()) if self.by_constraint else 0.0

    @property
    def binding(self) -> ConstraintName:
        if not self.by_constraint:
            return "none"
        return min(self.by_constraint, key=lambda k: self.by_constraint[k])


def _probe_rps(spec: InferenceServiceSpec) -> InferenceServiceSpec:
    """``spec`` at 1 RPS: a zero design rate leaves the constraints nothing to divide."""
    w = spec.workload.model_copy(update={"rps": Rps(mean=1.0)})
    return spec.model_copy(update={"workload": w})


_VARIANT_FIELDS = ("spec.hardware.gpu", "spec.hardware.gpuSpec", "spec.hardware.tensorParallelSize")


def at_variant(err: SpecError, index: int) -> SpecError:
    """``err`` with the one-GPU field paths moved to ``spec.hardware.variants[index]``."""
    issues = []
    for issue in err.issues:
        path = issue.path
        for field in _VARIANT_FIELDS:
            if path == field or path.startswith(field + "."):
                path = f"spec.hardware.variants[{index}]." + path[len("spec.hardware.") :]
                break
        issues.append(SpecIssue(path, issue.message))
    return SpecError(issues)


def variant_capacity(
    spec: InferenceServiceSpec, v: HardwareVariant, name: str, index: int = 0
) -> VariantCapacity:
    """Plan variant ``v`` (``spec.hardware.variants[index]``) alone and read one replica's
    capacity off its constraints. A :class:`SpecError` names the variant's fields."""
    vspec = variant_spec(spec, v)
    rate = spec.workload.rps.design_rps
    try:
        plan = on_one_node(plan_service(vspec, name))
        rate_plan = plan if rate > 0 else plan_service(_probe_rps(vspec), name)
    except SpecError as err:
        raise at_variant(err, index) from err
    rate = rate if rate > 0 else 1.0
    caps: dict[ConstraintName, float] = {}
    if rate_plan.replicas is not None:
        for c in rate_plan.constraints:
            if c.name in _CONSTRAINTS:
                caps[c.name] = rate / c.replicas if c.replicas > 0 else math.inf
        if all(math.isinf(x) for x in caps.values()):
            caps = {}
    return VariantCapacity(v, vspec, plan, caps, variant_price(spec, v))


def layout_capacities(
    spec: InferenceServiceSpec, v: HardwareVariant, name: str, index: int = 0
) -> tuple[VariantCapacity, list[VariantCapacity]]:
    """Variant ``v`` planned alone, and the layouts offered to the mix: that plan alone for a
    pinned TP; for ``tensorParallelSize: auto``, the variant at every valid TP pinned that can
    serve (each with the plan alone as its single-variant alternative)."""
    alone = variant_capacity(spec, v, name, index)
    if v.tensor_parallel_size != "auto":
        return alone, [alone]
    try:
        sizes = resolve(variant_spec(spec, v), name).tp_sizes()
    except SpecError as err:
        raise at_variant(err, index) from err
    offered = []
    for tp in sizes:
        pinned = variant_capacity(spec, v.model_copy(update={"tensor_parallel_size": tp}), name)
        if pinned.capacity_rps > 0:
            offered.append(replace(pinned, variant=v, alone=alone.plan))
    return alone, offered or [alone]


def routing_of(spec: InferenceServiceSpec) -> tuple[Routing, str]:
    """The routing ``spec.gateway`` implies, and why."""
    if spec.gateway.load_aware:
        return (
            "load-aware",
            "spec.gateway.inferencePool is set: a load-aware gateway sends each request to the "
            "least-loaded replica, so the variants' capacities add",
        )
    return (
        "round-robin",
        "no spec.gateway.inferencePool: a plain Service spreads requests evenly, so every "
        "replica gets the same share and the slowest variant used must meet the SLOs at it",
    )


def _money(value: float | None, currency: str) -> str:
    if value is None:
        return "no price"
    symbol = "$" if currency == "USD" else ""
    suffix = "" if symbol else f" {currency}"
    return f"{symbol}{value:,.2f}/h{suffix}"


def _figure(cost: float | None, gpus: int, currency: str, objective: str) -> str:
    return _money(cost, currency) if objective == "cost" else f"{gpus} GPUs"


def _shares(caps: list[VariantCapacity], counts: tuple[int, ...], routing: Routing) -> list[float]:
    """Each variant's fraction of the load: its share of the replicas (round-robin) or of the
    capacity (load-aware)."""
    total = sum(counts)
    if total == 0:
        return [0.0 for _ in caps]
    if routing == "round-robin":
        return [n / total for n in counts]
    weights = [c.capacity_rps * n for c, n in zip(caps, counts, strict=True)]
    whole = sum(weights)
    return [w / whole if whole > 0 else 0.0 for w in weights]


def _single(c: VariantCapacity, min_replicas: int) -> SingleVariant:
    """The variant alone: its own plan, which must also keep the service's ``minReplicas``
    (the variant's spec lowers it to the variant's bound)."""
    p = c.alone_plan
    feasible = p.feasible and p.replicas is not None
    if feasible and p.replicas is not None and p.replicas.total < min_replicas:
        feasible = False
        reason = (
            f"spec.scaling.minReplicas={min_replicas} exceeds this variant's maxReplicas="
            f"{c.variant.max_replicas}"
        )
    elif feasible and p.replicas is not None:
        reason = f"{p.replicas.total} × {p.gpu} carry the load ({p.binding_constraint} binds)"
    else:
        reason = "; ".join(p.infeasible_reasons) or "cannot serve"
    return SingleVariant(
        feasible=feasible,
        replicas=p.replicas.total if p.replicas is not None else None,
        gpus=p.gpus_total,
        cost_per_hour=p.cost_per_hour,
        reason=reason,
    )


def _latency_at(c: VariantCapacity, rps: float, name: str) -> LoadPoint | None:
    """One replica of ``c`` at ``rps`` (None: saturated or unused)."""
    if rps <= 0 or c.plan.replicas is None:
        return None
    r = resolve(c.spec, name)
    w = c.spec.workload
    perf = perf_at(r, Conditions(workload=w), layout_of(c.plan), c.plan.max_num_batched_tokens)
    return at_load(perf, rps, w.input_tokens, w.output_tokens, float(c.plan.max_num_seqs))


def _pool(c: VariantCapacity, row: VariantShare, point: LoadPoint | None) -> Pool:
    """The variant's pool: its replicas, its share of the load and its latencies there."""
    return pool(
        row.name,
        "serve",
        variant_of(c.plan, c.price),
        row.replicas,
        PoolLoad(
            load_rps=row.rps_per_replica * row.replicas,
            capacity_rps_per_replica=c.capacity_rps,
            ttft_p99_s=point.ttft_p99_s if point is not None else None,
            tpot_p99_s=point.tpot_p99_s if point is not None else None,
            e2e_p99_s=point.e2e_p99_s if point is not None else None,
        ),
        c.binding,
    )


def scale_order(rows: list[VariantShare], routing: Routing) -> list[str]:
    """The variants, cheapest capacity first: price (1 without one) × GPUs ÷ the RPS one
    replica carries (behind round-robin at most the slowest used variant's); ties keep the
    listed order (``scaling/variant_order.py`` scales in this order)."""
    slowest = min((v.capacity_rps_per_replica for v in rows if v.replicas > 0), default=math.inf)

    def per_rps(v: VariantShare) -> float:
        cap = v.capacity_rps_per_replica
        if routing == "round-robin":
            cap = min(cap, slowest)
        price = v.gpu_hour_price if v.gpu_hour_price is not None else 1.0
        return price * v.gpus_per_replica / cap if cap > 0 else math.inf

    return [v.name for _, v in sorted(enumerate(rows), key=lambda iv: (per_rps(iv[1]), iv[0]))]


def mix_rule(rows: list[VariantShare], routing: Routing, reason: str) -> MixCoordination:
    """How the operator keeps the mix: one total, split in the scale order."""
    return MixCoordination(
        routing=routing,
        scale_order=scale_order(rows, routing),
        quota="a namespace ResourceQuota on a variant's GPU resource caps the replicas that "
        "variant takes (variants on one resource share it); the rest move down the scale order",
        stockout="a variant whose pods stay unschedulable past the grace period keeps what it "
        "placed and takes no more until the retry period passes; the rest move down the scale "
        "order",
        reason=reason,
    )


def _label(caps: list[VariantCapacity], counts: tuple[int, ...]) -> str:
    parts = [f"{n} × {c.plan.gpu}" for c, n in zip(caps, counts, strict=True) if n > 0]
    return " + ".join(parts) if parts else "no replicas"


def plan_mix(spec: InferenceServiceSpec, name: str = "") -> Plan:
    """Plan ``spec`` with ``spec.hardware.variants`` (module docstring)."""
    variants = spec.hardware.variants
    assert variants is not None  # the caller dispatches on it
    planned = [layout_capacities(spec, v, name, i) for i, v in enumerate(variants)]
    routing, routing_reason = routing_of(spec)
    objective = "cost" if all(alone.price is not None for alone, _ in planned) else "gpu-hours"
    usable = [
        (i, c)
        for i, (_, offered) in enumerate(planned)
        for c in offered
        if c.capacity_rps > 0 and c.variant.max_replicas > 0
    ]
    options = [
        MixOption(
            name=c.variant.resolved_name,
            capacity_rps=c.capacity_rps,
            weight=(c.price or 0.0) * c.plan.gpus_per_replica
            if objective == "cost"
            else float(c.plan.gpus_per_replica),
            max_replicas=min(c.variant.max_replicas, spec.scaling.max_replicas),
            preference=c.variant.preference,
            group=str(i),
        )
        for i, c in usable
    ]
    redundancy = spec.scaling.redundancy
    design = spec.workload.rps.design_rps
    demand = design * redundancy.factor
    solution = solve_mix(
        options,
        demand,
        routing,
        spare=redundancy.spare_replicas,
        min_total=spec.scaling.min_replicas,
        max_total=spec.scaling.max_replicas,
    )
    caps = [alone for alone, _ in planned]
    counts = [0 for _ in caps]
    if solution is not None:
        for (i, c), n in zip(usable, solution.counts, strict=True):
            if n > 0:
                caps[i], counts[i] = c, n
    plan = _assemble(
        spec, name, caps, tuple(counts), solution, routing, routing_reason, objective, demand
    )
    lines = [
        _layouts_offered(offered, c, n, objective, spec.cost.currency)
        for c, n, (_, offered) in zip(caps, counts, planned, strict=True)
        if len(offered) > 1
    ]
    if plan.mix is None or not lines:
        return plan
    mix = plan.mix.model_copy(update={"reasons": [*plan.mix.reasons, *lines]})
    return plan.model_copy(update={"mix": mix})


def _layouts_offered(
    offered: list[VariantCapacity],
    chosen: VariantCapacity,
    replicas: int,
    objective: str,
    currency: str,
) -> str:
    """Why an ``auto`` variant runs the layout it does: every layout offered, in numbers."""
    parts = []
    for c in offered:
        unit = (
            _money((c.price or 0.0) * c.plan.gpus_per_replica, currency)
            if objective == "cost"
            else f"{c.plan.gpus_per_replica} GPU(s)"
        )
        parts.append(f"{_shape(c.plan)} carries {c.capacity_rps:,.2f} RPS for {unit}")
    runs = f"it runs {_shape(chosen.plan)}" if replicas > 0 else "it uses none of them"
    return (
        f"{chosen.variant.resolved_name} (tensorParallelSize auto): the mix chose among "
        f"{'; '.join(parts)}; {runs} (alone it would run {_shape(chosen.alone_plan)})"
    )


def _shape(p: Plan) -> str:
    if p.nodes_per_replica > 1 or p.data_parallel_size > 1:
        return layout_of(p).describe()
    return f"TP {p.tensor_parallel_size}"


def _assemble(
    spec: InferenceServiceSpec,
    name: str,
    caps: list[VariantCapacity],
    counts: tuple[int, ...],
    solution: MixSolution | None,
    routing: Routing,
    routing_reason: str,
    objective: str,
    demand: float,
) -> Plan:
    design = spec.workload.rps.design_rps
    currency = spec.cost.currency
    total = sum(counts)
    variant_rows, points = _variant_rows(spec, name, caps, counts, _shares(caps, counts, routing))
    primary_i = max(
        range(len(caps)),
        key=lambda i: (counts[i], caps[i].capacity_rps > 0, caps[i].variant.preference, -i),
    )
    base = caps[primary_i].plan
    gpus_total = sum(v.gpus for v in variant_rows)
    cost = sum(v.cost_per_hour or 0.0 for v in variant_rows) if objective == "cost" else None
    comparison = _comparison(caps, counts, variant_rows, gpus_total, cost, currency, objective)
    reasons = [routing_reason]
    reasons += _why(caps, counts, routing, demand, objective, currency)
    warnings, infeasible = _problems(spec, base, caps, solution, routing, objective, demand)
    replicas = _mix_replicas(caps, counts, routing, design, total) if solution else None
    out_tps = sum(n * c.plan.output_tps_per_replica for c, n in zip(caps, counts, strict=True))
    per_million = cost_per_million_tokens(cost, out_tps) if cost and out_tps > 0 else None
    gpu_hours = cost_per_million_tokens(float(gpus_total), out_tps) if out_tps > 0 else None
    binding: ConstraintName = "none"
    if replicas is not None and replicas.needed > 0:
        binding = max(
            _CONSTRAINTS,
            key=lambda k: {
                "throughput": replicas.throughput,
                "concurrency": replicas.concurrency,
                "kv": replicas.kv,
            }[k],
        )
    mixed = base.model_copy(
        update={
            "name": name,
            "replicas": replicas,
            "binding_constraint": binding,
            "gpus_total": gpus_total if solution is not None else None,
            "cost_per_hour": cost if solution is not None else None,
            "cost_per_million_output_tokens": per_million,
            "gpu_hours_per_million_output_tokens": gpu_hours,
            "feasible": solution is not None,
            "infeasible_reasons": infeasible,
            "warnings": warnings,
            "tp_candidates": [],
            "at_load": None,  # per pool: pools[] (the primary's own describes no pool here)
            "variants": variant_rows,
            "mix": MixSummary(
                routing=routing,
                routing_reason=routing_reason,
                objective="cost" if objective == "cost" else "gpu-hours",
                solver=SOLVER,
                demand_rps=demand,
                capacity_rps=solution.capacity_rps if solution is not None else 0.0,
                primary=caps[primary_i].variant.resolved_name,
                comparison=comparison,
                reasons=reasons,
            ),
            "variant_plans": [c.plan for c in caps],
        }
    )
    pools = [_pool(c, v, x) for c, v, x in zip(caps, variant_rows, points, strict=True)]
    return with_pools(mixed, pools, mix_rule(variant_rows, routing, comparison))


def _variant_rows(
    spec: InferenceServiceSpec,
    name: str,
    caps: list[VariantCapacity],
    counts: tuple[int, ...],
    shares: list[float],
) -> tuple[list[VariantShare], list[LoadPoint | None]]:
    """Each variant's row of the mix (its share, cost and latencies at that share) and its
    load point."""
    design = spec.workload.rps.design_rps
    variant_rows: list[VariantShare] = []
    points: list[LoadPoint | None] = []
    for c, n, share in zip(caps, counts, shares, strict=True):
        per_replica = design * share / n if n > 0 else 0.0
        point = _latency_at(c, per_replica, name)
        ttft = point.ttft_p99_s if point is not None else None
        tpot = point.tpot_mean_s if point is not None else None
        gpus = n * c.plan.gpus_per_replica
        points.append(point)
        variant_rows.append(
            VariantShare(
                name=c.variant.resolved_name,
                gpu=c.plan.gpu,
                tensor_parallel_size=c.plan.tensor_parallel_size,
                gpus_per_replica=c.plan.gpus_per_replica,
                resource_name=resolve(c.spec, name).gpu.resource_name,
                replicas=n,
                gpus=gpus,
                rps_share=share,
                rps_per_replica=per_replica,
                capacity_rps_per_replica=c.capacity_rps,
                binding_constraint=c.binding,
                cost_per_hour=c.price * gpus if c.price is not None else None,
                gpu_hour_price=c.price,
                max_replicas=c.variant.max_replicas,
                preference=c.variant.preference,
                ttft_p99_at_share_s=ttft,
                tpot_at_share_s=tpot,
                single_variant=_single(c, spec.scaling.min_replicas),
            )
        )
    return variant_rows, points


def _problems(
    spec: InferenceServiceSpec,
    base: Plan,
    caps: list[VariantCapacity],
    solution: MixSolution | None,
    routing: Routing,
    objective: str,
    demand: float,
) -> tuple[list[str], list[str]]:
    """The mix's warnings (the primary's, but its price) and why it cannot serve, if so."""
    infeasible: list[str] = []
    warnings = [w for w in base.warnings if "gpuHourPrice" not in w]
    if objective != "cost":
        unpriced = [c.variant.resolved_name for c in caps if c.price is None]
        warnings.append(
            f"no price for variant(s) {', '.join(unpriced)} (spec.hardware.variants[i]."
            "gpuHourPrice or spec.cost.gpuHourPrices): the mix minimises GPU-hours"
        )
    if solution is None:
        bound = ", ".join(f"{c.variant.resolved_name} ≤ {c.variant.max_replicas}" for c in caps)
        best = max(
            (c.capacity_rps * min(c.variant.max_replicas, spec.scaling.max_replicas) for c in caps),
            default=0.0,
        )
        infeasible.append(
            f"no mix within the variants' maxReplicas ({bound}) and spec.scaling.maxReplicas="
            f"{spec.scaling.max_replicas} carries {demand:,.2f} RPS under {routing} routing "
            f"(the largest single variant carries {best:,.2f}); raise a variant's maxReplicas, "
            "add a variant, or lower the load"
        )
    return warnings, infeasible


def _mix_replicas(
    caps: list[VariantCapacity],
    counts: tuple[int, ...],
    routing: Routing,
    design: float,
    total: int,
) -> Replicas:
    """The mix's need per constraint as replica-equivalents: ``N × design ÷ what the mix
    carries by that constraint`` (so ``needed ≤ total`` exactly when the mix carries the load)."""
    used = [(c, n) for c, n in zip(caps, counts, strict=True) if n > 0]

    def need(k: ConstraintName) -> float:
        if not used or design <= 0:
            return 0.0
        if routing == "round-robin":
            carried = total * min(c.by_constraint.get(k, math.inf) for c, _ in used)
        else:
            carried = sum(n * c.by_constraint.get(k, math.inf) for c, n in used)
        return total * design / carried if carried > 0 else 0.0

    tps, conc, kv = need("throughput"), need("concurrency"), need("kv")
    return Replicas(
        throughput=tps,
        concurrency=conc,
        kv=kv,
        needed=max(tps, conc, kv),
        with_redundancy=total,
        total=total,
    )


def _comparison(
    caps: list[VariantCapacity],
    counts: tuple[int, ...],
    rows: list[VariantShare],
    gpus_total: int,
    cost: float | None,
    currency: str,
    objective: str,
) -> str:
    """``2 × H100 + 3 × L40S: $14.20/h vs 4 × H100 $17.60/h vs L40S alone: needs 9 >
    maxReplicas 8``."""
    text = f"{_label(caps, counts)}: {_figure(cost, gpus_total, currency, objective)}"
    for c, row in zip(caps, rows, strict=True):
        s, alone = row.single_variant, c.alone_plan
        if s.feasible and s.replicas is not None:
            figure = _figure(s.cost_per_hour, s.gpus or 0, currency, objective)
            text += f" vs {s.replicas} × {alone.gpu} {figure}"
        elif (
            alone.replicas is not None
            and (need := alone.replicas.with_redundancy) > c.variant.max_replicas
        ):
            text += f" vs {alone.gpu} alone: needs {need} > maxReplicas {c.variant.max_replicas}"
        elif alone.replicas is not None:
            text += f" vs {alone.gpu} alone: {s.reason}"
        else:
            text += f" vs {alone.gpu} alone: cannot serve"
    return text


def _why(
    caps: list[VariantCapacity],
    counts: tuple[int, ...],
    routing: Routing,
    demand: float,
    objective: str,
    currency: str,
) -> list[str]:
    """One line per variant in numbers, and what the routing made of them."""
    lines = []
    for c, n in zip(caps, counts, strict=True):
        v = c.variant
        if c.capacity_rps <= 0:
            lines.append(
                f"{v.resolved_name}: cannot serve ({'; '.join(c.plan.infeasible_reasons)})"
            )
            continue
        unit = (
            f"{_money(c.price * c.plan.gpus_per_replica, currency)} per replica"
            if c.price is not None and objective == "cost"
            else f"{c.plan.gpus_per_replica} GPU(s) per replica"
        )
        per = (
            (c.price or 0.0) * c.plan.gpus_per_replica / c.capacity_rps
            if objective == "cost"
            else c.plan.gpus_per_replica / c.capacity_rps
        )
        per_text = (
            f"{_money(per, currency)} per RPS"
            if objective == "cost"
            else f"{per:,.3f} GPUs per RPS"
        )
        lines.append(
            f"{v.resolved_name} ({c.plan.gpu}, TP {c.plan.tensor_parallel_size}): one replica "
            f"carries {c.capacity_rps:,.2f} RPS within the SLOs ({c.binding} binds), {unit}, "
            f"{per_text}; {n} of at most {v.max_replicas} used"
        )
    used = [c.capacity_rps for c, n in zip(caps, counts, strict=True) if n > 0]
    if used and routing == "round-robin":
        total = sum(counts)
        lines.append(
            f"round-robin: {total} replicas each get {demand / total:,.2f} RPS of the "
            f"{demand:,.2f} RPS demand; the slowest used carries {min(used):,.2f}"
        )
    elif used:
        carried = sum(c.capacity_rps * n for c, n in zip(caps, counts, strict=True))
        lines.append(f"load-aware: the mix carries {carried:,.2f} RPS ≥ {demand:,.2f} RPS demand")
    return lines
