"""LeaderWorkerSet calls (``leaderworkerset.x-k8s.io/v1``), over the client's raw JSON request.

The typed client has no LWS model, so these go through ``Kube._raw`` like the PDB does: the
same credentials, the same ``ApiException`` on errors. A cluster without the LWS CRD answers
404 on the collection; reads then say "none" and an apply raises :class:`LwsNotInstalledError`
(the InferenceService's status says what to install).
"""

from collections.abc import Callable
from typing import Any, Protocol

from kubernetes.client.exceptions import ApiException

GROUP = "leaderworkerset.x-k8s.io"
VERSION = "v1"
PLURAL = "leaderworkersets"
KIND = "LeaderWorkerSet"


class Raw(Protocol):
    def __call__(
        self,
        method: str,
        path: str,
        body: object = ...,
        content_type: str | None = ...,
        query: list[tuple[str, str]] | None = ...,
    ) -> dict[str, Any]: ...


class LwsNotInstalledError(RuntimeError):
    """The API server does not serve LeaderWorkerSets (the LWS CRD/controller is missing)."""

    def __init__(self) -> None:
        super().__init__(
            "this replica spans nodes and needs a LeaderWorkerSet, but the API server does not "
            f"serve {PLURAL}.{GROUP}/{VERSION}: install LeaderWorkerSet (kubernetes-sigs/lws; "
            "tokenscale's renders are validated against its v0.10 CRD)"
        )


def path(namespace: str, name: str | None = None) -> str:
    base = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}"
    return base if name is None else f"{base}/{name}"


def _not_found(call: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
    try:
        return call()
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def read(raw: Raw, namespace: str, name: str) -> dict[str, Any] | None:
    """The LWS, or None when it (or the whole API) does not exist."""
    return _not_found(lambda: raw("GET", path(namespace, name)))


def apply(raw: Raw, obj: dict[str, Any], field_manager: str, content_type: str) -> dict[str, Any]:
    """Server-side apply (force). 404 here means the resource type itself is not served."""
    meta = obj["metadata"]
    try:
        return raw(
            "PATCH",
            path(meta["namespace"], meta["name"]),
            obj,
            content_type,
            [("fieldManager", field_manager), ("force", "true")],
        )
    except ApiException as exc:
        if exc.status == 404:
            raise LwsNotInstalledError() from exc
        raise


def delete(raw: Raw, namespace: str, name: str) -> None:
    """Delete with foreground propagation (the groups' pods go first); absent is success."""
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"}
    _not_found(lambda: raw("DELETE", path(namespace, name), body))
