"""Classes (``spec.workload.classes``) as a rule on one plan, not a second planner.

1. **Guaranteed.** The critical and standard classes' sum (the guaranteed load: rates added at
   their peaks, tokens the mixture's) is planned once per guaranteed class, each at that
   class's own SLO (``spec.slo`` when it has none) and its own token lengths: its TTFT and
   E2E objectives with the class's own P95/P99 prompt and answer on the shared batch (the
   mixture's means: the load and the batch's composition), its TPOT objectives with the
   mixture's (a decode step carries the chunks of every class's prompts). The fleet is the
   largest of those plans; its class is the **binding** class.
2. **Sheddable.** The sheddable classes are served from the slack. The same spec planned with
   every class guaranteed at the binding class's SLO says what the sheddable peak needs on
   top (``needed_all − needed_guaranteed`` replicas, unrounded); the slack is the fleet's
   replicas less what the guaranteed load needs at its peak (or at its mean, scaled by rate).
   The served fraction is slack ÷ that need, within [0, 1]; the cost to guarantee everything
   is the all-guaranteed plan's GPUs and price.
3. **Showback.** The fleet's GPUs are split over the classes: each is charged the
   replica-seconds it uses at its mean rate (a request's prefill at the idle prefill rate plus
   its decode at the operating batch's per-sequence step time; a sheddable class only for the
   fraction it is served at the guaranteed mean), and the idle remainder is split over the
   guaranteed classes by their peak use (they reserve it). The charges sum to the fleet.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass

from tokenscale.api.classes import WorkloadClass, sum_rps, tokens_of
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.slo import Slo
from tokenscale.api.workload import Workload
from tokenscale.api.workload_stats import TokenDistribution
from tokenscale.planning.pools import checks_over, totals
from tokenscale.planning.result import ClassesSummary, ClassShare, Plan, SloCheck

Planner = Callable[[InferenceServiceSpec, str], Plan]


def _sum_workload(w: Workload, classes: list[WorkloadClass]) -> Workload:
    ins, outs = tokens_of(classes)
    return w.model_copy(
        update={
            "rps": sum_rps(classes),
            "input_tokens": ins,
            "output_tokens": outs,
            "classes": None,
        }
    )


def _with(spec: InferenceServiceSpec, w: Workload, slo: Slo) -> InferenceServiceSpec:
    return spec.model_copy(update={"workload": w, "slo": slo})


#: The objectives a class's own lengths decide (its prompt's prefill, its answer's steps) and
#: those the shared batch decides (every class's prompts' chunks share a decode step).
_OWN_SLO = ("ttft_p99_seconds", "ttft_p95_seconds", "e2e_p99_seconds", "e2e_p95_seconds")
_SHARED_SLO = ("tpot_p99_seconds", "tpot_p95_seconds")
#: The order the planner lists its checks in.
_CHECK_ORDER = ("ttft_p99", "tpot_p99", "e2e_p99", "ttft_p95", "tpot_p95", "e2e_p95")


def own_tails(mixture: TokenDistribution, own: TokenDistribution) -> TokenDistribution:
    """The shared batch's mean (the mixture's) with the class's own P95 and P99 (its own mean
    where it states none, as a class-free spec falls back): what the planner's percentile
    estimates read for one class's requests. Built without validation on purpose: a short
    class's P99 may lie below the mixture's mean."""
    return TokenDistribution.model_construct(
        mean=mixture.mean,
        p95=own.p95 if own.p95 is not None else own.mean,
        p99=own.p99_or_mean,
    )


def _class_plan(
    spec: InferenceServiceSpec, name: str, planner: Planner, g_work: Workload, c: WorkloadClass
) -> Plan:
    """The fleet the guaranteed load needs for class ``c``'s SLO at ``c``'s own lengths (module
    docstring): the larger of the plan for its own-length objectives and the plan for its
    shared-batch ones, carrying both plans' checks (each at the replicas its plan needs)."""
    slo = c.slo or spec.slo
    own_slo = slo.model_copy(update=dict.fromkeys(_SHARED_SLO))
    shared_slo = slo.model_copy(update=dict.fromkeys(_OWN_SLO))
    plans: list[Plan] = []
    if shared_slo.any_set or not own_slo.any_set:
        plans.append(planner(_with(spec, g_work, shared_slo), name))
    if own_slo.any_set:
        own_work = g_work.model_copy(
            update={
                "input_tokens": own_tails(g_work.input_tokens, c.input_tokens),
                "output_tokens": own_tails(g_work.output_tokens, c.output_tokens),
            }
        )
        plans.append(planner(_with(spec, own_work, own_slo), name))
    chosen = max(plans, key=_needed)
    checks = [k for p in plans for k in checks_over(p.slo_checks, totals(p.pools))]
    checks.sort(key=lambda k: _CHECK_ORDER.index(k.name) if k.name in _CHECK_ORDER else 99)
    return chosen.model_copy(update={"slo_checks": checks})


def _needed(p: Plan) -> float:
    return p.replicas.needed if p.replicas is not None else math.inf


def _binds_first(p: Plan) -> tuple[float, float, float]:
    """The order in which class plans bind: the whole replicas needed, then, where two classes
    need as many (the throughput constraint binds both, its fractional need a knob choice
    apart), the one closest to its own SLO, then the fractional need."""
    tight = _tightest(list(p.slo_checks))
    whole = float(p.replicas.with_redundancy) if p.replicas is not None else math.inf
    return whole, tight.estimate_s / tight.target_s if tight is not None else 0.0, _needed(p)


def _tightest(checks: list[SloCheck]) -> SloCheck | None:
    return max(checks, key=lambda c: c.estimate_s / c.target_s, default=None)


def _per_request_s(plan: Plan, prompt_p99: float, c: WorkloadClass) -> float:
    """A request's replica-seconds: its prompt at the idle prefill rate of the plan's P99
    prompt (``prompt_p99`` tokens), its answer at the operating batch's per-sequence share of
    a decode step."""
    prefill_per_token = plan.prefill_p99_s / max(prompt_p99, 1.0)
    decode_per_token = plan.tpot_estimate_s / max(plan.operating_batch, 1.0)
    return c.input_tokens.mean * prefill_per_token + c.output_tokens.mean * decode_per_token


def _fraction(slack: float, need: float) -> float:
    if need <= 0:
        return 1.0
    return min(1.0, max(0.0, slack / need))


def plan_classes(spec: InferenceServiceSpec, name: str, planner: Planner) -> Plan:
    """Plan ``spec`` whose workload has classes (module docstring); ``planner`` plans one
    class-free spec (any hardware form)."""
    w = spec.workload
    guaranteed = w.guaranteed_classes
    g_work = _sum_workload(w, guaranteed)
    per_class = [(c, _class_plan(spec, name, planner, g_work, c)) for c in guaranteed]
    chosen_class, plan = max(per_class, key=lambda cp: _binds_first(cp[1]))
    binding_slo = chosen_class.slo or spec.slo

    all_plan = planner(_with(spec, _sum_workload(w, list(w.classes or [])), binding_slo), name)
    slack = _sheddable_slack(w, plan, all_plan, g_work.input_tokens.p99_or_mean)
    rows = _class_rows(w, plan, per_class, chosen_class, slack)
    summary = _summary(w, plan, all_plan, per_class, chosen_class, slack)
    warnings = [*plan.warnings, _sized_for(w)]
    return plan.model_copy(
        update={"classes": rows, "classes_summary": summary, "warnings": warnings}
    )


@dataclass(frozen=True)
class _Slack:
    """What the binding plan's replicas leave the sheddable classes (module docstring, 2.)."""

    per_request_s: dict[str, float]  #: each class's replica-seconds per request
    at_peak: float  #: the sheddable classes' served fraction at the guaranteed peak
    at_mean: float  #: ... and at the guaranteed mean


def _sheddable_slack(w: Workload, plan: Plan, all_plan: Plan, prompt_p99: float) -> _Slack:
    """The sheddable classes' served fractions: the binding plan's replicas less what the
    guaranteed load needs (at its peak, at its mean scaled by rate), over what the sheddable
    peak needs on top (from the all-guaranteed plan)."""
    sheddable = w.sheddable_classes
    replicas = plan.replica_count
    serves = plan.replicas is not None
    n_g_peak = _needed(plan) if serves else 0.0
    g_rps = sum_rps(w.guaranteed_classes)
    n_g_mean = n_g_peak * (g_rps.mean / g_rps.design_rps) if g_rps.design_rps > 0 else 0.0
    per_req = {c.name: _per_request_s(plan, prompt_p99, c) for c in w.classes or []}
    if all_plan.replicas is not None:
        n_s = max(0.0, _needed(all_plan) - n_g_peak) if sheddable else 0.0
    else:  # nothing serves everything guaranteed: the sheddable peak's replica-seconds
        n_s = sum(c.design_rps * per_req[c.name] for c in sheddable)
    at_peak = _fraction(replicas - n_g_peak, n_s) if serves else 0.0
    at_mean = _fraction(replicas - n_g_mean, n_s) if serves else 0.0
    return _Slack(per_request_s=per_req, at_peak=at_peak, at_mean=at_mean)


def _showback_replicas(
    w: Workload, plan: Plan, per_req: dict[str, float], served_mean: dict[str, float]
) -> dict[str, float]:
    """Each class's share of the fleet's replicas (module docstring, 3.): what it uses at its
    mean rate, plus the idle remainder split over the guaranteed classes by their peak use."""
    replicas = plan.replica_count
    used = {c.name: c.rps.mean * per_req[c.name] * served_mean[c.name] for c in w.classes or []}
    total_used = sum(used.values())
    if total_used > replicas > 0:  # the unit overstates: scale the uses into the fleet
        used = {k: v * replicas / total_used for k, v in used.items()}
    idle = max(0.0, replicas - sum(used.values()))
    reserve = {c.name: c.design_rps * per_req[c.name] for c in w.guaranteed_classes}
    reserve_total = sum(reserve.values()) or 1.0
    return {
        c.name: used[c.name] + idle * reserve.get(c.name, 0.0) / reserve_total
        for c in w.classes or []
    }


def _class_rows(
    w: Workload,
    plan: Plan,
    per_class: list[tuple[WorkloadClass, Plan]],
    binding: WorkloadClass,
    slack: _Slack,
) -> list[ClassShare]:
    """One row per class: its load, its own SLO checks, its served fractions and showback."""
    replicas = plan.replica_count
    full = 1.0 if plan.replicas is not None else 0.0
    per_req = slack.per_request_s
    served_mean = {c.name: (full if c.guaranteed else slack.at_mean) for c in w.classes or []}
    shares = _showback_replicas(w, plan, per_req, served_mean)
    gpr = (plan.gpus_total or 0) / replicas if replicas > 0 else 0.0  # a mix: the average
    price = plan.pools[0].variant.gpu_hour_price if plan.pools else None

    rows = []
    for c in w.classes or []:
        share = shares[c.name]
        gpus = share * gpr if replicas > 0 else 0.0
        cost = plan.cost_per_hour * share / replicas if plan.cost_per_hour and replicas else None
        if price is None or plan.cost_per_hour is None:
            cost = None
        tokens_h = (
            c.rps.mean * served_mean[c.name] * (c.input_tokens.mean + c.output_tokens.mean) * 3600
        )
        own = next((p for k, p in per_class if k.name == c.name), None)
        checks = own.slo_checks if own is not None else []
        rows.append(
            ClassShare(
                name=c.name,
                tier=c.tier,
                priority=c.objective_priority,
                guaranteed=c.guaranteed,
                rps_mean=c.rps.mean,
                rps_design=c.design_rps,
                input_tokens_mean=c.input_tokens.mean,
                output_tokens_mean=c.output_tokens.mean,
                slo_checks=checks,
                replicas_for_slo=own.replica_count if own is not None and own.replicas else None,
                binding=c.name == binding.name,
                served_fraction_at_peak=full if c.guaranteed else slack.at_peak,
                served_fraction_at_mean=full if c.guaranteed else slack.at_mean,
                replica_seconds_per_request=per_req[c.name],
                gpus=gpus,
                gpu_hours_per_day=gpus * 24.0,
                cost_per_hour=cost,
                cost_per_million_tokens=cost / tokens_h * 1e6 if cost and tokens_h > 0 else None,
                quota_max_rps=c.quota.max_rps if c.quota else None,
                quota_max_tokens_per_second=c.quota.max_tokens_per_second if c.quota else None,
            )
        )
    return rows


#: What the classes' rule assumes (module docstring), carried in the summary.
_ASSUMPTIONS = (
    "guaranteed load: the critical and standard classes' peaks added (they may not "
    "coincide: the safe side), tokens their rate-weighted mixture",
    "each guaranteed class's TTFT and E2E at its own P95/P99 lengths on the shared "
    "batch (the mixture's means), its TPOT at the mixture's; each checked at the "
    "replicas its own plan needs (no more than the fleet's)",
    "sheddable classes at their own peak, at the guaranteed peak and at the guaranteed "
    "mean; slack counts redundancy replicas (spare capacity when nothing has failed)",
    "showback: replica-seconds used at the mean rate, idle capacity charged to the "
    "guaranteed classes by their peak use",
    "quotas are enforced by the gateway's rate limits, not by tokenscale",
)


def _summary(
    w: Workload,
    plan: Plan,
    all_plan: Plan,
    per_class: list[tuple[WorkloadClass, Plan]],
    binding: WorkloadClass,
    slack: _Slack,
) -> ClassesSummary:
    """The classes' summary: the binding class and why, the loads, the sheddable classes'
    served fractions and what guaranteeing every class would cost."""
    sheddable = w.sheddable_classes
    g_rps = sum_rps(w.guaranteed_classes)
    s_rps = sum_rps(sheddable) if sheddable else None
    return ClassesSummary(
        binding_class=binding.name,
        reason=_reason(binding, plan, per_class, sheddable, slack.at_peak),
        guaranteed_rps_mean=g_rps.mean,
        guaranteed_rps_design=g_rps.design_rps,
        sheddable_rps_mean=s_rps.mean if s_rps else 0.0,
        sheddable_rps_design=s_rps.design_rps if s_rps else 0.0,
        sheddable_served_at_peak=slack.at_peak,
        sheddable_served_at_mean=slack.at_mean,
        guarantee_all_gpus=all_plan.gpus_total,
        guarantee_all_cost_per_hour=all_plan.cost_per_hour,
        extra_gpus_to_guarantee_all=(
            all_plan.gpus_total - plan.gpus_total
            if all_plan.gpus_total is not None and plan.gpus_total is not None
            else None
        ),
        assumptions=list(_ASSUMPTIONS),
    )


def _sized_for(w: Workload) -> str:
    """The warning that says which load the fleet is sized for."""
    g_rps = sum_rps(w.guaranteed_classes)
    return (
        f"sized for the guaranteed classes ({g_rps.design_rps:g} RPS at peak), not the "
        f"top-level workload's {w.rps.design_rps:g}: the sheddable classes fill the slack"
        if w.sheddable_classes
        else f"sized for the classes' sum ({g_rps.design_rps:g} RPS at peak)"
    )


def _reason(
    binding: WorkloadClass,
    plan: Plan,
    per_class: list[tuple[WorkloadClass, Plan]],
    sheddable: list[WorkloadClass],
    at_peak: float,
) -> str:
    if plan.replicas is None:
        return (
            f"{binding.name}'s SLO cannot be met on this hardware: the guaranteed classes "
            "cannot be served (the plan's reasons say why); nothing is left for "
            + (", ".join(c.name for c in sheddable) or "sheddable classes")
        )
    tight = _tightest(plan.slo_checks)
    what = (
        f"its tightest SLO {tight.name.replace('_', ' ').upper()} {tight.estimate_s:.3g} s of "
        f"{tight.target_s:.3g} s"
        if tight is not None
        else "no SLO"
    )
    parts = [
        f"{binding.name} binds at {plan.replica_count} replicas ({plan.binding_constraint} "
        f"constraint; {what})"
    ]
    for c, p in per_class:
        if c.name != binding.name:
            parts.append(f"{c.name}'s SLO needs {p.replica_count}")
    parts += [
        f"{c.name} adds none (served from slack: {at_peak:.0%} of its peak at the guaranteed peak)"
        for c in sheddable
    ]
    return "; ".join(parts)
