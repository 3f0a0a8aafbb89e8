"""A service with ``spec.hardware.variants`` runs one Deployment per variant: their status
summed, the one-GPU Deployment it may have run before removed, and a variant whose pods the
scheduler cannot place marked exhausted (``scaling/stockout.py``) in ``status.variants`` and
the ``VariantExhausted`` condition."""

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from tokenscale.api.inference_service import API_GROUP, KIND
from tokenscale.api.status import Condition, InferenceServiceStatus, VariantStatus
from tokenscale.controller.status import Observed, condition, observe_deployment
from tokenscale.planning.result import Plan
from tokenscale.render import selector_string
from tokenscale.render.names import child_name
from tokenscale.render.variants import VARIANT_LABEL, variant_workload_name
from tokenscale.scaling.stockout import (
    STOCKOUT_RETRY_S,
    Exhausted,
    VariantPod,
    exhausted_variants,
)

UNSCHED = "Unschedulable"


class PodLister(Protocol):
    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]: ...


class DeploymentOps(Protocol):
    def read_deployment(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def delete_deployment(self, namespace: str, name: str) -> None: ...


def observe_variants(lives: list[dict[str, Any] | None]) -> Observed | None:
    """The variants' Deployments as one: counts summed; available when every one is."""
    seen = [o for o in (observe_deployment(live) for live in lives) if o is not None]
    if not seen:
        return None
    unavailable = [o.available_message for o in seen if not o.available]
    return Observed(
        replicas=sum(o.replicas for o in seen),
        ready_replicas=sum(o.ready_replicas for o in seen),
        available_replicas=sum(o.available_replicas for o in seen),
        available=not unavailable and len(seen) == len(lives),
        available_message="; ".join(unavailable) or "every variant's Deployment is available",
    )


def remove_single_workload(kube: DeploymentOps, namespace: str, name: str) -> bool:
    """Delete the one-GPU Deployment of service ``name`` (named after the service) if the
    service owns it: its pods would match the Service beside the variants'. True if deleted."""
    live = kube.read_deployment(namespace, child_name(name))
    owners = ((live or {}).get("metadata") or {}).get("ownerReferences") or []
    if live is None or not any(
        o.get("kind") == KIND
        and str(o.get("apiVersion", "")).startswith(API_GROUP)
        and o.get("name") == name
        for o in owners
    ):
        return False
    kube.delete_deployment(namespace, child_name(name))
    return True


def remove_old_variants(
    kube: DeploymentOps, namespace: str, name: str, uid: str, was: list[str], now: set[str]
) -> list[str]:
    """Delete the Deployments of the variants the last reconcile ran (``was``: the names in
    ``status.variants``) that the spec no longer has (``now``: empty when it went back to one
    GPU type). Only a Deployment that carries that variant's label and whose controller is
    this very InferenceService (``uid``) is deleted; the names deleted."""
    gone = []
    for variant in was:
        if variant in now:
            continue
        child = variant_workload_name(name, variant)
        live = kube.read_deployment(namespace, child)
        meta = (live or {}).get("metadata") or {}
        ours = any(
            o.get("kind") == KIND
            and str(o.get("apiVersion", "")).startswith(API_GROUP)
            and o.get("uid") == uid
            and o.get("controller")
            for o in meta.get("ownerReferences") or []
        )
        if live is None or not ours or (meta.get("labels") or {}).get(VARIANT_LABEL) != variant:
            continue
        kube.delete_deployment(namespace, child)
        gone.append(child)
    return gone


def _epoch(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def variant_pods(pods: list[dict[str, Any]], now_s: float) -> list[VariantPod]:
    """The service's pods by variant: unschedulable since the scheduler's
    ``PodScheduled=False/Unschedulable`` condition (``now_s`` when it has no time), else
    placed; terminal and terminating pods left out."""
    out = []
    for pod in pods:
        meta, status = pod.get("metadata") or {}, pod.get("status") or {}
        variant = (meta.get("labels") or {}).get(VARIANT_LABEL)
        if variant is None or meta.get("deletionTimestamp"):
            continue
        if status.get("phase") in ("Succeeded", "Failed"):
            continue
        cond: dict[str, Any] = next(
            (c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), {}
        )
        if cond.get("status") == "False" and cond.get("reason") == UNSCHED:
            since = _epoch(cond.get("lastTransitionTime"))
            message = str(cond.get("message") or "")
            out.append(VariantPod(variant, now_s if since is None else since, message))
        else:
            out.append(VariantPod(variant, None))
    return out


def previous_marks(status: InferenceServiceStatus) -> dict[str, Exhausted]:
    """The exhausted marks the last reconcile wrote in ``status.variants``."""
    marks = {}
    for v in status.variants:
        since = _epoch(v.exhausted_since)
        if v.exhausted and since is not None:
            marks[v.name] = Exhausted(v.name, v.replicas, v.unplaced, since, v.reason or "")
    return marks


def stock_marks(
    kube: PodLister, namespace: str, name: str, status: InferenceServiceStatus, now: str
) -> dict[str, Exhausted]:
    """The variants exhausted now (``scaling/stockout.py``) from the service's pods."""
    now_s = _epoch(now)
    if now_s is None:
        return previous_marks(status)
    pods = variant_pods(kube.list_pods(namespace, selector_string(name)), now_s)
    return exhausted_variants(pods, now_s, previous_marks(status))


def variant_statuses(
    plan: Plan, counts: Mapping[str, int] | None, marks: Mapping[str, Exhausted]
) -> list[VariantStatus]:
    if not plan.is_mix:
        return []
    asked = counts if counts is not None else {v.name: v.replicas for v in plan.variants}
    return [
        VariantStatus(
            name=v.name,
            replicas=asked.get(v.name, 0),
            exhausted=v.name in marks,
            unplaced=marks[v.name].unplaced if v.name in marks else 0,
            exhausted_since=_rfc3339(marks[v.name].since_s) if v.name in marks else None,
            reason=marks[v.name].reason if v.name in marks else None,
        )
        for v in plan.variants
    ]


def exhausted_condition(
    previous: list[Condition],
    marks: Mapping[str, Exhausted],
    now: str,
    generation: int | None,
    limited: str | None = None,
) -> Condition:
    """``VariantExhausted``: True while some variant is marked, with the count unplaced; False
    otherwise, ``AllPlaced`` only when the GPU quota does not hold replicas back
    (``limited``: why it does)."""
    if not marks:
        placed = limited is None
        return condition(
            previous,
            "VariantExhausted",
            "False",
            "AllPlaced" if placed else "QuotaLimited",
            "every variant places its pods"
            if placed
            else f"no variant is marked exhausted; the GPU quota holds replicas back: {limited}",
            now,
            generation,
        )
    text = "; ".join(
        f"{m.variant}: {m.unplaced} replica(s) could not be placed, keeps {m.placed}, retried "
        f"{STOCKOUT_RETRY_S:,.0f} s after {_rfc3339(m.since_s)} ({m.reason})"
        for m in marks.values()
    )
    return condition(
        previous,
        "VariantExhausted",
        "True",
        "Unschedulable",
        text + "; the need moves to the next variant",
        now,
        generation,
    )
