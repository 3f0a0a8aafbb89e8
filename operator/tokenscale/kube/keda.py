"""KEDA ScaledObject calls (``keda.sh/v1alpha1``), over the client's raw JSON request.

Like ``kube/lws.py``: the typed client has no model for it. A cluster without KEDA's CRD answers
404 on the collection; a read then says "none" and an apply raises
:class:`KedaNotInstalledError` (the InferenceService's status says what to install).
"""

from typing import Any

from kubernetes.client.exceptions import ApiException

from tokenscale.kube.lws import Raw
from tokenscale.render.keda import GROUP, PLURAL, VERSION


class KedaNotInstalledError(RuntimeError):
    """The API server does not serve ScaledObjects (KEDA is not installed)."""

    def __init__(self) -> None:
        super().__init__(
            f"spec.scaling.actuation is keda, but the API server does not serve {PLURAL}."
            f"{GROUP}/{VERSION}: install KEDA (kedacore/keda), or set actuation direct or "
            "advisory"
        )


def path(namespace: str, name: str) -> str:
    return f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}/{name}"


def read(raw: Raw, namespace: str, name: str) -> dict[str, Any] | None:
    """The ScaledObject, or None when it (or the whole API) does not exist."""
    try:
        return raw("GET", path(namespace, name))
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


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
            raise KedaNotInstalledError() from exc
        raise


def delete(raw: Raw, namespace: str, name: str) -> None:
    """Delete the ScaledObject; absent (or no KEDA) is success."""
    try:
        raw("DELETE", path(namespace, name))
    except ApiException as exc:
        if exc.status != 404:
            raise
