"""One level-triggered, idempotent reconcile of one InferenceService.

parse → plan → decide → render → apply what drifted → report. It re-reads the world every
time and never branches on what changed in the event that woke it. Bad or infeasible input
sets ``PlanFeasible=False`` (a Warning event only when that verdict changes: no storm) and
leaves the Deployment alone.

Deciding goes through :class:`~tokenscale.scaling.stepper.Stepper`: the engine runs once per
metrics read (the observation), whatever woke the reconcile; a reconcile on an observation
already decided on (an owned Deployment's event, a spec update, a retry) renders and applies
the decision stored in status. The memory read from status is judged first
(``scaling/memory.py``) and an engine decision is held within one step of the workload's
actual replicas.
"""

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubernetes.client.exceptions import ApiException

from tokenscale.api.errors import SpecError
from tokenscale.api.inference_service import InferenceService
from tokenscale.api.profile import parse_profile
from tokenscale.api.status import Condition, DecisionStatus, InferenceServiceStatus
from tokenscale.controller.actuation import REPLICAS_WRITER_ANNOTATION as REPLICAS_WRITER
from tokenscale.controller.actuation import Actuator, Desired, actuator_for, handed_over
from tokenscale.controller.graceful import DELETION_COST, deletion_costs
from tokenscale.controller.lead_time import lead_time_s
from tokenscale.controller.model_config_ref import with_hf_config
from tokenscale.controller.ownership import REASON as NAME_CONFLICT
from tokenscale.controller.ownership import (
    NameConflict,
    announced,
    conflict_message,
    conflict_status,
    is_ours,
    name_conflicts,
    refusal,
    refused,
    unapplied_status,
)
from tokenscale.controller.plans import PLANS
from tokenscale.controller.quota import quota_bound
from tokenscale.controller.readiness import production_ready_condition
from tokenscale.controller.roles import (
    RolesMade,
    decide_roles_for,
    is_disaggregated,
    observed_roles,
    read_roles,
    role_events,
    role_of,
)
from tokenscale.controller.running_layout import at_running_layout, noted, read_running
from tokenscale.controller.status import (
    Observed,
    condition,
    decision_status,
    deployment_condition,
    live_status,
    memory_of,
    metrics_condition,
    plan_summary,
    read_status,
    ready_condition,
    rfc3339,
    status_document,
    ttft_display,
)
from tokenscale.controller.variants import (
    exhausted_condition,
    observe_variants,
    remove_old_variants,
    remove_single_workload,
    room_of,
    stock_marks,
    variant_statuses,
)
from tokenscale.controller.workload import (
    DEPLOYMENT,
    WORKLOAD_KINDS,
    observe_workload,
    read_workload,
    reader,
    remove_stale,
    selector_drift,
)
from tokenscale.controller.workload_ref import (
    Found,
    find,
    matches_condition,
    plan_is_split,
)
from tokenscale.kube.client import FIELD_MANAGER, Kube
from tokenscale.kube.drift import differences, managed_by
from tokenscale.kube.inference_pool import InferencePoolNotInstalledError
from tokenscale.kube.keda import KedaNotInstalledError
from tokenscale.kube.lws import KIND as LWS_KIND
from tokenscale.kube.lws import LwsNotInstalledError
from tokenscale.metrics.demand import Demand
from tokenscale.planning import Plan
from tokenscale.planning.speculative import with_measured_acceptance
from tokenscale.render import Owner, child_name, render_bundle, selector_string
from tokenscale.render.inference_pool import KIND as INFERENCE_POOL
from tokenscale.render.keda import KIND as SCALED_OBJECT
from tokenscale.render.labels import CONFIG_HASH_ANNOTATION
from tokenscale.render.variants import variant_workload_name
from tokenscale.scaling import Decision, ScalingState, Snapshot, decide_plan_only
from tokenscale.scaling.cause import Cause
from tokenscale.scaling.memory import limited, trusted
from tokenscale.scaling.quota import QuotaBound
from tokenscale.scaling.schedule import scheduled_spec, widest_spec
from tokenscale.scaling.stepper import Observation, Stepper

log = logging.getLogger(__name__)


class EventSink(Protocol):
    def __call__(self, type_: str, reason: str, message: str) -> None: ...


@dataclass(frozen=True)
class MetricsView:
    """Live metrics for one service this cycle (None everywhere: no Prometheus configured)."""

    snapshot: Snapshot | None
    source_error: str | None
    now_s: float
    interval_s: float
    """The configured time between metrics reads (``--interval``)."""
    read_at_s: float | None = None
    """When the fleet read that produced ``snapshot`` ran (None: no read yet). The
    observation's time: the engine decides once per read."""
    stale_after_s: float = 120.0
    running_by_pod: Mapping[str, float] | None = None
    """Running requests per pod (None: unknown), to pick the pods a scale-down removes."""
    time_scale: float = 1.0
    """Engine seconds per wall second: ``now_s``, ``read_at_s`` and ``interval_s`` are on the
    engine's clock, and the pods' measured lead time (wall) is multiplied by this."""

    demand: Demand | None = None
    """Demand in front of the engines (``metrics/demand.py``; None: nothing to read)."""

    @property
    def observation(self) -> Observation | None:
        if self.read_at_s is None:
            return None
        snapshot = self.snapshot
        if snapshot is None:
            why = self.source_error or "no vLLM series for this service in Prometheus"
            snapshot = Snapshot(at=self.read_at_s, replicas_reporting=0, problems=[why])
        if self.demand is not None:
            snapshot = snapshot.model_copy(
                update={
                    **self.demand.fields(),
                    "problems": [*snapshot.problems, *self.demand.problems],
                }
            )
        return Observation(at_s=self.read_at_s, snapshot=snapshot)


@dataclass
class Outcome:
    """What one reconcile did (for logs, tests and the operator's metrics)."""

    feasible: bool
    replicas: int | None = None
    applied: list[str] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)
    plan: Plan | None = None
    decision: Decision | None = None
    decided: bool = False
    """True: the engine (or plan, or pin) decided this reconcile; False: the stored decision
    was re-applied (the observation had been decided on)."""
    previous_decision: int | None = None
    """``status.decidedReplicas`` as read (before it was judged)."""
    live_replicas: int | None = None
    """The workload's replicas before this reconcile applied anything (None: none existed)."""
    ready_replicas: int = 0
    memory_problems: list[str] = field(default_factory=list)
    desired: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """The rendered objects by (kind, name) (what an owned object's watch event is compared
    with)."""
    observed: Observed | None = None
    """The workload as the status reports it."""
    created: list[str] = field(default_factory=list)
    """Objects created by this reconcile, not yet announced (kind, name, replicas)."""


def _reject(
    kube: Kube,
    body: Mapping[str, Any],
    reason: str,
    message: str,
    now: str,
    emit: EventSink,
    plan: Plan | None = None,
    service: InferenceService | None = None,
) -> Outcome:
    """The spec cannot be served: say so once, write status, leave the Deployment alone."""
    meta = body["metadata"]
    ns, name, gen = meta["namespace"], meta["name"], meta.get("generation")
    outcome = Outcome(feasible=False)
    status, _ = read_status(body.get("status"))
    previous = status.conditions
    old = next((c for c in previous if c.type == "PlanFeasible"), None)
    if old is None or old.status != "False" or old.message != message:
        emit("Warning", reason, message)
        outcome.events.append(("Warning", reason, message))
    workload = read_workload(kube, ns, child_name(name))
    # a workload of that name that is not ours says nothing about this InferenceService
    observed = observe_workload(workload if workload and is_ours(workload, meta["uid"]) else None)
    summary = (
        plan_summary(plan, service.spec.slo.ttft_p99_seconds, service.spec.slo.tpot_p99_seconds)
        if plan is not None and plan.replicas is not None and service is not None
        else None
    )
    new_status = InferenceServiceStatus(
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
    _write_status(kube, body, new_status)
    return outcome


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
class _Decided:
    decision: Decision
    status: DecisionStatus | None
    state: ScalingState | None
    decided: bool
    problems: list[str]
    on_observation: bool = True
    """The decision was made on this reconcile's metrics (False: stored or re-bounded; the
    MetricsAvailable condition then stays as the last observation left it)."""


def _decide(
    service: InferenceService,
    plan: Plan,
    old: InferenceServiceStatus,
    metrics: MetricsView | None,
    lead_time: float | None,
    live_replicas: int | None,
) -> _Decided:
    """Plan-only without a metrics source; otherwise one step of the shared stepper on the
    judged memory: a new decision on a new observation, else the stored one."""
    spec = service.spec
    if metrics is None:
        d = decide_plan_only(plan, spec.scaling.replicas)
        return _Decided(d, decision_status(d), None, True, [])
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
        return _Decided(stored_decision, old.decision, step.state, False, [], False)
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
    return _Decided(d, status, d.state, True, problems, step.engine_ran)


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


def with_profile(kube: Kube, namespace: str, service: InferenceService) -> InferenceService:
    """Inline the bench profile a ``spec.profileRef`` names (the only ConfigMap read)."""
    ref = service.spec.profile_ref
    if ref is None:
        return service
    where = f"spec.profileRef (ConfigMap {namespace}/{ref.config_map_name}, key {ref.key})"
    cm = kube.read_config_map(namespace, ref.config_map_name)
    if cm is None:
        raise SpecError.single(
            where,
            "no such ConfigMap; create it from a tokenscale bench "
            "profile (kubectl create configmap … --from-file)",
        )
    text = (cm.get("data") or {}).get(ref.key)
    if text is None:
        raise SpecError.single(where, f"the ConfigMap has no key {ref.key!r}")
    spec = service.spec.model_copy(
        update={"profile": parse_profile(text, where), "profile_ref": None}
    )
    return service.model_copy(update={"spec": spec})


def reconcile(
    kube: Kube,
    body: Mapping[str, Any],
    now: str,
    emit: EventSink,
    metrics: MetricsView | None = None,
) -> Outcome:
    """Bring the owned objects of ``body`` to the rendered state and write its status."""
    meta = body["metadata"]
    ns, name, uid, gen = meta["namespace"], meta["name"], meta["uid"], meta.get("generation")
    try:
        measured = metrics.snapshot if metrics is not None else None
        # two decimals: the plan (and its memo) moves with the measured rate, not its noise
        raw = None if measured is None else measured.spec_decode_acceptance_rate
        rate = None if raw is None else round(raw, 2)
        running = read_running(kube, ns, dict(body))  # spec.workloadRef: plan at what runs
        service, plan = PLANS.planned(
            body,
            lambda parsed: with_hf_config(kube, ns, with_profile(kube, ns, parsed)),
            lambda spec: at_running_layout(with_measured_acceptance(spec, rate), running)[0],
            ("" if rate is None else f"acceptance={rate:.2f}") + (running.key if running else ""),
        )
        plan = noted(plan, running, service.spec)
    except SpecError as err:
        return _reject(kube, body, "InvalidSpec", str(err), now, emit)
    if plan.replicas is None:  # nothing can serve; a bound shortfall still deploys, flagged
        return _reject(
            kube, body, "Infeasible", "; ".join(plan.infeasible_reasons), now, emit, plan, service
        )

    status, problems = read_status(body.get("status"))
    previous = status.conditions
    ref = service.spec.workload_ref
    found = None
    if ref is not None:
        if plan.mix is not None or plan_is_split(plan):
            why = "spec.workloadRef: scales one workload; this spec plans several (GPU variants "
            why += "or prefill/decode roles): remove workloadRef or those sections"
            return _reject(kube, body, "InvalidSpec", why, now, emit, plan, service)
        found = find(kube, ns, ref.api_version, ref.kind, ref.name)
        if found.problem is not None:
            return _target_problem(kube, body, found, plan, service, now, emit)
    pods = found.selector if found is not None and found.selector else selector_string(name)
    lead_time = None if metrics is None else lead_time_s(kube.list_pods(ns, pods))
    if lead_time is not None and metrics is not None:
        lead_time *= metrics.time_scale
    if found is not None and ref is not None:  # the referenced workload, as found
        workload_kind, workload_now = ref.kind, found.object
    else:
        workload_kind = LWS_KIND if plan.nodes_per_replica > 1 else DEPLOYMENT
        workload_now = reader(kube, workload_kind)(ns, child_name(name))
    was = (
        None if workload_now is None else observe_workload({**workload_now, "kind": workload_kind})
    )
    live_replicas = None if was is None else was.replicas
    if plan.mix is not None and ref is None:  # a GPU mix: its variants' Deployments together
        mixed = observe_variants(
            [kube.read_deployment(ns, variant_workload_name(name, v.name)) for v in plan.variants]
        )
        was, live_replicas = mixed, None if mixed is None else mixed.replicas
    if found is not None and found.replicas is not None:
        live_replicas = found.replicas  # what /scale says
    roles: RolesMade | None = None
    role_lives: dict[str, dict[str, Any] | None] = {}
    if is_disaggregated(plan):  # each role on its own signals (controller/roles.py)
        role_lives = read_roles(kube, ns, name, plan)
        live_by_role = {
            role: None if seen is None else seen.replicas
            for role, seen in observed_roles(role_lives, plan).items()
        }
        roles = decide_roles_for(service, plan, status, metrics, lead_time, live_by_role)
        made = _Decided(
            roles.combined, None, None, roles.decided, roles.problems, roles.on_observation
        )
    else:
        made = _decide(service, plan, status, metrics, lead_time, live_replicas)
    decision = made.decision
    marks = stock_marks(kube, ns, name, status, now) if plan.mix is not None else {}
    bound = (
        QuotaBound(decision.replicas, roles.counts, None)  # GPU quotas: not per role yet
        if roles is not None
        else quota_bound(kube, ns, name, service.spec, plan, decision.replicas, room_of(marks))
    )
    bundle = render_bundle(
        name, ns, service.spec, plan, bound.replicas, Owner(name, uid), bound.counts
    )
    outcome = Outcome(
        feasible=True,
        replicas=decision.replicas,
        plan=plan,
        decision=decision,
        decided=made.decided,
        previous_decision=status.decided_replicas,
        live_replicas=live_replicas,
        memory_problems=problems + made.problems,
    )
    for problem in outcome.memory_problems:
        log.warning("%s/%s: %s", ns, name, problem)
    actuator = actuator_for(service.spec)
    target = None if ref is None else {"apiVersion": ref.api_version, "kind": ref.kind,
                                       "name": ref.name}  # fmt: skip
    wanted = Desired(
        name, ns, service.spec, bundle, decision, made.decided, status.decided_replicas,
        live_replicas, target,
    )  # fmt: skip
    try:
        objects = actuator.objects(wanted)
    except SpecError as err:
        return _reject(kube, body, "InvalidSpec", str(err), now, emit, plan, service)
    if actuator.mode != "keda" and (ref is not None or handed_over(workload_now)):
        _drop_scaled_object(kube, ns, child_name(name), uid)
    for type_, reason, message in actuator.events(wanted):
        emit(type_, reason, message)
        outcome.events.append((type_, reason, message))
    live_workload = None
    live_variants: list[dict[str, Any] | None] = []
    # one read per object; the workload was read already, before deciding
    lives = [
        workload_now
        if obj["kind"] == workload_kind
        and obj["metadata"]["name"] == (ref.name if ref is not None else child_name(name))
        else role_lives[role_of(obj) or ""]
        if roles is not None and obj["kind"] in WORKLOAD_KINDS and role_of(obj) is not None
        else _read_live(kube, ns, obj)
        for obj in objects
    ]
    taken = name_conflicts(objects, lives, uid)
    if taken:  # applying would adopt, merge into or (by GC) delete what is not ours
        return _name_conflict(kube, body, taken, plan, service, now, emit, outcome)
    for obj, read_back in zip(objects, lives, strict=True):
        kind, live = obj["kind"], read_back
        child = obj["metadata"]["name"]  # the InferenceService's name, or one derived from it
        # the reader chose the type (a PDB may be served as policy/v1beta1 on old clusters)
        desired = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
        if kind not in (SCALED_OBJECT, INFERENCE_POOL):  # not watched: no event to compare
            outcome.desired[(kind, child)] = obj
        release = kind in WORKLOAD_KINDS and not actuator.writes_replicas and not handed_over(live)
        if release:  # KEDA writes the replicas from now on: hand the field over first
            role = role_of(obj) if roles is not None else None
            count = decision.replicas if roles is None or role is None else roles.counts[role]
            live = _hand_over(kube, obj, live, count, emit, outcome)
        owned = managed_by(live, FIELD_MANAGER)
        diff = differences(desired, live, owned=owned) if live is not None else ["(missing)"]
        diff = diff or selector_drift(obj, live, owned)
        if diff or release:
            if kind == "Deployment" and live is not None and actuator.writes_replicas:
                _least_work_first(kube, ns, name, obj, live, metrics)
            try:
                applied = kube.apply(obj)
            except LwsNotInstalledError as err:
                _announce_created(outcome, emit)
                return _reject(
                    kube, body, "LeaderWorkerSetMissing", str(err), now, emit, plan, service
                )
            except KedaNotInstalledError as err:
                _announce_created(outcome, emit)
                return _reject(kube, body, "KedaMissing", str(err), now, emit, plan, service)
            except InferencePoolNotInstalledError as err:
                return _reject(
                    kube, body, "InferencePoolMissing", str(err), now, emit, plan, service
                )
            except ApiException as exc:  # refused, not lost: say so in status, then the retry
                if refused(exc):
                    _apply_refused(kube, body, kind, child, exc, plan, service, now)
                _announce_created(outcome, emit)  # what was created before this apply
                raise
            outcome.applied.append(kind)
            # the hand-over mark is bookkeeping of this reconcile, not a change to announce
            shown = [d for d in diff if not d.endswith(REPLICAS_WRITER)]
            if shown and roles is not None and role_of(obj) is not None:
                for said in role_events(kind, obj, live, shown, roles, actuator.writes_replicas):
                    emit(*said)
                    outcome.events.append(said)
            elif shown:
                _announce(kind, obj, live, shown, decision, emit, outcome, actuator)
            live = applied
        if kind in WORKLOAD_KINDS:
            live_workload = {**(live or {}), "kind": kind}
            live_variants.append(live)
            role = role_of(obj) if roles is not None else None
            if role is not None:
                role_lives[role] = live
            replaced = remove_stale(kube, ns, child, kind, owner=name, uid=uid)
            if replaced is not None:
                message = (
                    f"Replaced {replaced} {child} by {kind} {child}: a replica now spans "
                    f"{plan.nodes_per_replica} node(s) ({_layout(plan)})"
                )
                emit("Normal", "WorkloadReplaced", message)
                outcome.events.append(("Normal", "WorkloadReplaced", message))
    _announce_created(outcome, emit)

    if found is not None and found.where is not None and ref is not None:
        was = _scale_through(kube, ns, ref.name, found, wanted, actuator, metrics, emit, outcome)
    # advisory, or a referenced workload: the workload as found (and scaled)
    observed = observe_workload(live_workload) if objects and found is None else was
    if (plan.mix is not None or roles is not None) and objects:
        # the roles or variants as one; the one-pool Deployment (spec changed) goes
        observed = observe_variants(live_variants)
        remove_single_workload(kube, ns, name)
    if status.variants and ref is None:  # variants the spec dropped (or all: one GPU type)
        kept = {v.name for v in plan.variants}
        for child in remove_old_variants(
            kube, ns, name, uid, [v.name for v in status.variants], kept
        ):
            message = f"Deleted Deployment {child}: its GPU variant is no longer in spec.hardware"
            emit("Normal", "WorkloadRemoved", message)
            outcome.events.append(("Normal", "WorkloadRemoved", message))
    outcome.observed = observed
    outcome.ready_replicas = observed.ready_replicas if observed else 0
    moved = live_replicas is not None and live_replicas != decision.replicas
    if roles is not None:
        moved = any(n is not None and n != roles.counts[role] for role, n in live_by_role.items())
    scaled = actuator.writes_replicas and moved
    summary = plan_summary(
        plan, service.spec.slo.ttft_p99_seconds, service.spec.slo.tpot_p99_seconds
    )
    live_snap = None if metrics is None else _live_snapshot(metrics)
    now_live = (
        live_status(live_snap, rfc3339(metrics.read_at_s or metrics.now_s))
        if metrics is not None and live_snap is not None
        else None
    )
    new_status = InferenceServiceStatus(
        observed_generation=gen,
        replicas=decision.replicas,
        decided_replicas=decision.replicas,
        ready_replicas=observed.ready_replicas if observed else 0,
        available_replicas=observed.available_replicas if observed else 0,
        selector=pods,
        tensor_parallel_size=plan.tensor_parallel_size,
        plan=summary,
        decision=made.status,
        diagnosis=decision.diagnosis if made.decided else status.diagnosis,
        conditions=[
            ready_condition(previous, True, observed, now, gen),
            condition(
                previous,
                "PlanFeasible",
                "True" if plan.feasible and bound.limited is None else "False",
                ("Planned" if plan.feasible else "BelowNeed")
                if bound.limited is None
                else bound.reason,
                f"{plan.sized.total} × {_layout(plan)} planned: "
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
                bundle.objects,
                None if metrics is None else metrics.snapshot,
                now,
                gen,
            ),
            *([exhausted_condition(previous, marks, now, gen)] if plan.mix is not None else []),
            *([matches_condition(previous, found, bundle, service, now, gen)] if found else []),
        ],
        variants=variant_statuses(plan, bound.counts, marks),
        roles=None if roles is None else roles.status(observed_roles(role_lives, plan), plan),
        last_scale_time=now if scaled else (status.last_scale_time or now),
        scaling=made.state,  # its decidedReplicas is the top-level one (excluded here)
        live=now_live,
        ttft_p99=ttft_display(now_live, summary),
    )
    _write_status(kube, body, new_status)
    return outcome


def _hand_over(
    kube: Kube,
    obj: dict[str, Any],
    live: dict[str, Any] | None,
    replicas: int,
    emit: EventSink,
    outcome: Outcome,
) -> dict[str, Any]:
    """Before tokenscale applies a workload without ``spec.replicas`` for the first time:
    create it at the decided count when missing (without the hand-over mark, so an
    interrupted hand-over is redone), then let ``tokenscale-handover`` co-own the live count,
    so that leaving the field out does not reset it to 1."""
    if live is None:
        meta = {**obj["metadata"]}
        meta["annotations"] = {
            k: v for k, v in (meta.get("annotations") or {}).items() if k != REPLICAS_WRITER
        }
        live = kube.apply({**obj, "metadata": meta, "spec": {**obj["spec"], "replicas": replicas}})
        message = f"Created {obj['kind']} {meta['name']} with {replicas} replicas (KEDA scales it)"
        emit("Normal", "Created", message)
        outcome.events.append(("Normal", "Created", message))
    count = int((live.get("spec") or {}).get("replicas") or 0)
    return kube.hand_over_replicas(obj, count)


def _target_problem(
    kube: Kube,
    body: Mapping[str, Any],
    found: Found,
    plan: Plan,
    service: InferenceService,
    now: str,
    emit: EventSink,
) -> Outcome:
    """The referenced workload cannot be scaled (unknown kind, no /scale, not there):
    ``Ready=False`` with the reason, one Warning event per new reason; nothing written, no
    error raised (the next interval looks again)."""
    meta = body["metadata"]
    status, _ = read_status(body.get("status"))
    previous = status.conditions
    reason, message = found.reason or "TargetMissing", found.problem or ""
    old = next((c for c in previous if c.type == "Ready"), None)
    outcome = Outcome(feasible=True, plan=plan)
    if old is None or old.reason != reason or old.message != message:
        emit("Warning", reason, message)
        outcome.events.append(("Warning", reason, message))
    summary = plan_summary(
        plan, service.spec.slo.ttft_p99_seconds, service.spec.slo.tpot_p99_seconds
    )
    new_status = unapplied_status(
        previous,
        status,
        reason,
        message,
        "the referenced workload is not available to scale",
        summary,
        selector_string(meta["name"]),
        now,
        meta.get("generation"),
    )
    _write_status(kube, body, new_status)
    return outcome


def _scale_through(
    kube: Kube,
    ns: str,
    target: str,
    found: Found,
    wanted: Desired,
    actuator: Actuator,
    metrics: MetricsView | None,
    emit: EventSink,
    outcome: Outcome,
) -> Observed | None:
    """Direct mode on a referenced workload: write only ``spec.replicas``, through ``/scale``,
    when it differs from the decision (least-busy pods marked first on a scale-down). The
    workload as found, with the replicas written."""
    was = None if found.object is None else observe_workload(found.object)
    to = actuator.through_scale(wanted)
    live = wanted.live_replicas
    if to is None or to == live or found.where is None:
        return was
    if live is not None and to < live:
        _least_work_first(
            kube, ns, wanted.name, {"spec": {"replicas": to}}, {"spec": {"replicas": live}},
            metrics, found.selector,
        )  # fmt: skip
    kube.write_replicas(found.where, ns, target, to)
    kind = (found.object or {}).get("kind", "workload")
    d = wanted.decision
    if wanted.decided and wanted.previous != d.replicas:
        reason, message = "Scaled", f"Scaled {kind} {target} {live}→{to} (/scale): {d.why}"
    else:
        reason = "DriftCorrected"
        message = (
            f"Undid a change of {kind} {target} replicas {live}→{to} (/scale; the decision "
            f"stands: {d.why})"
        )
    emit("Normal" if reason == "Scaled" else "Warning", reason, message)
    outcome.events.append(("Normal" if reason == "Scaled" else "Warning", reason, message))
    outcome.applied.append(f"{kind}/scale")
    return None if was is None else dataclasses.replace(was, replicas=to)


def _drop_scaled_object(kube: Kube, ns: str, child: str, uid: str) -> None:
    """Out of keda mode: our ScaledObject goes (KEDA would keep scaling from the metric that
    advisory mode still exports, or fight direct mode's writes); someone else's stays."""
    found = kube.read_scaled_object(ns, child)
    if found is not None and is_ours(found, uid):
        kube.delete_scaled_object(ns, child)


def _live_snapshot(metrics: MetricsView) -> Snapshot | None:
    """What status.live shows: the engines' snapshot with the demand in front of them (at zero
    replicas, the demand alone); None when neither was read."""
    obs = metrics.observation if metrics.demand is not None else None
    if obs is not None and obs.snapshot is not None:
        return obs.snapshot
    return metrics.snapshot


def _read_live(kube: Kube, ns: str, obj: dict[str, Any]) -> dict[str, Any] | None:
    kind = obj["kind"]
    if kind == SCALED_OBJECT:  # only with actuation keda
        return kube.read_scaled_object(ns, obj["metadata"]["name"])
    if kind == INFERENCE_POOL:  # only with spec.gateway.inferencePool.endpointPicker
        return kube.read_inference_pool(ns, obj["metadata"]["name"])
    read = {
        "Service": kube.read_service,
        "PodDisruptionBudget": kube.read_pdb,
    }.get(kind) or reader(kube, kind)
    return read(ns, obj["metadata"]["name"])


def _name_conflict(
    kube: Kube,
    body: Mapping[str, Any],
    taken: list[NameConflict],
    plan: Plan,
    service: InferenceService,
    now: str,
    emit: EventSink,
    outcome: Outcome,
) -> Outcome:
    """Nothing applied; ``Ready=False`` NameConflict and one Warning event per new conflict."""
    meta = body["metadata"]
    status, _ = read_status(body.get("status"))
    previous = status.conditions
    if not announced(previous, taken):
        message = conflict_message(taken)
        emit("Warning", NAME_CONFLICT, message)
        outcome.events.append(("Warning", NAME_CONFLICT, message))
    summary = plan_summary(
        plan, service.spec.slo.ttft_p99_seconds, service.spec.slo.tpot_p99_seconds
    )
    new_status = conflict_status(
        previous, status, taken, summary, selector_string(meta["name"]), now, meta.get("generation")
    )
    _write_status(kube, body, new_status)
    outcome.decision, outcome.replicas = None, None
    return outcome


def _apply_refused(
    kube: Kube,
    body: Mapping[str, Any],
    kind: str,
    child: str,
    exc: ApiException,
    plan: Plan,
    service: InferenceService,
    now: str,
) -> None:
    """The API server refused an object (4xx other than a conflict or throttling): Ready=False
    ApplyFailed in status; the caller's event and retry follow."""
    meta = body["metadata"]
    status, _ = read_status(body.get("status"))
    previous = status.conditions
    message = f"the API server refused {kind} {child}: {refusal(exc)}"
    summary = plan_summary(
        plan, service.spec.slo.ttft_p99_seconds, service.spec.slo.tpot_p99_seconds
    )
    new_status = unapplied_status(
        previous,
        status,
        "ApplyFailed",
        message,
        f"{kind} {child} not applied",
        summary,
        selector_string(meta["name"]),
        now,
        meta.get("generation"),
    )
    _write_status(kube, body, new_status)


def _layout(plan: Plan) -> str:
    parts = [f"TP {plan.tensor_parallel_size}"]
    if plan.pipeline_parallel_size > 1:
        parts.append(f"PP {plan.pipeline_parallel_size}")
    if plan.data_parallel_size > 1:
        parts.append(f"DP {plan.data_parallel_size}")
    text = " × ".join(parts) + (" with expert parallel" if plan.expert_parallel else "")
    return text + (f" on {plan.nodes_per_replica} nodes" if plan.nodes_per_replica > 1 else "")


def _least_work_first(
    kube: Kube,
    ns: str,
    name: str,
    desired: dict[str, Any],
    live: dict[str, Any],
    metrics: MetricsView | None,
    selector: str | None = None,
) -> None:
    """Before fewer replicas: the pods with the least running requests get the lowest
    deletion cost, so the ReplicaSet removes them first."""
    fewer = int(desired["spec"]["replicas"]) < int((live.get("spec") or {}).get("replicas") or 0)
    if not fewer or metrics is None:
        return
    if not metrics.running_by_pod:
        log.info("%s/%s: scale-down without per-pod metrics: the ReplicaSet picks", ns, name)
        return
    pods = kube.list_pods(ns, selector or selector_string(name))
    costs = deletion_costs(pods, metrics.running_by_pod)
    for pod, cost in costs.items():
        kube.annotate_pod(ns, pod, {DELETION_COST: cost})
    log.info(
        "%s/%s: scale-down: deletion cost set on %d of %d pods", ns, name, len(costs), len(pods)
    )


def _write_status(kube: Kube, body: Mapping[str, Any], new: InferenceServiceStatus) -> None:
    """Replace the status whole when it differs from the one read. The write carries the
    resourceVersion read; on 409 Conflict ``Kube.replace_status`` re-reads the version and
    writes the same status again (the operator is the status' only writer: whatever another
    client wrote there since the read is replaced)."""
    document = status_document(new)
    if document != dict(body.get("status") or {}):
        meta = body["metadata"]
        kube.replace_status(meta["namespace"], meta["name"], document, meta.get("resourceVersion"))


def _announce_created(outcome: Outcome, emit: EventSink) -> None:
    """One ``Created`` event naming every object this reconcile created (one event, not one per
    object: a new service's Deployment, Service and PodDisruptionBudget cost one POST)."""
    if outcome.created:
        message = f"Created {', '.join(outcome.created)}"
        emit("Normal", "Created", message)
        outcome.events.append(("Normal", "Created", message))
        outcome.created.clear()


def _announce(
    kind: str,
    desired: dict[str, Any],
    live: dict[str, Any] | None,
    diff: list[str],
    decision: Decision,
    emit: EventSink,
    outcome: Outcome,
    actuator: Actuator,
) -> None:
    """One event per reason: created, configuration rolled, scaled by a new decision (the
    workload's count before the apply → the decision), or a manual change undone (live
    replicas that differ from an unchanged decision are drift). The words come from the
    decision's typed cause and its numbers."""

    def say(type_: str, why: str, message: str) -> None:
        emit(type_, why, message)
        outcome.events.append((type_, why, message))

    if live is None:  # announced with the others this reconcile created (_announce_created)
        extra = f" with {decision.replicas} replicas" if kind in WORKLOAD_KINDS else ""
        outcome.created.append(f"{kind} {desired['metadata']['name']}{extra}")
        return
    if kind not in WORKLOAD_KINDS:
        say("Warning", "DriftCorrected", f"Undid changes to {kind}: {', '.join(diff[:5])}")
        return
    old_hash = ((live.get("metadata") or {}).get("annotations") or {}).get(CONFIG_HASH_ANNOTATION)
    new_hash = desired["metadata"]["annotations"][CONFIG_HASH_ANNOTATION]
    reconfigured = old_hash != new_hash
    was = int((live.get("spec") or {}).get("replicas") or 0)
    # replicas another writer sets (KEDA) are neither a scale of ours nor drift
    rescaled = actuator.writes_replicas and was != decision.replicas
    if reconfigured:
        say(
            "Normal",
            "ConfigChanged",
            f"Rolling out a new vLLM configuration ({old_hash} → {new_hash})",
        )
    if rescaled and outcome.decided and outcome.previous_decision != decision.replicas:
        say(
            "Normal",
            "Scaled",
            f"Scaled {was}→{decision.replicas}: {decision.why}",
        )
    elif rescaled:
        say(
            "Warning",
            "DriftCorrected",
            f"Undid a manual change of replicas {was}→{decision.replicas} (the decision stands: "
            f"{decision.why})",
        )
    elif not reconfigured:
        say("Warning", "DriftCorrected", f"Undid manual changes to {', '.join(diff[:5])}")
