"""A prefill/decode service in the operator: one decision per role through the shared stepper
(:meth:`~tokenscale.scaling.stepper.Stepper.step_roles`, the policy the simulator runs), each
role's memory in ``status.roles.<role>``, and one event per role whose workload moved.

- Without a metrics source each role runs its planned count (or the pin).
- With one, each role's memory is read back from status, judged (``scaling/memory.py``) against
  that role's workload, and stepped on the observation's role snapshots; a reconcile on an
  observation already decided on re-applies the stored counts. An engine decision moves each
  workload at most one step (``limited``), as for one pool.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from tokenscale.api.inference_service import InferenceService
from tokenscale.api.status import (
    DecisionStatus,
    InferenceServiceStatus,
    RolesStatus,
    RoleStatus,
    ScalingState,
)
from tokenscale.controller.status import Observed, decision_status
from tokenscale.controller.workload import observe_workload, reader
from tokenscale.kube.lws import KIND as LWS_KIND
from tokenscale.planning import Plan
from tokenscale.planning.disaggregation import role_plan
from tokenscale.render.disaggregated import LLMD_ROLE_LABEL, role_name
from tokenscale.render.labels import CONFIG_HASH_ANNOTATION
from tokenscale.scaling.cause import Cause
from tokenscale.scaling.decision import Decision
from tokenscale.scaling.memory import limited, trusted
from tokenscale.scaling.roles import ROLES, RolesDecision, pools
from tokenscale.scaling.schedule import scheduled_spec, widest_spec
from tokenscale.scaling.stepper import Observation, Stepper


class Metrics(Protocol):
    """What :func:`decide_roles_for` reads of the reconcile's ``MetricsView``."""

    @property
    def observation(self) -> Observation | None: ...
    @property
    def now_s(self) -> float: ...
    @property
    def interval_s(self) -> float: ...
    @property
    def stale_after_s(self) -> float: ...


def role_of(obj: Mapping[str, Any]) -> str | None:
    """The role a rendered workload runs (None: not a role's workload)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    role = labels.get(LLMD_ROLE_LABEL)
    return role if role in ROLES else None


def role_kind(plan: Plan, role: str) -> str:
    """A LeaderWorkerSet when that role's replica spans nodes, else a Deployment."""
    return LWS_KIND if role_plan(plan, role).nodes_per_replica > 1 else "Deployment"


def read_roles(
    kube: Any, namespace: str, name: str, plan: Plan
) -> dict[str, dict[str, Any] | None]:
    """Each role's workload as the API server has it (None: not there)."""
    return {
        role: reader(kube, role_kind(plan, role))(namespace, role_name(name, role))
        for role in ROLES
    }


def observed_roles(
    lives: Mapping[str, dict[str, Any] | None], plan: Plan
) -> dict[str, Observed | None]:
    return {
        role: observe_workload(None if live is None else {**live, "kind": role_kind(plan, role)})
        for role, live in lives.items()
    }


@dataclass(frozen=True)
class RolesMade:
    """What :func:`decide_roles_for` decided: each role's count, decision and memory."""

    counts: dict[str, int]
    decisions: dict[str, Decision]
    statuses: dict[str, DecisionStatus | None]
    states: dict[str, ScalingState | None]
    previous: dict[str, int | None]
    """Each role's count as status had it (before this reconcile)."""
    decided: bool
    on_observation: bool
    coordination: str
    problems: list[str]

    @property
    def combined(self) -> Decision:
        """Both roles as one decision for the one-pool code paths: replicas = prefill +
        decode; metrics available when both roles' are."""
        p, d = self.decisions["prefill"], self.decisions["decode"]
        mover = next((x for x in (p, d) if x.cause.moves), d)
        source = "pin" if p.source == "pin" else mover.source
        reasons = "; ".join(f"{role}: {self.decisions[role].reason}" for role in ROLES)
        blind = [
            f"{role}: {self.decisions[role].metrics_reason}"
            for role in ROLES
            if not self.decisions[role].metrics_available
        ]
        return Decision(
            replicas=p.replicas + d.replicas,
            source=source,
            reason=reasons,
            cause=mover.cause,
            why=reasons,
            metrics_available=not blind,
            metrics_reason="; ".join(blind) or "ok",
        )

    def status(self, observed: Mapping[str, Observed | None], plan: Plan) -> RolesStatus:
        d, prefill, decode = pools(plan)
        planned = {"prefill": prefill.replicas, "decode": decode.replicas}

        def one(role: str) -> RoleStatus:
            seen = observed.get(role)
            return RoleStatus(
                replicas=self.counts[role],
                planned_replicas=planned[role],
                ready_replicas=0 if seen is None else seen.ready_replicas,
                decision=self.statuses[role],
                scaling=self.states[role],
            )

        return RolesStatus(
            prefill=one("prefill"),
            decode=one("decode"),
            ratio=round(self.counts["prefill"] / max(self.counts["decode"], 1), 4),
            planned_ratio=d.ratio,
            coordination=self.coordination,
        )


def _planned(plan: Plan, pin: int | None, previous: dict[str, int | None]) -> RolesMade:
    _, prefill, decode = pools(plan)
    decisions = {}
    for role, pool in (("prefill", prefill), ("decode", decode)):
        if pin is not None:
            why = f"pinned by spec.scaling.replicas={pin}"
            decisions[role] = Decision(
                replicas=pin, reason=why, why=why, cause=Cause.PINNED, source="pin"
            )
            continue
        why = (
            f"{role} pool: {pool.binding_constraint} needs {pool.replicas_needed:.2f} replicas; "
            f"with redundancy {pool.replicas_with_redundancy}, within bounds {pool.replicas}"
        )
        decisions[role] = Decision(
            replicas=pool.replicas, reason=f"plan: {why}", why=why, cause=Cause.PLAN, source="plan"
        )
    return RolesMade(
        counts={role: decisions[role].replicas for role in ROLES},
        decisions=decisions,
        statuses={role: decision_status(decisions[role]) for role in ROLES},
        states=dict.fromkeys(ROLES),
        previous=previous,
        decided=True,
        on_observation=True,
        coordination="no metrics source: each role at its planned count",
        problems=[],
    )


def _stored(status: DecisionStatus | None, state: ScalingState, count: int) -> Decision:
    cause = Cause.STEADY
    if status is not None and status.cause is not None:
        try:
            cause = Cause(status.cause)
        except ValueError:
            cause = Cause.STEADY
    reason = status.reason if status is not None else "stored decision"
    source = status.source if status is not None else "metrics"
    if source not in ("plan", "pin", "metrics", "hold"):
        source = "metrics"
    return Decision(
        replicas=count,
        reason=reason,
        why=reason,
        cause=cause,
        source=source,
        metrics_available=source != "hold",
        metrics_reason="ok" if source != "hold" else reason,
        state=state,
    )


def decide_roles_for(
    service: InferenceService,
    plan: Plan,
    old: InferenceServiceStatus,
    metrics: Metrics | None,
    lead_time_s: float | None,
    live: Mapping[str, int | None],
) -> RolesMade:
    """Each role's count for this reconcile (see the module docstring)."""
    spec = service.spec
    was = old.roles
    previous: dict[str, int | None] = {
        role: None if was is None else getattr(was, role).replicas for role in ROLES
    }
    if metrics is None:
        return _planned(plan, spec.scaling.replicas, previous)
    states: dict[str, ScalingState] = {}
    problems: list[str] = []
    stored = was is not None
    for role in ROLES:
        kept = None if was is None else getattr(was, role)
        memory = (kept.scaling if kept is not None and kept.scaling else ScalingState()).model_copy(
            update={"decided_replicas": None if kept is None else kept.replicas}
        )
        judged, found = trusted(memory, widest_spec(spec), metrics.now_s, live.get(role))
        problems += [f"{role}: {p}" for p in found]
        if kept is None or kept.decision is None or kept.scaling is None or found:
            stored = False
        if judged.decided_replicas != memory.decided_replicas:
            stored = False  # the workload is not where the memory says: decide from it
        states[role] = judged
    stepper = Stepper(spec, plan, metrics.interval_s, metrics.stale_after_s)
    step = stepper.step_roles(
        states, metrics.observation, metrics.now_s, lead_time_s, stored=stored
    )
    if step.decision is None:  # already decided on this observation: the stored counts
        assert was is not None
        decisions = {
            role: _stored(
                getattr(was, role).decision, step.states[role], getattr(was, role).replicas
            )
            for role in ROLES
        }
        return RolesMade(
            counts={role: decisions[role].replicas for role in ROLES},
            decisions=decisions,
            statuses={role: getattr(was, role).decision for role in ROLES},
            states=dict(step.states),
            previous=previous,
            decided=False,
            on_observation=False,
            coordination=was.coordination,
            problems=problems,
        )
    return _limited(step.decision, live, spec, metrics, previous, problems, step.engine_ran)


def _limited(
    made: RolesDecision,
    live: Mapping[str, int | None],
    spec: Any,
    metrics: Metrics,
    previous: dict[str, int | None],
    problems: list[str],
    engine_ran: bool,
) -> RolesMade:
    today = scheduled_spec(spec, metrics.now_s)
    decisions: dict[str, Decision] = {}
    for role in ROLES:
        d = made.of(role)
        if d.source in ("metrics", "hold"):
            held = limited(d.replicas, live.get(role), today)
            if held != d.replicas:
                note = f"limited to {held}, one step from the workload's {live.get(role)} replicas"
                d = d.model_copy(
                    update={
                        "replicas": held,
                        "why": f"{d.why}; {note}",
                        "reason": f"{d.reason}; {note}",
                        "state": d.state.model_copy(update={"decided_replicas": held}),
                    }
                )
        decisions[role] = d
    return RolesMade(
        counts={role: decisions[role].replicas for role in ROLES},
        decisions=decisions,
        statuses={
            role: decision_status(decisions[role], decisions[role].state.observed_at_s)
            for role in ROLES
        },
        states={role: decisions[role].state for role in ROLES},
        previous=previous,
        decided=True,
        on_observation=engine_ran,
        coordination=made.coordination,
        problems=problems,
    )


def role_events(
    kind: str,
    desired: Mapping[str, Any],
    live: Mapping[str, Any] | None,
    diff: list[str],
    made: RolesMade,
    writes_replicas: bool,
) -> list[tuple[str, str, str]]:
    """The events of applying one role's workload: created, configuration rolled, scaled by
    this role's new decision (the workload's count → the decision), or a manual change undone."""
    role = role_of(desired)
    assert role is not None
    name = desired["metadata"]["name"]
    decision = made.decisions[role]
    to = made.counts[role]
    if live is None:
        return [("Normal", "Created", f"Created {kind} {name} ({role}) with {to} replicas")]
    out: list[tuple[str, str, str]] = []
    old_hash = ((live.get("metadata") or {}).get("annotations") or {}).get(CONFIG_HASH_ANNOTATION)
    new_hash = desired["metadata"]["annotations"][CONFIG_HASH_ANNOTATION]
    if old_hash != new_hash:
        out.append(
            (
                "Normal",
                "ConfigChanged",
                f"Rolling out a new vLLM configuration on {name} ({old_hash} → {new_hash})",
            )
        )
    now = int((live.get("spec") or {}).get("replicas") or 0)
    rescaled = writes_replicas and now != to
    if rescaled and made.decided and made.previous.get(role) != to:
        out.append(("Normal", "Scaled", f"Scaled {role} {kind} {name} {now}→{to}: {decision.why}"))
    elif rescaled:
        out.append(
            (
                "Warning",
                "DriftCorrected",
                f"Undid a manual change of {role} replicas {now}→{to} on {name} (the decision "
                f"stands: {decision.why})",
            )
        )
    elif old_hash == new_hash:
        out.append(("Warning", "DriftCorrected", f"Undid manual changes to {', '.join(diff[:5])}"))
    return out
