"""PURE: which pods go first on a scale-down (``controller.kubernetes.io/pod-deletion-cost``).

The ReplicaSet controller removes pods with the lowest deletion cost first (after pods that
are unscheduled, pending or not ready). Before lowering the replica count the operator sets
each pod's cost to its running requests, so the replicas with the least work go and the
fewest in-flight requests have to drain. A pod without a fresh metric keeps the cost it has
(nothing is guessed); a value that has not changed is not written again.
"""

from collections.abc import Mapping
from typing import Any

DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
MAX_COST = 2**31 - 1


def deletion_costs(pods: list[dict[str, Any]], running: Mapping[str, float]) -> dict[str, str]:
    """``{pod name: new cost}`` for every pod whose annotation must change."""
    out: dict[str, str] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        name = meta.get("name")
        if not name or name not in running or meta.get("deletionTimestamp"):
            continue
        cost = str(min(MAX_COST, max(0, round(running[name]))))
        if (meta.get("annotations") or {}).get(DELETION_COST) != cost:
            out[name] = cost
    return out
