"""Calls for a custom resource the typed client has no model for, over the client's raw JSON
request (``Kube._raw``: the same credentials, the same ``ApiException`` on errors).

A cluster without the resource's CRD answers 404 on its collection: a read then says "none",
a delete is done, and an apply raises the resource's own "not installed" error (the
InferenceService's status says what to install). ``kube/lws.py`` and ``kube/keda.py`` are
instances of it.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kubernetes.client.exceptions import ApiException


class Raw(Protocol):
    def __call__(
        self,
        method: str,
        path: str,
        body: object = ...,
        content_type: str | None = ...,
        query: list[tuple[str, str]] | None = ...,
    ) -> dict[str, Any]: ...


def or_none(call: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
    """``call()``, or None where the API server answers 404."""
    try:
        return call()
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


@dataclass(frozen=True)
class CustomResource:
    """One namespaced custom resource: where it is served and what its absence means."""

    group: str
    version: str
    plural: str
    not_installed: Callable[[], Exception]
    """The error an apply raises when the API server does not serve the resource."""
    delete_body: dict[str, Any] | None = None
    """DeleteOptions sent with a delete (e.g. foreground propagation); None for the default."""

    def path(self, namespace: str, name: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}/namespaces/{namespace}/{self.plural}"
        return base if name is None else f"{base}/{name}"

    def read(self, raw: Raw, namespace: str, name: str) -> dict[str, Any] | None:
        """The object, or None when it (or the whole API) does not exist."""
        return or_none(lambda: raw("GET", self.path(namespace, name)))

    def apply(
        self, raw: Raw, obj: dict[str, Any], field_manager: str, content_type: str
    ) -> dict[str, Any]:
        """Server-side apply (force). 404 here means the resource type itself is not served."""
        meta = obj["metadata"]
        try:
            return raw(
                "PATCH",
                self.path(meta["namespace"], meta["name"]),
                obj,
                content_type,
                [("fieldManager", field_manager), ("force", "true")],
            )
        except ApiException as exc:
            if exc.status == 404:
                raise self.not_installed() from exc
            raise

    def delete(self, raw: Raw, namespace: str, name: str) -> None:
        """Delete it; absent (or the API not served) is success."""
        if self.delete_body is None:
            or_none(lambda: raw("DELETE", self.path(namespace, name)))
        else:
            body = self.delete_body
            or_none(lambda: raw("DELETE", self.path(namespace, name), body))
