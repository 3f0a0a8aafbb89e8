"""Length classes (``spec.serving.lengthClasses``): one pool per class of prompt lengths, a
rule over the planner, not a planner of its own.

1. **Split** the workload by class (:func:`tokenscale.planning.length_split.split`: each
   class's share, rates and token statistics, stated or estimated).
2. **Plan each class** as its own spec with the same planner every spec goes through (one GPU
   type or a mix: with ``spec.hardware.variants`` each class chooses its own variants, so short
   prompts may land on cheaper GPUs). Its pools join the plan as ``<class>`` (one GPU type) or
   ``<class>-<variant>`` (a mix), role ``serve``; ``spec.scaling``'s bounds apply to each class's
   pool.
3. **Plan one shared pool** for the whole workload, the alternative, and say when isolation pays
   (:class:`~tokenscale.planning.result.LengthClassesSummary`): GPUs and cost of both, and each
   class's TTFT P99 in its own pool against the same class on the shared pool (its prompts'
   prefill after the shared queue's wait, from the shared plan's timing model).

The plan's top-level one-replica figures are the shared pool's (as a P/D plan's are the
aggregated one's); ``pools``, ``gpus_total``, ``cost_per_hour`` and the latencies are the
classes' (:func:`tokenscale.planning.pools.with_pools`).
"""

from collections.abc import Callable

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.length_classes import LengthClass
from tokenscale.planning.formulas import cost_per_million_tokens
from tokenscale.planning.length_split import ClassWorkload, split
from tokenscale.planning.planner import replica_perf_model
from tokenscale.planning.pools import with_pools
from tokenscale.planning.result import (
    LengthClassesSummary,
    LengthClassRow,
    LengthCoordination,
    Plan,
    Pool,
)

Planner = Callable[[InferenceServiceSpec, str], Plan]

ROUTING = (
    "by prompt length: with spec.gateway.inferencePool, one InferencePool per class and an "
    "HTTPRoute rule per class (docs/length-classes.md); otherwise a Service per class and "
    "the client (or a router in front) sends each request to its class's Service"
)


def plan_length_classes(spec: InferenceServiceSpec, name: str, planner: Planner) -> Plan:
    """Plan ``spec`` (it has ``spec.serving.lengthClasses``) as one pool per class (module
    docstring); ``planner`` plans one spec without length classes."""
    classes = spec.serving.length_classes or []
    shared_spec = without_classes(spec)
    shared = planner(shared_spec, name)
    parts = split(spec.workload, classes)
    plans = [planner(_class_spec(shared_spec, part), name) for part in parts]
    pools = [p for part, plan in zip(parts, plans, strict=True) for p in _pools_of(part, plan)]
    rows = [
        _row(part, plan, shared_spec, shared, c)
        for part, plan, c in zip(parts, plans, classes, strict=True)
    ]
    summary = _summary(shared, rows)
    reasons = [
        f"length class {part.name}: {why}"
        for part, plan in zip(parts, plans, strict=True)
        for why in plan.infeasible_reasons
    ]
    base = shared.model_copy(
        update={
            "mix": None,
            "variants": [],
            "variant_plans": [],
            "disaggregation": None,
            "at_load": None,  # per pool: pools[]
            "replicas": shared.replicas,
            "feasible": all(p.feasible for p in plans),
            "infeasible_reasons": reasons,
            "warnings": [w for p in plans for w in p.warnings if w not in shared.warnings]
            + list(shared.warnings),
            "length_classes": summary,
            "class_plans": [*plans, shared],
            **_unit_costs(plans, summary),
        }
    )
    rule = LengthCoordination(
        bounds=[_bounds(part) for part in parts],
        routing=ROUTING,
        reason=summary.verdict,
    )
    return with_pools(base, pools, rule)


def _unit_costs(plans: list[Plan], s: LengthClassesSummary) -> dict[str, float | None]:
    """GPU-hours and cost per 1M tokens and per request of the class pools together, at each
    pool's operating point (``cost_per_1M = hourly ÷ (tokens/s × 3600) × 1e6``, summed rates)."""
    out_tps = sum(p.replica_count * p.output_tps_per_replica for p in plans)
    in_tps = sum(p.replica_count * p.input_tps_per_replica for p in plans)
    rps = sum(p.replica_count * p.rps_per_replica for p in plans)
    gpus, cost = float(s.isolated_gpus or 0), s.isolated_cost_per_hour

    def per_million(hourly: float | None, tps: float) -> float | None:
        return None if hourly is None or tps <= 0 else cost_per_million_tokens(hourly, tps)

    return {
        "gpu_hours_per_million_output_tokens": per_million(gpus, out_tps),
        "cost_per_million_output_tokens": per_million(cost, out_tps),
        "cost_per_million_input_tokens": per_million(cost, in_tps),
        "cost_per_million_tokens": per_million(cost, in_tps + out_tps),
        "cost_per_request": None if cost is None or rps <= 0 else cost / (rps * 3600.0),
    }


def class_specs(spec: InferenceServiceSpec) -> list[tuple[ClassWorkload, InferenceServiceSpec]]:
    """Each length class's traffic and the spec its pool is planned (and scaled) by, in
    order, then the one shared pool's spec with the whole workload (its traffic: the whole)."""
    shared_spec = without_classes(spec)
    parts = split(spec.workload, spec.serving.length_classes or [])
    whole = ClassWorkload("shared", 0, None, 1.0, spec.workload, {})
    return [*[(part, _class_spec(shared_spec, part)) for part in parts], (whole, shared_spec)]


def without_classes(spec: InferenceServiceSpec) -> InferenceServiceSpec:
    serving = spec.serving.model_copy(update={"length_classes": None})
    return spec.model_copy(update={"serving": serving})


def _class_spec(shared_spec: InferenceServiceSpec, part: ClassWorkload) -> InferenceServiceSpec:
    return shared_spec.model_copy(update={"workload": part.workload})


def _bounds(part: ClassWorkload) -> str:
    if part.max_tokens is None:
        return f"{part.name} > {part.above_tokens:,}"
    return f"{part.name} ≤ {part.max_tokens:,}"


def _pools_of(part: ClassWorkload, plan: Plan) -> list[Pool]:
    """The class plan's pools, named for the class (``<class>`` or ``<class>-<variant>``)."""
    one = len(plan.pools) == 1
    return [
        p.model_copy(update={"name": part.name if one else f"{part.name}-{p.name}"})
        for p in plan.pools
    ]


def _shared_ttft_p99(
    shared_spec: InferenceServiceSpec, shared: Plan, part: ClassWorkload
) -> float | None:
    """The class's prompts on the shared pool: their own prefill after the shared queue's wait
    at the load each shared replica carries (the shared plan's timing model); None when the
    shared plan has no one-pool load point (a mix, or no count)."""
    if shared.at_load is None or shared.replicas is None or shared.is_mix:
        return None
    perf = replica_perf_model(shared_spec, shared)
    tokens = part.workload.input_tokens
    return perf.ttft_quantile_seconds(shared.at_load.batch, tokens.p99_or_mean, tokens.mean, 0.01)


def _row(
    part: ClassWorkload,
    plan: Plan,
    shared_spec: InferenceServiceSpec,
    shared: Plan,
    c: LengthClass,
) -> LengthClassRow:
    w = part.workload
    pools = _pools_of(part, plan)
    costs = [p.cost_per_hour for p in pools if p.replicas > 0]
    return LengthClassRow(
        name=c.name,
        above_tokens=part.above_tokens,
        max_input_tokens=part.max_tokens,
        share=part.share,
        rps_mean=w.rps.mean,
        rps_design=w.rps.design_rps,
        input_tokens_mean=w.input_tokens.mean,
        input_tokens_p95=w.input_tokens.p95,
        input_tokens_p99=w.input_tokens.p99,
        output_tokens_mean=w.output_tokens.mean,
        output_tokens_p99=w.output_tokens.p99,
        sources=part.sources,
        pools=[p.name for p in pools],
        replicas=sum(p.replicas for p in pools),
        gpus=sum(p.gpus for p in pools),
        cost_per_hour=None if any(x is None for x in costs) else sum(x or 0.0 for x in costs),
        ttft_p99_s=plan.ttft_p99_estimate_s if plan.replicas is not None else None,
        ttft_p99_shared_s=_shared_ttft_p99(shared_spec, shared, part),
        max_num_batched_tokens=plan.max_num_batched_tokens,
        feasible=plan.feasible,
    )


def _summary(shared: Plan, rows: list[LengthClassRow]) -> LengthClassesSummary:
    iso_gpus = sum(r.gpus for r in rows)
    costs = [r.cost_per_hour for r in rows]
    iso_cost = None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)
    shared_serves = shared.replicas is not None
    shared_gpus = shared.gpus_total if shared_serves else None
    shared_cost = shared.cost_per_hour if shared_serves else None
    isolated_ok = all(r.feasible for r in rows)
    short = rows[0]
    pays, verdict = _verdict(
        shared, shared_gpus, shared_cost, iso_gpus, iso_cost, isolated_ok, short
    )
    return LengthClassesSummary(
        classes=rows,
        shared_replicas=shared.replica_count if shared_serves else None,
        shared_gpus=shared_gpus,
        shared_cost_per_hour=shared_cost,
        shared_ttft_p99_s=shared.ttft_p99_estimate_s if shared_serves else None,
        shared_feasible=shared.feasible,
        isolated_gpus=iso_gpus,
        isolated_cost_per_hour=iso_cost,
        pays=pays,
        verdict=verdict,
        assumptions=[
            "prompt lengths: a log-normal through spec.workload.inputTokens' mean and P99, cut "
            "at each class's bounds, unless the class states its share and inputTokens",
            "answer lengths independent of prompt length unless a class states outputTokens",
            "each class gets its share of the mean and of the peak (the mix holds at the peak)",
            "spec.scaling's bounds (minReplicas, maxReplicas) apply to each class's pool",
            "a router sends each request to its class's pool by prompt length",
        ],
    )


def _verdict(
    shared: Plan,
    shared_gpus: int | None,
    shared_cost: float | None,
    iso_gpus: int,
    iso_cost: float | None,
    isolated_ok: bool,
    short: LengthClassRow,
) -> tuple[bool, str]:
    """Isolation pays when it meets the SLOs where one shared pool does not, or when it holds
    no more GPUs (no more cost, where priced) and the shortest class's TTFT P99 is lower."""
    cost_words = ""
    if shared_cost is not None and iso_cost is not None:
        cost_words = f" (${iso_cost:,.2f}/h against ${shared_cost:,.2f}/h)"
    fleet = f"{iso_gpus} GPUs in the class pools against {shared_gpus} in one shared pool"
    ttft = ""
    if short.ttft_p99_s is not None and short.ttft_p99_shared_s is not None:
        ttft = (
            f"; {short.name}'s TTFT P99 {short.ttft_p99_s * 1e3:,.0f} ms in its own pool "
            f"against {short.ttft_p99_shared_s * 1e3:,.0f} ms on the shared pool"
        )
    if isolated_ok and (shared_gpus is None or not shared.feasible):
        return True, f"isolation pays: the classes meet the SLOs and one shared pool does not{ttft}"
    if not isolated_ok:
        return False, f"isolation does not pay: a class's pool misses its SLOs{ttft}"
    cheaper = iso_cost <= shared_cost if iso_cost is not None and shared_cost is not None else None
    no_more = iso_gpus <= (shared_gpus or 0) if cheaper is None else cheaper
    faster = (
        short.ttft_p99_s is not None
        and short.ttft_p99_shared_s is not None
        and short.ttft_p99_s < short.ttft_p99_shared_s
    )
    if no_more and faster:
        return True, f"isolation pays: {fleet}{cost_words}{ttft}"
    if no_more:
        return True, f"isolation pays in GPUs: {fleet}{cost_words}{ttft}"
    return False, f"one shared pool is cheaper: {fleet}{cost_words}{ttft}"
