"""InferencePool calls (``inference.networking.k8s.io/v1``), over the client's raw JSON request.

Like ``kube/keda.py``: the typed client has no model for it. A cluster without the Gateway API
Inference Extension's CRD answers 404 on the collection; a read then says "none" and an apply
raises :class:`InferencePoolNotInstalledError` (the InferenceService's status says what to
install).
"""

from typing import Any

from kubernetes.client.exceptions import ApiException

from tokenscale.kube.lws import Raw
from tokenscale.render.inference_pool import GROUP, PLURAL, VERSION


class InferencePoolNotInstalledError(RuntimeError):
    """The API server does not serve InferencePools (the extension's CRDs are not installed)."""

    def __init__(self) -> None:
        super().__init__(
            "spec.gateway.inferencePool.endpointPicker is set, so tokenscale renders an "
            f"InferencePool, but the API server does not serve {PLURAL}.{GROUP}/{VERSION}: "
            "install the Gateway API Inference Extension's CRDs, or remove endpointPicker to "
            "use a pool someone else renders"
        )


def path(namespace: str, name: str) -> str:
    return f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}/{name}"


def read(raw: Raw, namespace: str, name: str) -> dict[str, Any] | None:
    """The InferencePool, or None when it (or the whole API) does not exist."""
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
            raise InferencePoolNotInstalledError() from exc
        raise
