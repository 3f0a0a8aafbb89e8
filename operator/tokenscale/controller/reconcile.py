"""One level-triggered, idempotent reconcile of one InferenceService.

parse → plan → decide → render → apply what drifted → report. It re-reads the world every
time and never branches on what changed in the event that woke it. Bad or infeasible input
sets ``PlanFeasible=False`` (a Warning event only when that verdict changes: no storm) and
leaves the Deployment alone.
"""

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import ValidationError

from tokenscale.api.errors import SpecError
from tokenscale.api.inference_service import InferenceService
from tokenscale.api.profile import parse_profile
from tokenscale.api.status import Condition, InferenceServiceStatus, ScalingStateStatus
from tokenscale.controller.graceful import DELETION_COST, deletion_costs
from tokenscale.controller.lead_time import lead_time_s
from tokenscale.controller.plans import PLANS
from tokenscale.controller.status import (
    Observed,
    condition,
    decision_status,
    deployment_condition,
    live_status,
    metrics_condition,
    plan_summary,
    ready_condition,
    scaling_state_status,
    state_from_status,
    status_document,
    ttft_display,
)
from tokenscale.controller.workload import (
    WORKLOAD_KINDS,
    observe_workload,
    read_workload,
    reader,
    remove_stale,
    selector_drift,
)
from tokenscale.kube.client import Kube
from tokenscale.kube.drift import differences
from tokenscale.kube.lws import LwsNotInstalledError
from tokenscale.planning import Plan
from tokenscale.render import Owner, render_bundle, selector_string
from tokenscale.render.labels import CONFIG_HASH_ANNOTATION
from tokenscale.scaling import Decision, EngineInput, Snapshot, decide, decide_plan_only

log = logging.getLogger(__name__)


class EventSink(Protocol):
    def __call__(self, type_: str, reason: str, message: str) -> None: ...


@dataclass(frozen=True)
class MetricsView:
    """Live metrics for one service this cycle (None everywhere: no Prometheus configured)."""

    snapshot: Snapshot | None
    source_error: str | None
    now_s: float
    stale_after_s: float = 120.0
    running_by_pod: Mapping[str, float] | None = None
    """Running requests per pod (None: unknown), to pick the pods a scale-down removes."""


@dataclass
class Outcome:
    """What one reconcile did (for logs, tests and the operator's metrics)."""

    feasible: bool
    replicas: int | None = None
    applied: list[str] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)
    plan: Plan | None = None
    decision: Decision | None = None
    previous_decision: int | None = None
    ready_replicas: int = 0
    desired: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The rendered objects by kind (what an owned object's watch event is compared with)."""
    observed: Observed | None = None
    """The workload as the status reports it."""


def _previous(body: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    status = dict(body.get("status") or {})
    return status, list(status.get("conditions") or [])


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
    status, previous = _previous(body)
    old = next((c for c in previous if c.get("type") == "PlanFeasible"), {})
    if old.get("status") != "False" or old.get("message") != message:
        emit("Warning", reason, message)
        outcome.events.append(("Warning", reason, message))
    observed = observe_workload(read_workload(kube, ns, name))
    summary = (
        plan_summary(plan, service.spec.slo.ttft_p99_seconds, service.spec.slo.tpot_p99_seconds)
        if plan is not None and plan.replicas is not None and service is not None
        else None
    )
    try:  # written by us through the same schema; anything else is dropped, not fatal
        kept = ScalingStateStatus.model_validate(status.get("scaling"))
    except ValidationError:
        kept = None
    new_status = InferenceServiceStatus(
        observed_generation=gen,
        replicas=observed.replicas if observed else 0,
        ready_replicas=observed.ready_replicas if observed else 0,
        selector=selector_string(name),
        conditions=[
            ready_condition(previous, False, observed, now, gen),
            condition(previous, "PlanFeasible", "False", reason, message, now, gen),
            deployment_condition(previous, observed, now, gen),
            _carry(previous, "MetricsAvailable", now, gen),
        ],
        plan=summary,
        # the engine's memory outlives a bad spec; the decision and live numbers do not
        decided_replicas=status.get("decidedReplicas"),
        scaling=kept,
        last_scale_time=status.get("lastScaleTime"),
        ttft_p99=ttft_display(None, summary),
    )
    _write_status(kube, body, status, new_status)
    return outcome


def _carry(previous: list[dict[str, Any]], ctype: str, now: str, gen: int | None) -> Condition:
    old = next((c for c in previous if c.get("type") == ctype), None)
    if old is not None:
        try:
            return Condition.model_validate(old)
        except ValidationError:
            pass
    return condition(
        previous, ctype, "Unknown", "NotEvaluated", "the plan is not feasible", now, gen
    )


def _decide(
    service: InferenceService,
    plan: Plan,
    status: dict[str, Any],
    metrics: MetricsView | None,
    lead_time: float | None = None,
) -> Decision:
    """Plan-only without a metrics source; otherwise the engine, blind-safe."""
    if metrics is None:
        return decide_plan_only(plan, service.spec.scaling.replicas)
    snapshot = metrics.snapshot
    if snapshot is None:
        why = metrics.source_error or "no vLLM series for this service in Prometheus"
        snapshot = Snapshot(at=metrics.now_s, replicas_reporting=0, problems=[why])
    return decide(
        EngineInput(
            spec=service.spec,
            forecast=plan,
            snapshot=snapshot,
            state=state_from_status(status),
            now_s=metrics.now_s,
            stale_after_s=metrics.stale_after_s,
            lead_time_s=lead_time,
        )
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
        service, plan = PLANS.planned(body, lambda parsed: with_profile(kube, ns, parsed))
    except SpecError as err:
        return _reject(kube, body, "InvalidSpec", str(err), now, emit)
    if plan.replicas is None:  # nothing can serve; a bound shortfall still deploys, flagged
        return _reject(
            kube, body, "Infeasible", "; ".join(plan.infeasible_reasons), now, emit, plan, service
        )

    status, previous = _previous(body)
    previous_decision = status.get("decidedReplicas")
    lead_time = None if metrics is None else lead_time_s(kube.list_pods(ns, selector_string(name)))
    decision = _decide(service, plan, status, metrics, lead_time)
    bundle = render_bundle(name, ns, service.spec, plan, decision.replicas, Owner(name, uid))
    outcome = Outcome(
        feasible=True,
        replicas=decision.replicas,
        plan=plan,
        decision=decision,
        previous_decision=previous_decision,
    )
    live_workload = None
    for obj in bundle.objects:
        kind = obj["kind"]
        read = {
            "Service": kube.read_service,
            "PodDisruptionBudget": kube.read_pdb,
        }.get(kind) or reader(kube, kind)
        child = obj["metadata"]["name"]  # the InferenceService's name, or one derived from it
        live = read(ns, child)
        # the reader chose the type (a PDB may be served as policy/v1beta1 on old clusters)
        desired = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
        outcome.desired[kind] = obj
        diff = differences(desired, live) if live is not None else ["(missing)"]
        diff = diff or selector_drift(obj, live)
        if diff:
            if kind == "Deployment" and live is not None:
                _least_work_first(kube, ns, name, obj, live, metrics)
            try:
                applied = kube.apply(obj)
            except LwsNotInstalledError as err:
                return _reject(
                    kube, body, "LeaderWorkerSetMissing", str(err), now, emit, plan, service
                )
            outcome.applied.append(kind)
            _announce(kind, obj, live, diff, decision, previous_decision, emit, outcome)
            live = applied
        if kind in WORKLOAD_KINDS:
            live_workload = {**(live or {}), "kind": kind}
            replaced = remove_stale(kube, ns, child, kind, owner=name)
            if replaced is not None:
                message = (
                    f"Replaced {replaced} {child} by {kind} {child}: a replica now spans "
                    f"{plan.nodes_per_replica} node(s) ({_layout(plan)})"
                )
                emit("Normal", "WorkloadReplaced", message)
                outcome.events.append(("Normal", "WorkloadReplaced", message))

    observed = observe_workload(live_workload)
    outcome.observed = observed
    outcome.ready_replicas = observed.ready_replicas if observed else 0
    scaled = previous_decision != decision.replicas
    summary = plan_summary(
        plan, service.spec.slo.ttft_p99_seconds, service.spec.slo.tpot_p99_seconds
    )
    now_live = (
        live_status(metrics.snapshot, now)
        if metrics is not None and metrics.snapshot is not None
        else None
    )
    new_status = InferenceServiceStatus(
        observed_generation=gen,
        replicas=decision.replicas,
        decided_replicas=decision.replicas,
        ready_replicas=observed.ready_replicas if observed else 0,
        available_replicas=observed.available_replicas if observed else 0,
        selector=selector_string(name),
        tensor_parallel_size=plan.tensor_parallel_size,
        plan=summary,
        decision=decision_status(decision),
        diagnosis=decision.diagnosis,
        conditions=[
            ready_condition(previous, True, observed, now, gen),
            condition(
                previous,
                "PlanFeasible",
                "True" if plan.feasible else "False",
                "Planned" if plan.feasible else "BelowNeed",
                f"{plan.sized.total} × {_layout(plan)} planned: "
                f"{plan.binding_constraint} binds"
                + ("" if plan.feasible else "; " + "; ".join(plan.infeasible_reasons)),
                now,
                gen,
            ),
            deployment_condition(previous, observed, now, gen),
            metrics_condition(previous, now, gen, None if metrics is None else decision),
        ],
        last_scale_time=now if scaled else status.get("lastScaleTime", now),
        scaling=scaling_state_status(decision.state, lead_time) if metrics is not None else None,
        live=now_live,
        ttft_p99=ttft_display(now_live, summary),
    )
    _write_status(kube, body, status, new_status)
    return outcome


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
) -> None:
    """Before fewer replicas: the pods with the least running requests get the lowest
    deletion cost, so the ReplicaSet removes them first."""
    fewer = int(desired["spec"]["replicas"]) < int((live.get("spec") or {}).get("replicas") or 0)
    if not fewer or metrics is None:
        return
    if not metrics.running_by_pod:
        log.info("%s/%s: scale-down without per-pod metrics: the ReplicaSet picks", ns, name)
        return
    pods = kube.list_pods(ns, selector_string(name))
    costs = deletion_costs(pods, metrics.running_by_pod)
    for pod, cost in costs.items():
        kube.annotate_pod(ns, pod, {DELETION_COST: cost})
    log.info(
        "%s/%s: scale-down: deletion cost set on %d of %d pods", ns, name, len(costs), len(pods)
    )


def _write_status(
    kube: Kube,
    body: Mapping[str, Any],
    old: Mapping[str, Any],
    new: InferenceServiceStatus,
) -> None:
    """Replace the status whole when it differs (conditional on the version read)."""
    document = status_document(new)
    if document != dict(old):
        meta = body["metadata"]
        kube.replace_status(meta["namespace"], meta["name"], document, meta.get("resourceVersion"))


def _announce(
    kind: str,
    desired: dict[str, Any],
    live: dict[str, Any] | None,
    diff: list[str],
    decision: Decision,
    previous_decision: int | None,
    emit: EventSink,
    outcome: Outcome,
) -> None:
    """One event per reason: created, configuration rolled, scaled by a new decision, or a
    manual change undone (live replicas that differ from an unchanged decision are drift)."""

    def say(type_: str, why: str, message: str) -> None:
        emit(type_, why, message)
        outcome.events.append((type_, why, message))

    if live is None:
        extra = f" with {decision.replicas} replicas" if kind in WORKLOAD_KINDS else ""
        say("Normal", "Created", f"Created {kind} {desired['metadata']['name']}{extra}")
        return
    if kind not in WORKLOAD_KINDS:
        say("Warning", "DriftCorrected", f"Undid changes to {kind}: {', '.join(diff[:5])}")
        return
    old_hash = ((live.get("metadata") or {}).get("annotations") or {}).get(CONFIG_HASH_ANNOTATION)
    new_hash = desired["metadata"]["annotations"][CONFIG_HASH_ANNOTATION]
    reconfigured = old_hash != new_hash
    rescaled = previous_decision is not None and previous_decision != decision.replicas
    if reconfigured:
        say(
            "Normal",
            "ConfigChanged",
            f"Rolling out a new vLLM configuration ({old_hash} → {new_hash})",
        )
    if rescaled:
        # "scale up 2→3: kv_usage 0.95 ≥ 0.9" → "Scaled 2→3: kv_usage 0.95 ≥ 0.9"
        why = (
            decision.reason.split(": ", 1)[-1]
            if decision.source == "metrics"
            else (decision.reason)
        )
        say("Normal", "Scaled", f"Scaled {previous_decision}→{decision.replicas}: {why}")
    if not reconfigured and not rescaled:
        say("Warning", "DriftCorrected", f"Undid manual changes to {', '.join(diff[:5])}")
