"""A service with length classes in the operator: its children kept in step, its status from
theirs (``render/length_classes.py`` says what a child is).

Each reconcile applies a child only where the cached one differs from what is rendered (a quiet
tick costs no call), deletes the children of classes the spec dropped (found by the parent
label, ours only), and writes the parent's status from the children's own: their replicas
summed, Ready when every child is, the plan (the classes' pools) and one row per class. Each
child is reconciled, scaled and reported as any one-pool service.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tokenscale.api.inference_service import InferenceService
from tokenscale.api.status import InferenceServiceStatus, LengthClassStatus
from tokenscale.controller.api import KubeApi
from tokenscale.controller.ownership import delete_unkept
from tokenscale.controller.status import condition, plan_summary, ttft_display
from tokenscale.kube.drift import differences
from tokenscale.planning import Plan
from tokenscale.render.length_classes import LENGTH_CLASS_LABEL


@dataclass
class Children:
    """What one sync did, and the children as they are after it (class order)."""

    live: list[dict[str, Any]] = field(default_factory=list)
    applied: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def sync_children(
    kube: KubeApi, namespace: str, parent: str, uid: str, desired: Sequence[dict[str, Any]]
) -> Children:
    """Apply each child that is missing or differs; delete ours that no class renders."""
    out = Children()
    for want in desired:
        name = want["metadata"]["name"]
        live = kube.read_inference_service(namespace, name)
        if live is None or differences(want, live):
            if live is None:
                out.created.append(name)
            live = kube.apply(want)
            out.applied.append(name)
        out.live.append(live)
    out.removed = remove_children(
        kube, namespace, parent, uid, {w["metadata"]["name"] for w in desired}
    )
    return out


def remove_children(
    kube: KubeApi, namespace: str, parent: str, uid: str, kept: set[str]
) -> list[str]:
    """Delete our children not in ``kept`` (their names); return the names deleted."""
    listed = kube.list_length_children(namespace, parent)
    return delete_unkept(
        listed, kept, uid, lambda child: kube.delete_inference_service(namespace, child)
    )


def _cond_true(obj: Mapping[str, Any], ctype: str) -> bool:
    conds = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == ctype and c.get("status") == "True" for c in conds)


def class_rows(live: Sequence[Mapping[str, Any]]) -> list[LengthClassStatus]:
    """One row per child, from its own status (nothing yet: zeros, not ready)."""
    rows = []
    for obj in live:
        meta, status = obj.get("metadata") or {}, obj.get("status") or {}
        rows.append(
            LengthClassStatus(
                name=str((meta.get("labels") or {}).get(LENGTH_CLASS_LABEL, "")),
                service=str(meta.get("name", "")),
                replicas=int(status.get("replicas") or 0),
                ready_replicas=int(status.get("readyReplicas") or 0),
                ready=_cond_true(obj, "Ready"),
            )
        )
    return rows


def parent_status(
    previous: InferenceServiceStatus,
    service: InferenceService,
    plan: Plan,
    rows: list[LengthClassStatus],
    now: str,
    gen: int | None,
) -> InferenceServiceStatus:
    """The parent's status: the children's replicas summed, Ready when each child is, the plan
    (its pools are the classes'), one row per class."""
    slo = service.spec.slo
    summary = plan_summary(plan, slo.ttft_p99_seconds, slo.tpot_p99_seconds)
    ready = bool(rows) and all(r.ready for r in rows)
    counts = ", ".join(f"{r.name} {r.ready_replicas}/{r.replicas}" for r in rows)
    conds = previous.conditions
    feasible = plan.feasible
    return InferenceServiceStatus(
        observed_generation=gen,
        replicas=sum(r.replicas for r in rows),
        ready_replicas=sum(r.ready_replicas for r in rows),
        decided_replicas=sum(p.replicas for p in plan.pools),
        conditions=[
            condition(
                conds,
                "Ready",
                "True" if ready else "False",
                "ClassesReady" if ready else "ClassesNotReady",
                f"length classes ready/desired: {counts}",
                now,
                gen,
            ),
            condition(
                conds,
                "PlanFeasible",
                "True" if feasible else "False",
                "Feasible" if feasible else "Infeasible",
                "every length class's pool meets the SLOs"
                if feasible
                else "; ".join(plan.infeasible_reasons),
                now,
                gen,
            ),
            condition(
                conds,
                "MetricsAvailable",
                "Unknown",
                "PerClass",
                "each length class's InferenceService reads its own metrics and decides",
                now,
                gen,
            ),
        ],
        plan=summary,
        length_classes=rows,
        ttft_p99=ttft_display(None, summary),
    )
