"""A service with ``spec.hardware.variants`` runs one Deployment per variant: their status
summed, and the one-GPU Deployment it may have run before removed."""

from typing import Any, Protocol

from tokenscale.api.inference_service import API_GROUP, KIND
from tokenscale.controller.status import Observed, observe_deployment
from tokenscale.render.names import child_name


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
