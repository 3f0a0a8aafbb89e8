"""One level-triggered, idempotent reconcile of one InferenceService.

observe → desire → act → status. :func:`observe` makes every read (the spec and its plan, the
status, the workload as found, quota and pods; ``controller/observation.py``);
:func:`~tokenscale.controller.desire.desire` decides, renders and picks what the actuator
writes, with no I/O; :func:`act` applies what drifted, scales through ``/scale``, deletes what
the spec dropped and emits the events; the status is derived from the three
(:func:`~tokenscale.controller.desire.settled_status`) and written whole. It re-reads the world
every time and never branches on what changed in the event that woke it. Bad or infeasible
input sets ``PlanFeasible=False`` (a Warning event only when that verdict changes: no storm)
and leaves the Deployment alone.

Deciding goes through :class:`~tokenscale.scaling.stepper.Stepper` (``controller/desire.py``):
a reconcile on an observation already decided on (an owned Deployment's event, a spec update, a
retry) renders and applies the decision stored in status.
"""

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from kubernetes.client.exceptions import ApiException

from tokenscale.api.errors import SpecError
from tokenscale.api.inference_service import InferenceService
from tokenscale.api.profile import parse_profile
from tokenscale.api.status import InferenceServiceStatus
from tokenscale.controller.actuation import REPLICAS_WRITER_ANNOTATION as REPLICAS_WRITER
from tokenscale.controller.actuation import Actuator, handed_over
from tokenscale.controller.api import ConfigMapReader, KubeApi
from tokenscale.controller.desire import (
    Desire,
    desire,
    layout,
    rejected_status,
    rejection_is_news,
    settled_status,
)
from tokenscale.controller.graceful import DELETION_COST, deletion_costs
from tokenscale.controller.lead_time import lead_time_s
from tokenscale.controller.length_classes import (
    class_rows,
    parent_status,
    remove_children,
    sync_children,
)
from tokenscale.controller.lora_config_ref import with_adapter_configs
from tokenscale.controller.model_config_ref import with_hf_config
from tokenscale.controller.objectives import objectives_may_remain, remove_dropped_objectives
from tokenscale.controller.observation import MetricsView, Observation
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
from tokenscale.controller.quota import read_quota
from tokenscale.controller.roles import (
    observed_roles,
    read_roles,
    role_events,
    role_of,
)
from tokenscale.controller.running_layout import at_running_layout, noted, read_running
from tokenscale.controller.status import (
    Observed,
    plan_summary,
    read_status,
    status_document,
)
from tokenscale.controller.status_news import news
from tokenscale.controller.variants import (
    observe_variants,
    remove_old_variants,
    remove_single_workload,
    stock_marks,
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
)
from tokenscale.kube.client import FIELD_MANAGER
from tokenscale.kube.drift import differences, managed_by
from tokenscale.kube.inference_objective import InferenceObjectiveNotInstalledError
from tokenscale.kube.inference_pool import InferencePoolNotInstalledError
from tokenscale.kube.keda import KedaNotInstalledError
from tokenscale.kube.lws import KIND as LWS_KIND
from tokenscale.kube.lws import LwsNotInstalledError
from tokenscale.planning import Plan
from tokenscale.planning.speculative import with_measured_acceptance
from tokenscale.render import child_name, selector_string
from tokenscale.render.bundle import Owner
from tokenscale.render.inference_objective import KIND as INFERENCE_OBJECTIVE
from tokenscale.render.inference_pool import KIND as INFERENCE_POOL
from tokenscale.render.keda import KIND as SCALED_OBJECT
from tokenscale.render.labels import CONFIG_HASH_ANNOTATION
from tokenscale.render.length_classes import class_services
from tokenscale.render.variants import variant_workload_name
from tokenscale.scaling import Decision
from tokenscale.scaling.stockout import room_of

__all__ = ["EventSink", "MetricsView", "Outcome", "act", "observe", "reconcile", "with_profile"]

log = logging.getLogger(__name__)


class EventSink(Protocol):
    def __call__(self, type_: str, reason: str, message: str) -> None: ...


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
    held_status: dict[str, Any] | None = None
    """The status this reconcile computed and did not write: nothing a reader acts on changed
    (``controller/status_news.py``); the next reconcile starts from it."""
    status_written: bool = False
    """This reconcile wrote the status."""


def _length_classes(
    kube: KubeApi,
    body: Mapping[str, Any],
    service: InferenceService,
    plan: Plan,
    now: str,
    emit: EventSink,
) -> Outcome:
    """A service with length classes: its children in step, its own one-pool workload gone (a
    spec that gained classes), its status from the children's (``controller/length_classes``)."""
    meta = body["metadata"]
    ns, name, uid, gen = meta["namespace"], meta["name"], meta["uid"], meta.get("generation")
    desired = class_services(name, ns, service.spec, Owner(name, uid))
    synced = sync_children(kube, ns, name, uid, desired)
    outcome = Outcome(feasible=plan.feasible, plan=plan)
    outcome.replicas = sum(p.replicas for p in plan.pools)
    outcome.applied = [f"InferenceService/{n}" for n in synced.applied]
    outcome.created = [f"InferenceService/{n}" for n in synced.created]
    _announce_created(outcome, emit)
    removed = [f"InferenceService/{n}" for n in synced.removed]
    own = kube.read_deployment(ns, child_name(name))
    if own is not None and is_ours(own, uid):  # it ran one pool before its classes
        kube.delete_deployment(ns, child_name(name))
        removed.append(f"Deployment/{child_name(name)}")
    for gone in removed:
        message = f"Deleted {gone}: spec.serving.lengthClasses no longer runs it"
        emit("Normal", "LengthClassRemoved", message)
        outcome.events.append(("Normal", "LengthClassRemoved", message))
    rows = class_rows(synced.live)
    for want, row in zip(desired, rows, strict=True):  # a child's event that moves its row
        seen = {"replicas": row.replicas, "readyReplicas": row.ready_replicas}
        outcome.desired[("InferenceService", row.service)] = {**want, "status": seen}
    status, _ = read_status(body.get("status"))
    new = parent_status(status, service, plan, rows, now, gen)
    outcome.status_written = _write_status(kube, body, new)
    return outcome


def _reject(
    kube: KubeApi,
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
    if rejection_is_news(previous, message):
        emit("Warning", reason, message)
        outcome.events.append(("Warning", reason, message))
    workload = read_workload(kube, ns, child_name(name))
    # a workload of that name that is not ours says nothing about this InferenceService
    observed = observe_workload(workload if workload and is_ours(workload, meta["uid"]) else None)
    new_status = rejected_status(status, reason, message, observed, plan, service, name, now, gen)
    outcome.status_written = _write_status(kube, body, new_status)
    return outcome


def with_profile(
    kube: ConfigMapReader, namespace: str, service: InferenceService
) -> InferenceService:
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
    kube: KubeApi,
    body: Mapping[str, Any],
    now: str,
    emit: EventSink,
    metrics: MetricsView | None = None,
    held: Mapping[str, Any] | None = None,
) -> Outcome:
    """Bring the owned objects of ``body`` to the rendered state and write its status:
    :func:`observe`, :func:`~tokenscale.controller.desire.desire` (pure), :func:`act`, then
    the status :func:`~tokenscale.controller.desire.settled_status` derives, written only when
    it is news against the status the API server holds
    (:func:`~tokenscale.controller.status_news.news`), else returned in
    ``Outcome.held_status``. ``held``: the status a previous reconcile held back, newer than
    ``body``'s (the engine's memory goes on from it)."""
    stored = body.get("status")
    if held is not None:
        body = {**body, "status": dict(held)}
    seen = observe(kube, body, now, emit, metrics)
    if isinstance(seen, Outcome):  # the spec or its target cannot be served: said in status
        return seen
    wanted = desire(seen)
    outcome = Outcome(
        feasible=True,
        replicas=wanted.decision.replicas,
        plan=seen.plan,
        decision=wanted.decision,
        decided=wanted.made.decided,
        previous_decision=seen.status.decided_replicas,
        live_replicas=seen.live_replicas,
        memory_problems=wanted.memory_problems,
    )
    for problem in outcome.memory_problems:
        log.warning("%s/%s: %s", seen.namespace, seen.name, problem)
    acted = act(kube, body, seen, wanted, emit, outcome)
    if isinstance(acted, Outcome):  # an API the objects need is not installed
        return acted
    observed, role_lives = acted
    outcome.observed = observed
    outcome.ready_replicas = observed.ready_replicas if observed else 0
    new = status_document(settled_status(seen, wanted, observed, role_lives))
    if new != dict(stored or {}):
        why = news(stored, new)
        if why is None:
            outcome.held_status = new
        else:
            log.debug("%s/%s: status written: %s changed", seen.namespace, seen.name, why)
            meta = body["metadata"]
            kube.replace_status(meta["namespace"], meta["name"], new, meta.get("resourceVersion"))
            outcome.status_written = True
    return outcome


def observe(
    kube: KubeApi,
    body: Mapping[str, Any],
    now: str,
    emit: EventSink,
    metrics: MetricsView | None,
) -> Observation | Outcome:
    """Every read one reconcile makes before it decides. A spec that cannot be served (invalid,
    infeasible, or a referenced workload that cannot be scaled) is said in status here, and
    the :class:`Outcome` of that is returned instead."""
    meta = body["metadata"]
    ns, name, uid, gen = meta["namespace"], meta["name"], meta["uid"], meta.get("generation")
    try:
        measured = metrics.snapshot if metrics is not None else None
        # two decimals: the plan (and its memo) moves with the measured rate, not its noise
        raw = None if measured is None else measured.spec_decode_acceptance_rate
        rate = None if raw is None else round(raw, 2)
        # spec.workloadRef: plan at what runs (and scale through what was found there)
        running, found_ref = read_running(kube, ns, dict(body))
        service, plan = PLANS.planned(
            body,
            lambda parsed: with_adapter_configs(
                kube, ns, with_hf_config(kube, ns, with_profile(kube, ns, parsed))
            ),
            lambda spec: at_running_layout(with_measured_acceptance(spec, rate), running)[0],
            ("" if rate is None else f"acceptance={rate:.2f}") + (running.key if running else ""),
        )
        plan = noted(plan, running, service.spec)
    except SpecError as err:
        return _reject(kube, body, "InvalidSpec", str(err), now, emit)
    if plan.length_split is not None:  # one child InferenceService per class
        return _length_classes(kube, body, service, plan, now, emit)
    if plan.replicas is None:  # nothing can serve; a bound shortfall still deploys, flagged
        return _reject(
            kube, body, "Infeasible", "; ".join(plan.infeasible_reasons), now, emit, plan, service
        )

    status, problems = read_status(body.get("status"))
    if status.length_classes:  # it ran length classes: their children go
        for gone in remove_children(kube, ns, name, uid, set()):
            emit("Normal", "LengthClassRemoved", f"Deleted InferenceService/{gone}: no classes")
    ref = service.spec.workload_ref
    found = None
    if ref is not None:  # one workload: the spec's validator refused variants and P/D with it
        found = found_ref or find(kube, ns, ref.api_version, ref.kind, ref.name)
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
    if plan.is_mix and ref is None:  # a GPU mix: its variants' Deployments together
        mixed = observe_variants(
            [kube.read_deployment(ns, variant_workload_name(name, v.name)) for v in plan.variants]
        )
        was, live_replicas = mixed, None if mixed is None else mixed.replicas
    if found is not None and found.replicas is not None:
        live_replicas = found.replicas  # what /scale says
    role_lives: dict[str, dict[str, Any] | None] = {}
    live_by_role: dict[str, int | None] = {}
    if plan.is_disaggregated:
        role_lives = read_roles(kube, ns, name, plan)
        live_by_role = {
            role: None if seen is None else seen.replicas
            for role, seen in observed_roles(role_lives, plan).items()
        }
    marks = stock_marks(kube, ns, name, status, now) if plan.is_mix else {}
    quota = None if plan.is_disaggregated else read_quota(kube, ns, name, room_of(marks), pods)
    return Observation(
        name=name,
        namespace=ns,
        uid=uid,
        generation=gen,
        now=now,
        now_s=metrics.now_s if metrics is not None else _epoch_s(now),
        service=service,
        plan=plan,
        status=status,
        status_problems=problems,
        found=found,
        selector=pods,
        lead_time_s=lead_time,
        workload_kind=workload_kind,
        workload_now=workload_now,
        was=was,
        live_replicas=live_replicas,
        role_lives=role_lives,
        live_by_role=live_by_role,
        marks=marks,
        quota=quota,
        metrics=metrics,
    )


def _epoch_s(stamp: str) -> float:
    """An RFC 3339 UTC time (``…Z``) as epoch seconds."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def act(
    kube: KubeApi,
    body: Mapping[str, Any],
    seen: Observation,
    wanted: Desire,
    emit: EventSink,
    outcome: Outcome,
) -> tuple[Observed | None, dict[str, dict[str, Any] | None]] | Outcome:
    """Write what ``wanted`` says through its actuator: drop a ScaledObject left from keda
    mode, apply what drifted (never what is not ours), scale a referenced workload through
    ``/scale``, delete workloads the spec no longer renders; one event per reason. The
    workload as left (the variants or roles as one) and each role's workload as applied; an
    :class:`Outcome` when nothing could be applied (a name taken, an API not installed)."""
    ns, name, uid, now = seen.namespace, seen.name, seen.uid, seen.now
    service, plan, status, metrics = seen.service, seen.plan, seen.status, seen.metrics
    ref, found, workload_kind = service.spec.workload_ref, seen.found, seen.workload_kind
    decision, roles, actuator = wanted.decision, wanted.roles, wanted.actuator
    objects = wanted.objects
    role_lives = dict(seen.role_lives)
    was = seen.was
    if wanted.drop_scaled_object:
        _drop_scaled_object(kube, ns, child_name(name), uid)
    for type_, reason, message in wanted.events:
        emit(type_, reason, message)
        outcome.events.append((type_, reason, message))
    live_workload = None
    live_variants: list[dict[str, Any] | None] = []
    # one read per object; the workload was read already, before deciding
    lives = [
        seen.workload_now
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
        if kind not in (SCALED_OBJECT, INFERENCE_POOL, INFERENCE_OBJECTIVE):  # not watched
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
            except InferenceObjectiveNotInstalledError as err:
                return _reject(
                    kube, body, "InferenceObjectiveMissing", str(err), now, emit, plan, service
                )
            except ApiException as exc:  # refused, not lost: say so in status, then the retry
                if refused(exc):
                    _apply_refused(kube, body, kind, child, exc, plan, service, now)
                _announce_created(outcome, emit)  # what was created before this apply
                raise
            outcome.applied.append(kind)
            # the hand-over mark is bookkeeping of this reconcile, not a change to announce
            shown = [d for d in diff if not d.endswith(REPLICAS_WRITER)]
            if kind == "PodDisruptionBudget" and _moves_replicas(seen, wanted.bound.replicas):
                # the budget follows the replicas: changed by this scale, not by anyone else
                shown = [d for d in shown if not d.startswith(BUDGET_FIELDS)]
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
                    f"{plan.nodes_per_replica} node(s) ({layout(plan)})"
                )
                emit("Normal", "WorkloadReplaced", message)
                outcome.events.append(("Normal", "WorkloadReplaced", message))
    _announce_created(outcome, emit)

    if found is not None and found.where is not None and ref is not None:
        was = _scale_through(kube, ns, ref.name, found, wanted, metrics, emit, outcome)
    # advisory, or a referenced workload: the workload as found (and scaled)
    observed = observe_workload(live_workload) if objects and found is None else was
    if (plan.is_mix or roles is not None) and objects:
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
    pool = service.spec.gateway.inference_pool
    if objectives_may_remain(pool is not None, status):  # classes, or the gateway, dropped
        kept = {o["metadata"]["name"] for o in objects if o["kind"] == INFERENCE_OBJECTIVE}
        why = (
            "its class is no longer in the spec"
            if pool is not None
            else "spec.gateway.inferencePool was removed"
        )
        for child in remove_dropped_objectives(kube, ns, name, uid, kept):
            message = f"Deleted InferenceObjective {child}: {why}"
            emit("Normal", "ObjectiveRemoved", message)
            outcome.events.append(("Normal", "ObjectiveRemoved", message))
    return observed, role_lives


BUDGET_FIELDS = (".spec.minAvailable", ".spec.maxUnavailable")
"""A PodDisruptionBudget's fields rendered from the replica count."""


def _moves_replicas(seen: Observation, replicas: int) -> bool:
    """Whether this reconcile moves the replicas to ``replicas`` (a new count, or the workload
    not at it yet): the budget rendered from the count moves with it."""
    return replicas != seen.status.decided_replicas or replicas != seen.live_replicas


def _hand_over(
    kube: KubeApi,
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
    kube: KubeApi,
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
    outcome.status_written = _write_status(kube, body, new_status)
    return outcome


def _scale_through(
    kube: KubeApi,
    ns: str,
    target: str,
    found: Found,
    desire: Desire,
    metrics: MetricsView | None,
    emit: EventSink,
    outcome: Outcome,
) -> Observed | None:
    """Direct mode on a referenced workload: write only ``spec.replicas``, through ``/scale``,
    when it differs from the decision (least-busy pods marked first on a scale-down). The
    workload as found, with the replicas written."""
    was = None if found.object is None else observe_workload(found.object)
    to, wanted = desire.scale_to, desire.wanted
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


def _drop_scaled_object(kube: KubeApi, ns: str, child: str, uid: str) -> None:
    """Out of keda mode: our ScaledObject goes (KEDA would keep scaling from the metric that
    advisory mode still exports, or fight direct mode's writes); someone else's stays."""
    found = kube.read_scaled_object(ns, child)
    if found is not None and is_ours(found, uid):
        kube.delete_scaled_object(ns, child)


def _read_live(kube: KubeApi, ns: str, obj: dict[str, Any]) -> dict[str, Any] | None:
    kind = obj["kind"]
    if kind == SCALED_OBJECT:  # only with actuation keda
        return kube.read_scaled_object(ns, obj["metadata"]["name"])
    if kind == INFERENCE_POOL:  # only with spec.gateway.inferencePool.endpointPicker
        return kube.read_inference_pool(ns, obj["metadata"]["name"])
    if kind == INFERENCE_OBJECTIVE:  # only with classes and spec.gateway.inferencePool
        return kube.read_inference_objective(ns, obj["metadata"]["name"])
    read = {
        "Service": kube.read_service,
        "PodDisruptionBudget": kube.read_pdb,
    }.get(kind) or reader(kube, kind)
    return read(ns, obj["metadata"]["name"])


def _name_conflict(
    kube: KubeApi,
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
    outcome.status_written = _write_status(kube, body, new_status)
    outcome.decision, outcome.replicas = None, None
    return outcome


def _apply_refused(
    kube: KubeApi,
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


def _least_work_first(
    kube: KubeApi,
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


def _write_status(kube: KubeApi, body: Mapping[str, Any], new: InferenceServiceStatus) -> bool:
    """Replace the status whole when it differs from the one read. The write carries the
    resourceVersion read; on 409 Conflict ``Kube.replace_status`` re-reads the version and
    writes the same status again (the operator is the status' only writer: whatever another
    client wrote there since the read is replaced)."""
    document = status_document(new)
    if document == dict(body.get("status") or {}):
        return False
    meta = body["metadata"]
    kube.replace_status(meta["namespace"], meta["name"], document, meta.get("resourceVersion"))
    return True


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
    if rescaled and handed_over(live):  # KEDA wrote them until this reconcile: not drift
        say(
            "Normal",
            "Scaled",
            f"Took the replicas back from KEDA: {was}→{decision.replicas} ({decision.why})",
        )
    elif rescaled and outcome.decided and outcome.previous_decision != decision.replicas:
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
