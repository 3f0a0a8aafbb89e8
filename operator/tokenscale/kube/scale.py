"""Any resource's ``/scale`` subresource (``autoscaling/v1`` Scale), found by API discovery.

``spec.workloadRef`` names an object by apiVersion and kind; the resource's plural, and whether
it serves ``/scale``, come from the API server's discovery document for that group version.
Everything goes through ``Kube._raw`` (the same credentials and ``ApiException``s).
"""

from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from tokenscale.kube.custom import Raw

MERGE_PATCH = "application/merge-patch+json"


@dataclass(frozen=True)
class Resource:
    """Where objects of one kind live, and whether they can be scaled."""

    base: str
    """``/api/v1`` or ``/apis/<group>/<version>``."""
    plural: str
    scalable: bool


def _base(api_version: str) -> str:
    return "/api/v1" if api_version == "v1" else f"/apis/{api_version}"


def resource(raw: Raw, api_version: str, kind: str) -> Resource | None:
    """The kind's resource from discovery (None: the group version or the kind is not served)."""
    base = _base(api_version)
    try:
        listing = raw("GET", base)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    names = {str(r.get("name")) for r in listing.get("resources") or []}
    for r in listing.get("resources") or []:
        name = str(r.get("name") or "")
        if r.get("kind") == kind and "/" not in name:
            return Resource(base, name, f"{name}/scale" in names)
    return None


def path(where: Resource, namespace: str, name: str) -> str:
    return f"{where.base}/namespaces/{namespace}/{where.plural}/{name}"


def read(raw: Raw, where: Resource, namespace: str, name: str) -> dict[str, Any] | None:
    """The object and its Scale, or None when the object does not exist."""
    try:
        return raw("GET", path(where, namespace, name))
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def read_scale(raw: Raw, where: Resource, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return raw("GET", path(where, namespace, name) + "/scale")
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def write_replicas(raw: Raw, where: Resource, namespace: str, name: str, replicas: int) -> None:
    """A merge patch of ``spec.replicas`` on ``/scale``: nothing else of the object changes,
    and no field of the object is claimed by a server-side apply."""
    body = {"spec": {"replicas": replicas}}
    raw("PATCH", path(where, namespace, name) + "/scale", body, MERGE_PATCH)
