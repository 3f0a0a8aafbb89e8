"""The workload behind an InferenceService: a Deployment (one node per replica) or a
LeaderWorkerSet (a replica spans nodes), read, observed and replaced the same way.

Level-based like the rest of reconcile: each cycle reads both kinds; the one the plan does not
call for is deleted if we own it (``ownerReferences`` names this InferenceService), after the
wanted one was applied, with one ``WorkloadReplaced`` event. Objects we do not own are left
alone.
"""

from collections.abc import Callable
from typing import Any

from tokenscale.api.inference_service import API_GROUP, KIND
from tokenscale.controller.api import WorkloadOps, WorkloadReader
from tokenscale.controller.status import Observed, observe_deployment
from tokenscale.kube.lws import KIND as LWS_KIND

DEPLOYMENT = "Deployment"
WORKLOAD_KINDS = (DEPLOYMENT, LWS_KIND)


def reader(kube: WorkloadReader, kind: str) -> Callable[[str, str], dict[str, Any] | None]:
    return kube.read_leader_worker_set if kind == LWS_KIND else kube.read_deployment


def observe_workload(live: dict[str, Any] | None) -> Observed | None:
    """Replicas and availability; for an LWS these count groups (``readyReplicas`` is the
    groups whose every pod is ready, ``Available`` its controller's condition)."""
    if live is None or live.get("kind", DEPLOYMENT) != LWS_KIND:
        return observe_deployment(live)
    status = live.get("status") or {}
    available = next(
        (c for c in status.get("conditions") or [] if c.get("type") == "Available"), None
    )
    ready = int(status.get("readyReplicas") or 0)
    return Observed(
        replicas=int((live.get("spec") or {}).get("replicas") or 0),
        ready_replicas=ready,
        available_replicas=ready,
        available=bool(available and available.get("status") == "True"),
        available_message=(available or {}).get(
            "message", "no Available condition yet (is the LeaderWorkerSet controller running?)"
        ),
    )


def read_workload(kube: WorkloadReader, namespace: str, name: str) -> dict[str, Any] | None:
    """Whichever workload exists (the Deployment first), for status when nothing is applied."""
    live = kube.read_deployment(namespace, name)
    if live is not None:
        return {**live, "kind": DEPLOYMENT}
    live = kube.read_leader_worker_set(namespace, name)
    return None if live is None else {**live, "kind": LWS_KIND}


def _owned_by(live: dict[str, Any], owner: str, uid: str | None = None) -> bool:
    refs = (live.get("metadata") or {}).get("ownerReferences") or []
    return any(
        r.get("kind") == KIND
        and str(r.get("apiVersion", "")).startswith(API_GROUP)
        and r.get("name") == owner
        and (uid is None or (r.get("uid") == uid and r.get("controller")))
        for r in refs
    )


def stale_kind(wanted: str) -> str:
    return LWS_KIND if wanted == DEPLOYMENT else DEPLOYMENT


def remove_stale(
    kube: WorkloadOps,
    namespace: str,
    name: str,
    wanted: str,
    owner: str | None = None,
    uid: str | None = None,
) -> str | None:
    """Delete the other kind's workload ``name`` if InferenceService ``owner`` (default: the
    same name; with ``uid``, that very object as controller) owns it; the deleted kind, or
    None."""
    other = stale_kind(wanted)
    live = kube.read_own_workload(other, namespace, name)  # a foreign one stays either way
    if live is None or not _owned_by(live, owner or name, uid):
        return None
    if other == LWS_KIND:
        kube.delete_leader_worker_set(namespace, name)
    else:
        kube.delete_deployment(namespace, name)
    return other


def selector_drift(
    desired: dict[str, Any], live: dict[str, Any] | None, owned: dict[str, Any] | None = None
) -> list[str]:
    """A Service's selector keys that we applied must match exactly: ``desired ⊆ live`` misses
    a key left over from the other workload kind (the LWS leader-only ``tokenscale.io/role``).
    A key another field manager added is not ours to remove (``owned``: our manager's
    ``fieldsV1``; None: unknown, every extra key counts)."""
    if live is None or desired.get("kind") != "Service":
        return []
    want = (desired.get("spec") or {}).get("selector") or {}
    have = (live.get("spec") or {}).get("selector") or {}
    mine = ((owned or {}).get("f:spec") or {}).get("f:selector") or {}
    extra = [k for k in have if k not in want and (owned is None or f"f:{k}" in mine)]
    same = all(have.get(k) == v for k, v in want.items())
    return [] if same and not extra else [".spec.selector"]
