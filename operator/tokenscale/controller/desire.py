"""What should be, from what was observed: a pure function (no API call, clock or environment).

:func:`desire` takes an :class:`~tokenscale.controller.observation.Observation` and returns a
:class:`Desire`: the decision (the shared stepper's, a prefill/decode pair's, or the stored one
re-applied), the quota bound, the rendered bundle, the objects the service's actuator writes
(``controller/actuation.py``) and the events it owes (a spec no actuator can write is refused
when it is parsed, ``api/shape_conflicts.py``). :func:`settled_status` is its second half: the
status, from the observation, the desire and the workload as the actuators left it.

The decision goes through :class:`~tokenscale.scaling.stepper.Stepper`: the engine runs once
per metrics read (the observation), whatever woke the reconcile; a reconcile on an observation
already decided on renders the decision stored in status. The memory read from status is
judged first (``scaling/memory.py``) and an engine decision is held within one step of the
workload's actual replicas.
"""

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tokenscale.api.inference_service import InferenceService, InferenceServiceSpec
from tokenscale.api.status import Condition, DecisionStatus, InferenceServiceStatus
from tokenscale.controller.actuation import Actuator, Desired, actuator_for, handed_over
from tokenscale.controller.contest import Contest, judge, replicas_writer
from tokenscale.controller.observation import MetricsView, Observation
from tokenscale.controller.quota import bound_seen
from tokenscale.controller.readiness import production_ready_condition
from tokenscale.controller.roles import (
    RolesMade,
    decide_roles_for,
    observed_roles,
)
from tokenscale.controller.status import (
    Observed,
    condition,
    decision_status,
    deployment_condition,
    live_status,
    memory_of,
    metrics_condition,
    plan_summary,
    ready_condition,
    rfc3339,
    ttft_display,
)
from tokenscale.controller.variants import (
    exhausted_condition,
    variant_statuses,
)
from tokenscale.controller.workload_ref import matches_condition
from tokenscale.planning import Plan
from tokenscale.render import Owner, render_bundle, selector_string
from tokenscale.render.bundle import RenderedBundle
from tokenscale.scaling import Decision, ScalingState, Snapshot, decide_plan_only
from tokenscale.scaling.cause import Cause
from tokenscale.scaling.memory import limited, trusted
from tokenscale.scaling.quota import QuotaBound
from tokenscale.scaling.schedule import open_window, scheduled_spec, widest_spec
from tokenscale.scaling.stepper import Stepper
from tokenscale.scaling.stockout import room_of


def _carry(
    previous: list[Condition],
    ctype: str,
    now: str,
    gen: int | None,
    why: str = "the plan is not feasible",
) -> Condition:
    """The condition as the last reconcile left it (``Unknown``, ``why``, when there is none)."""
    old = next((c for c in previous if c.type == ctype), None)
    if old is not None:
        return old
    return condition(previous, ctype, "Unknown", "NotEvaluated", why, now, gen)


@dataclass(frozen=True)
class Decided:
    """One reconcile's decision, with what status keeps of it."""

    decision: Decision
    status: DecisionStatus | None
    state: ScalingState | None
    decided: bool
    problems: list[str]
    on_observation: bool = True
    """The decision was made on this reconcile's metrics (False: stored or re-bounded; the
    MetricsAvailable condition then stays as the last observation left it)."""


def decide(
    service: InferenceService,
    plan: Plan,
    old: InferenceServiceStatus,
    metrics: MetricsView | None,
    lead_time: float | None,
    live_replicas: int | None,
    now_s: float | None = None,
) -> Decided:
    """Plan-only without a metrics source (the plan's count within the schedule's bounds in
    force at ``now_s``); otherwise one step of the shared stepper on the judged memory: a new
    decision on a new observation, else the stored one."""
    spec = service.spec
    if metrics is None:
        d = decide_plan_only(plan, spec.scaling.replicas)
        if now_s is not None and spec.scaling.replicas is None:
            d = _within_schedule(d, plan, spec, now_s)
        return Decided(d, decision_status(d), None, True, [])
    # the memory is judged against every bound the schedule allows, the step against today's
    memory, problems = trusted(memory_of(old), widest_spec(spec), metrics.now_s, live_replicas)
    stored = old.decision is not None and old.scaling is not None and not problems
    if memory.decided_replicas != old.decided_replicas:
        stored = False  # the workload is not where the memory says: decide from the workload
    stepper = Stepper(spec, plan, metrics.interval_s, metrics.stale_after_s)
    step = stepper.step(memory, metrics.observation, metrics.now_s, lead_time, stored=stored)
    if step.decision is None:  # already decided on this observation: the stored decision
        assert old.decision is not None
        stored_decision = _stored(old.decision, step.state)
        return Decided(stored_decision, old.decision, step.state, False, [], False)
    d = step.decision
    if d.source in ("metrics", "hold") and d.cause is not Cause.SCALE_TO_ZERO:
        # an engine decision moves the workload at most one step (its memory is status); the
        # idle window's zero is the one exception: it goes from any count at once
        held = limited(d.replicas, live_replicas, scheduled_spec(spec, metrics.now_s))
        if held != d.replicas:
            why = f"{d.why}; limited to one step from the workload's {live_replicas} replicas"
            d = d.model_copy(
                update={
                    "replicas": held,
                    "why": why,
                    "reason": f"{d.reason}; limited to {held}, one step from the workload's "
                    f"{live_replicas} replicas",
                    "state": d.state.model_copy(update={"decided_replicas": held}),
                }
            )
    observed = d.state.observed_at_s
    status = decision_status(d, observed)
    return Decided(d, status, d.state, True, problems, step.engine_ran)


def _within_schedule(d: Decision, plan: Plan, spec: InferenceServiceSpec, now_s: float) -> Decision:
    """A plan-only decision within the bounds of the schedule window open at ``now_s``: the
    plan's need (with redundancy) within the window's bounds instead of the spec's own."""
    found = open_window(spec, now_s)
    if found is None:
        return d
    bounds = scheduled_spec(spec, now_s).scaling
    lo, hi = bounds.min_replicas, bounds.max_replicas
    replicas = min(max(plan.sized.with_redundancy, lo), hi)
    why = f"{d.why}; window {found.label} open: bounds {lo}–{hi}, {replicas} replicas"
    return d.model_copy(update={"replicas": replicas, "why": why, "reason": f"plan: {why}"})


def _stored(status: DecisionStatus, state: ScalingState) -> Decision:
    """The stored decision as the engine's type, for rendering and the operator's metrics."""
    replicas = state.decided_replicas if state.decided_replicas is not None else status.replicas
    try:
        cause = Cause(status.cause) if status.cause is not None else Cause.STEADY
    except ValueError:
        cause = Cause.STEADY
    source = status.source if status.source in ("plan", "pin", "metrics", "hold") else "metrics"
    return Decision(
        replicas=replicas,
        reason=status.reason,
        cause=cause,
        why=status.reason,
        source=source,
        model_replicas=status.model_replicas,
        metrics_available=source != "hold",
        metrics_reason="ok" if source != "hold" else status.reason,
        state=state,
    )


def layout(plan: Plan) -> str:
    parts = [f"TP {plan.tensor_parallel_size}"]
    if plan.pipeline_parallel_size > 1:
        parts.append(f"PP {plan.pipeline_parallel_size}")
    if plan.data_parallel_size > 1:
        parts.append(f"DP {plan.data_parallel_size}")
    text = " × ".join(parts) + (" with expert parallel" if plan.expert_parallel else "")
    return text + (f" on {plan.nodes_per_replica} nodes" if plan.nodes_per_replica > 1 else "")


def live_snapshot(metrics: MetricsView) -> Snapshot | None:
    """What status.live shows: the engines' snapshot with the demand in front of them (at zero
    replicas, the demand alone); None when neither was read."""
    obs = metrics.observation if metrics.demand is not None else None
    if obs is not None and obs.snapshot is not None:
        return obs.snapshot
    return metrics.snapshot


@dataclass(frozen=True)
class Desire:
    """What should be for one InferenceService, before anything is written."""

    made: Decided
    roles: RolesMade | None
    """The prefill and decode roles' counts (None: one pool)."""
    bound: QuotaBound
    bundle: RenderedBundle
    actuator: Actuator
    wanted: Desired
    """What the actuator is given (``controller/actuation.py``)."""
    objects: list[dict[str, Any]]
    """The objects to apply, in order (empty: advisory, or a referenced workload in direct
    mode, whose replicas go through ``/scale``)."""
    events: list[tuple[str, str, str]]
    """Events (type, reason, message) the actuator owes beyond the apply's own."""
    memory_problems: list[str]
    """Why the memory in status was not trusted whole (logged)."""
    drop_scaled_object: bool
    """Out of keda mode with a ScaledObject possibly left (a reference, a hand-over, a new
    generation of the spec): delete ours, whatever workload it aims at."""
    scale_to: int | None = None
    """Replicas to write through the referenced workload's ``/scale`` (None: none)."""
    contested: Condition | None = None
    """``ReplicasContested`` (``controller/contest.py``; None: tokenscale writes no replicas
    here, or several workloads)."""

    @property
    def decision(self) -> Decision:
        return self.made.decision


def desire(obs: Observation) -> Desire:
    """Decide, bound by quota, render, and let the actuator pick what is written."""
    service, plan, status, metrics = obs.service, obs.plan, obs.status, obs.metrics
    roles: RolesMade | None = None
    if plan.is_disaggregated:  # each role on its own signals (controller/roles.py)
        roles = decide_roles_for(service, plan, status, metrics, obs.lead_time_s, obs.live_by_role)
        made = Decided(
            roles.combined, None, None, roles.decided, roles.problems, roles.on_observation
        )
    else:
        made = decide(service, plan, status, metrics, obs.lead_time_s, obs.live_replicas, obs.now_s)
    decision = made.decision
    bound = (
        QuotaBound(decision.replicas, roles.counts, None)  # GPU quotas: not per role yet
        if roles is not None
        else bound_seen(obs.quota, service.spec, plan, decision.replicas, room_of(obs.marks))
    )
    respecified = status.observed_generation != obs.generation
    actuator = actuator_for(service.spec)
    contest = _contest(obs, actuator, roles, bound, respecified)
    if contest is not None and contest.hold is not None:  # a second writer: hold its count
        bound = dataclasses.replace(bound, replicas=contest.hold)
    bundle = render_bundle(
        obs.name,
        obs.namespace,
        service.spec,
        plan,
        bound.replicas,
        Owner(obs.name, obs.uid),
        bound.counts,
    )
    ref = service.spec.workload_ref
    target = (
        None if ref is None else {"apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name}
    )
    wanted = Desired(
        obs.name,
        obs.namespace,
        # the bounds in force (a KEDA ScaledObject's min/max follow the open schedule window)
        scheduled_spec(service.spec, obs.now_s),
        bundle,
        decision,
        made.decided,
        status.decided_replicas,
        obs.live_replicas,
        target,
    )
    problems = obs.status_problems + made.problems
    # out of keda mode, a ScaledObject of ours may be left: with a reference, after a hand-over,
    # or from the spec as it was before this generation (the edit that left keda mode may
    # also have removed the reference: the one GET per spec change finds it; a service never
    # reconciled before has none)
    changed = respecified and status.observed_generation is not None
    drop = actuator.mode != "keda" and (ref is not None or handed_over(obs.workload_now) or changed)
    said = None if contest is None else contest.condition
    held = contest is not None and contest.hold is not None
    return Desire(
        made,
        roles,
        bound,
        bundle,
        actuator,
        wanted,
        actuator.objects(wanted),
        actuator.events(wanted),
        problems,
        drop,
        scale_to=None if held else _within(actuator.through_scale(wanted), bound),
        contested=said,
    )


def _contest(
    obs: Observation,
    actuator: Actuator,
    roles: RolesMade | None,
    bound: QuotaBound,
    respecified: bool,
) -> Contest | None:
    """``ReplicasContested`` where tokenscale writes one workload's replicas (None elsewhere:
    KEDA's count taken back on the switch to direct is not another writer's either)."""
    if not actuator.writes_replicas or roles is not None or obs.plan.is_mix:
        return None
    if handed_over(obs.workload_now):
        return None
    return judge(
        obs.status.conditions,
        obs.live_replicas,
        obs.status.replicas,
        bound.replicas,
        replicas_writer(obs.workload_now),
        respecified,
        obs.now,
        obs.generation,
    )


def _within(replicas: int | None, bound: QuotaBound) -> int | None:
    """A count for ``/scale`` within what the GPU quota leaves (the rendered objects are
    bounded already; a referenced workload's replicas must be too, or its ReplicaSet loops
    on ``exceeded quota``)."""
    return None if replicas is None else min(replicas, bound.replicas)


def scaled(obs: Observation, d: Desire) -> bool:
    """Whether tokenscale moves the workload's replicas this reconcile (what the last scale
    time records)."""
    moved = obs.live_replicas is not None and obs.live_replicas != d.decision.replicas
    if d.roles is not None:
        counts = d.roles.counts
        moved = any(n is not None and n != counts[role] for role, n in obs.live_by_role.items())
    return d.actuator.writes_replicas and moved


def settled_status(
    obs: Observation,
    d: Desire,
    observed: Observed | None,
    role_lives: Mapping[str, dict[str, Any] | None],
) -> InferenceServiceStatus:
    """The status once the actuators ran: ``observed`` is the workload as they left it (the
    variants or roles as one), ``role_lives`` each role's workload as applied."""
    service, plan, status, metrics = obs.service, obs.plan, obs.status, obs.metrics
    now, gen, previous = obs.now, obs.generation, obs.status.conditions
    made, decision, bound, roles, found = d.made, d.decision, d.bound, d.roles, obs.found
    summary = plan_summary(
        plan, service.spec.slo.ttft_p99_seconds, service.spec.slo.tpot_p99_seconds
    )
    live_snap = None if metrics is None else live_snapshot(metrics)
    now_live = (
        live_status(live_snap, rfc3339(metrics.read_at_s or metrics.now_s))
        if metrics is not None and live_snap is not None
        else None
    )
    return InferenceServiceStatus(
        observed_generation=gen,
        replicas=bound.replicas,  # what is set: the decision within the quota (or held)
        decided_replicas=decision.replicas,
        ready_replicas=observed.ready_replicas if observed else 0,
        available_replicas=observed.available_replicas if observed else 0,
        selector=obs.selector,
        tensor_parallel_size=plan.tensor_parallel_size,
        plan=summary,
        decision=made.status,
        diagnosis=decision.diagnosis if made.decided else status.diagnosis,
        conditions=[
            _ready(previous, observed, bound, decision.replicas, now, gen),
            condition(
                previous,
                "PlanFeasible",
                "True" if plan.feasible and bound.limited is None else "False",
                ("Planned" if plan.feasible else "BelowNeed")
                if bound.limited is None
                else bound.reason,
                f"{plan.sized.total} × {layout(plan)} planned: "
                f"{plan.binding_constraint} binds"
                + ("" if plan.feasible else "; " + "; ".join(plan.infeasible_reasons))
                + ("" if bound.limited is None else "; " + bound.limited),
                now,
                gen,
            ),
            deployment_condition(previous, observed, now, gen),
            (
                metrics_condition(previous, now, gen, None if metrics is None else decision)
                if made.on_observation
                else _carry(previous, "MetricsAvailable", now, gen, "no metrics read yet")
            ),
            production_ready_condition(
                previous,
                service.spec,
                plan,
                d.bundle.objects,
                None if metrics is None else metrics.snapshot,
                now,
                gen,
            ),
            *(
                [exhausted_condition(previous, obs.marks, now, gen, bound.limited)]
                if plan.is_mix
                else []
            ),
            *([matches_condition(previous, found, d.bundle, service, now, gen)] if found else []),
            *([d.contested] if d.contested is not None else []),
        ],
        variants=variant_statuses(plan, bound.counts, obs.marks),
        roles=None if roles is None else roles.status(observed_roles(role_lives, plan), plan),
        last_scale_time=now if scaled(obs, d) else (status.last_scale_time or now),
        scaling=made.state,  # its decidedReplicas is the top-level one (excluded here)
        live=now_live,
        ttft_p99=ttft_display(now_live, summary),
    )


def _ready(
    previous: list[Condition],
    observed: Observed | None,
    bound: QuotaBound,
    wanted: int,
    now: str,
    gen: int | None,
) -> Condition:
    """``Ready``; False, with the bound's reason, where the quota leaves no replica of the
    ``wanted`` ones (a workload at zero is then not serving: "0/0 ready" is not ready)."""
    if observed is not None and observed.replicas == 0 and wanted > 0 and bound.limited:
        why = f"no replica runs: {bound.limited}"
        return condition(previous, "Ready", "False", bound.reason, why, now, gen)
    return ready_condition(previous, True, observed, now, gen)


def rejection_is_news(previous: list[Condition], message: str) -> bool:
    """Whether a spec that cannot be served warns (again): not while ``PlanFeasible`` already
    says False with the same message (no event storm)."""
    old = next((c for c in previous if c.type == "PlanFeasible"), None)
    return old is None or old.status != "False" or old.message != message


def rejected_status(
    status: InferenceServiceStatus,
    reason: str,
    message: str,
    observed: Observed | None,
    plan: Plan | None,
    service: InferenceService | None,
    name: str,
    now: str,
    gen: int | None,
) -> InferenceServiceStatus:
    """The status of a spec that cannot be served (``reason``, ``message``): the workload as
    found (``observed``, ours only), the plan summary when there is a plan, the engine's memory
    kept; no decision."""
    previous = status.conditions
    summary = (
        plan_summary(plan, service.spec.slo.ttft_p99_seconds, service.spec.slo.tpot_p99_seconds)
        if plan is not None and plan.replicas is not None and service is not None
        else None
    )
    return InferenceServiceStatus(
        observed_generation=gen,
        replicas=observed.replicas if observed else 0,
        ready_replicas=observed.ready_replicas if observed else 0,
        selector=selector_string(name),
        conditions=[
            ready_condition(previous, False, observed, now, gen),
            condition(previous, "PlanFeasible", "False", reason, message, now, gen),
            deployment_condition(previous, observed, now, gen),
            # no decision is made for a spec that cannot be served: nothing rests on metrics
            condition(
                previous,
                "MetricsAvailable",
                "Unknown",
                "NotEvaluated",
                "no decision while the spec cannot be served",
                now,
                gen,
            ),
        ],
        plan=summary,
        # the engine's memory outlives a bad spec; the decision and live numbers do not
        decided_replicas=status.decided_replicas,
        scaling=status.scaling,
        last_scale_time=status.last_scale_time,
        ttft_p99=ttft_display(None, summary),
    )
