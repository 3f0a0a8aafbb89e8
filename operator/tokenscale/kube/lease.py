"""The Lease calls of leader election (``coordination.k8s.io/v1``): read, create, replace.

Writes are conditional: create fails with 409 when the Lease exists, replace with 409 when
it changed since it was read. Both are reported as ``False`` (someone else wrote first).
Every write sets the Lease's annotations (controller/shards.py: the namespaces a shard
holds); the list is for reading the other shards' Leases.
"""

from typing import Any

from kubernetes.client.exceptions import ApiException

from tokenscale.kube.client import FIELD_MANAGER, Kube

LEASES = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"


class LeaseStore:
    """One Lease; every write carries ``annotations`` (a shard's claimed namespaces)."""

    def __init__(
        self, kube: Kube, namespace: str, name: str, annotations: dict[str, str] | None = None
    ) -> None:
        self.kube, self.namespace, self.name = kube, namespace, name
        self.annotations = dict(annotations or {})

    def list_all(self) -> list[dict[str, Any]]:
        """Every Lease in this Lease's namespace (other shards' included)."""
        got = self.kube._raw("GET", self._collection)
        return list(got.get("items") or [])

    def _meta(self, **extra: str) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": self.name, "namespace": self.namespace, **extra}
        if self.annotations:
            meta["annotations"] = self.annotations
        return meta

    @property
    def _collection(self) -> str:
        return LEASES.format(namespace=self.namespace)

    def read(self) -> tuple[dict[str, Any] | None, str | None]:
        """(spec, resourceVersion), or (None, None) when there is no Lease."""
        try:
            got = self.kube._raw("GET", f"{self._collection}/{self.name}")
        except ApiException as exc:
            if exc.status == 404:
                return None, None
            raise
        return dict(got.get("spec") or {}), got["metadata"]["resourceVersion"]

    def create(self, spec: dict[str, Any]) -> bool:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": self._meta(),
            "spec": spec,
        }
        return self._write("POST", self._collection, body)

    def replace(self, spec: dict[str, Any], resource_version: str) -> bool:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": self._meta(resourceVersion=resource_version),
            "spec": spec,
        }
        return self._write("PUT", f"{self._collection}/{self.name}", body)

    def _write(self, method: str, path: str, body: dict[str, Any]) -> bool:
        try:
            self.kube._raw(method, path, body, query=[("fieldManager", FIELD_MANAGER)])
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise
        return True
