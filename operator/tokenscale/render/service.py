"""The ClusterIP Service and the PodDisruptionBudget."""

import math
from typing import Any

from tokenscale.render.engine_args import VLLM_PORT
from tokenscale.render.labels import ROLE_LABEL, common_labels, selector_labels
from tokenscale.render.names import child_name


def service(name: str, namespace: str, leader_only: bool = False) -> dict[str, Any]:
    """The ClusterIP Service of InferenceService ``name`` (named :func:`child_name`); for a
    LeaderWorkerSet it selects the leaders only (the workers run headless engines, no API)."""
    selector = selector_labels(name)
    if leader_only:
        selector = {**selector, ROLE_LABEL: "leader"}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": child_name(name),
            "namespace": namespace,
            "labels": common_labels(name),
        },
        "spec": {
            "type": "ClusterIP",
            "selector": selector,
            "ports": [{"name": "http", "port": VLLM_PORT, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def pdb_min_available(replicas: int, needed: float) -> int:
    """Keep the capacity the plan needs before redundancy, ``ceil(needed)``; a voluntary
    disruption may take only the headroom. With no headroom one pod may still go at a time
    (so node drains can proceed), never all of them."""
    if replicas <= 1:
        return 0
    return max(1, min(math.ceil(needed - 1e-9), replicas - 1))


def pod_disruption_budget(
    name: str, namespace: str, min_available: int, max_unavailable: int | None = None
) -> dict[str, Any]:
    """``minAvailable`` pods (Deployments), or ``maxUnavailable`` pods when given
    (LeaderWorkerSet groups: see ``render.lws.group_pdb_max_unavailable``)."""
    budget: dict[str, Any] = (
        {"minAvailable": min_available}
        if max_unavailable is None
        else {"maxUnavailable": max_unavailable}
    )
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": child_name(name),
            "namespace": namespace,
            "labels": common_labels(name),
        },
        "spec": {**budget, "selector": {"matchLabels": selector_labels(name)}},
    }
