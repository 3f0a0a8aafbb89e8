"""Whose is an object that bears one of our names? Only ours is applied, changed or deleted.

An object is ours when its controller ``ownerReference`` is this InferenceService (kind, API
group and ``uid``: a same-named InferenceService deleted and created again is another owner).
Anything else by that name (created by hand, by another team's tooling, or controlled by another
InferenceService whose derived name collides, ``chat.v2`` → ``chat-v2-f5101bcf``) is a
:class:`NameConflict`: reconcile applies nothing (so it neither adopts the object, merges into
it, nor lets garbage collection reach it when the InferenceService goes) and reports
``Ready=False`` with reason ``NameConflict`` and one Warning event naming the object and its
owner. An object the API server refuses (a 4xx that retrying cannot fix) is reported the same
way, with reason ``ApplyFailed``, so the status is never left empty.
"""

import contextlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tokenscale.api.inference_service import API_GROUP, KIND
from tokenscale.api.status import Condition, InferenceServiceStatus, PlanSummary
from tokenscale.controller.status import condition

REASON = "NameConflict"


@dataclass(frozen=True)
class NameConflict:
    kind: str
    name: str
    holder: str
    """Who has it: ``InferenceService chat.v2``, or what is known of an unowned object."""

    def message(self) -> str:
        return (
            f"{self.kind} {self.name} already exists and is not controlled by this "
            f"InferenceService ({self.holder}); tokenscale leaves it alone. Rename or delete "
            f"that {self.kind}, or rename this InferenceService"
        )


def refused(exc: Exception) -> bool:
    """An API error that retrying the same object cannot fix (4xx but 409 and 429)."""
    code = getattr(exc, "status", None)
    return isinstance(code, int) and 400 <= code < 500 and code not in (409, 429)


def refusal(exc: Exception) -> str:
    """``422 Unprocessable Entity: <the server's message>`` from an ApiException."""
    detail = str(getattr(exc, "body", "") or "")
    with contextlib.suppress(ValueError, AttributeError):
        detail = str(json.loads(detail).get("message") or detail)
    return f"{getattr(exc, 'status', '')} {getattr(exc, 'reason', '')}: {detail[:400]}".strip()


def controller_reference(live: dict[str, Any]) -> dict[str, Any] | None:
    refs = (live.get("metadata") or {}).get("ownerReferences") or []
    return next((r for r in refs if r.get("controller")), None)


def is_ours(live: dict[str, Any], uid: str) -> bool:
    ref = controller_reference(live)
    return (
        ref is not None
        and ref.get("kind") == KIND
        and str(ref.get("apiVersion", "")).split("/")[0] == API_GROUP
        and ref.get("uid") == uid
    )


def delete_unkept(
    listed: Iterable[dict[str, Any]], kept: set[str], uid: str, delete: Callable[[str], None]
) -> list[str]:
    """Delete (``delete(name)``) each object of ``listed`` whose name is not in ``kept`` and
    that the InferenceService ``uid`` controls (another owner's, even with our labels, is never
    touched); return the names deleted."""
    gone = []
    for live in listed:
        name = str((live.get("metadata") or {}).get("name") or "")
        if name and name not in kept and is_ours(live, uid):
            delete(name)
            gone.append(name)
    return gone


def holder(live: dict[str, Any]) -> str:
    """Who an object belongs to, in words: its controller, else its owners, managers, labels."""
    meta = live.get("metadata") or {}
    ref = controller_reference(live)
    if ref is not None:
        uid = str(ref.get("uid") or "")[:8]  # a namesake deleted and created again differs here
        return f"controlled by {ref.get('kind')} {ref.get('name')}" + (
            f" (uid {uid}…)" if uid else ""
        )
    parts = []
    owners = [f"{r.get('kind')} {r.get('name')}" for r in meta.get("ownerReferences") or []]
    parts.append("owned by " + ", ".join(owners) if owners else "no controller")
    managers = sorted({str(m.get("manager")) for m in meta.get("managedFields") or []})
    if managers:
        parts.append("written by " + ", ".join(managers))
    labels = meta.get("labels") or {}
    if labels:
        parts.append("labels " + ",".join(f"{k}={v}" for k, v in sorted(labels.items())[:4]))
    return "; ".join(parts)


def name_conflicts(
    desired: list[dict[str, Any]], live: list[dict[str, Any] | None], uid: str
) -> list[NameConflict]:
    """The rendered objects whose name an object we do not control already holds."""
    return [
        NameConflict(want["kind"], want["metadata"]["name"], holder(have))
        for want, have in zip(desired, live, strict=True)
        if have is not None and not is_ours(have, uid)
    ]


def conflict_message(conflicts: list[NameConflict]) -> str:
    return "; ".join(c.message() for c in conflicts)


def conflict_status(
    previous: list[Condition],
    status: InferenceServiceStatus,
    conflicts: list[NameConflict],
    plan: PlanSummary,
    selector: str,
    now: str,
    generation: int | None,
) -> InferenceServiceStatus:
    """Nothing was applied: ``Ready=False`` (NameConflict); see :func:`unapplied_status`."""
    taken = ", ".join(f"{c.kind} {c.name}" for c in conflicts)
    return unapplied_status(
        previous,
        status,
        REASON,
        conflict_message(conflicts),
        f"not applied: {taken} taken",
        plan,
        selector,
        now,
        generation,
    )


def unapplied_status(
    previous: list[Condition],
    status: InferenceServiceStatus,
    reason: str,
    message: str,
    deployment_message: str,
    plan: PlanSummary,
    selector: str,
    now: str,
    generation: int | None,
) -> InferenceServiceStatus:
    """The rendered objects are not (all) in place: ``Ready=False`` with ``reason``; the plan is
    reported, the engine's memory is kept as it was, the decision and live numbers are left
    out (nothing was decided that the cluster carries)."""
    return InferenceServiceStatus(
        observed_generation=generation,
        replicas=0,
        ready_replicas=0,
        selector=selector,
        conditions=[
            condition(previous, "Ready", "False", reason, message, now, generation),
            condition(
                previous,
                "PlanFeasible",
                "True" if plan.feasible else "False",
                "Planned" if plan.feasible else "BelowNeed",
                f"{plan.replicas} replicas planned: {plan.binding_constraint} binds",
                now,
                generation,
            ),
            condition(
                previous,
                "DeploymentAvailable",
                "False",
                reason,
                deployment_message,
                now,
                generation,
            ),
            _not_evaluated(previous, now, generation),
        ],
        plan=plan,
        decided_replicas=status.decided_replicas,
        scaling=status.scaling,
        last_scale_time=status.last_scale_time,
    )


def _not_evaluated(previous: list[Condition], now: str, generation: int | None) -> Condition:
    return condition(
        previous,
        "MetricsAvailable",
        "Unknown",
        "NotEvaluated",
        "no decision applied: see the Ready condition",
        now,
        generation,
    )


def announced(previous: list[Condition], conflicts: list[NameConflict]) -> bool:
    """Whether the last status already said exactly this (then no new event: no storm)."""
    ready = next((c for c in previous if c.type == "Ready"), None)
    return (
        ready is not None
        and ready.reason == REASON
        and ready.message == conflict_message(conflicts)
    )
