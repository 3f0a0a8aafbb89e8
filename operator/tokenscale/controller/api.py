"""The API calls the reconcile and its actuators make, as ``Protocol`` s.

:class:`~tokenscale.kube.client.Kube` (and the watch-backed ``CachedKube``) satisfy them
structurally; a test's in-memory stand-in satisfies them by having the same methods, without a
cast. The smaller protocols name what one helper needs.
"""

from typing import Any, Protocol

from tokenscale.kube.scale import Resource


class WorkloadReader(Protocol):
    """Reads an owned workload by kind (``controller/workload.py``)."""

    def read_deployment(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def read_leader_worker_set(self, namespace: str, name: str) -> dict[str, Any] | None: ...


class WorkloadOps(WorkloadReader, Protocol):
    """Reads and deletes owned workloads (a layout switch replaces one kind by the other)."""

    def read_own_workload(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None: ...

    def delete_deployment(self, namespace: str, name: str) -> None: ...

    def delete_leader_worker_set(self, namespace: str, name: str) -> None: ...


class ScaleApi(Protocol):
    """Any workload's ``/scale`` subresource (``spec.workloadRef``, ``kube/scale.py``)."""

    def scalable(self, api_version: str, kind: str) -> Resource | None: ...

    def read_object(self, where: Resource, namespace: str, name: str) -> dict[str, Any] | None: ...

    def read_scale(self, where: Resource, namespace: str, name: str) -> dict[str, Any] | None: ...

    def write_replicas(self, where: Resource, namespace: str, name: str, n: int) -> None: ...


class ConfigMapReader(Protocol):
    """The ConfigMap reads of ``spec.profileRef`` and ``spec.model.hfConfigRef``."""

    def read_config_map(self, namespace: str, name: str) -> dict[str, Any] | None: ...


class KubeApi(WorkloadOps, ScaleApi, ConfigMapReader, Protocol):
    """Every call one reconcile of one InferenceService makes."""

    def read_service(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def read_pdb(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def read_scaled_object(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def delete_scaled_object(self, namespace: str, name: str) -> None: ...

    def read_inference_pool(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def read_inference_objective(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def list_inference_objectives(self, namespace: str, selector: str) -> list[dict[str, Any]]: ...

    def delete_inference_objective(self, namespace: str, name: str) -> None: ...

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]: ...

    def list_resource_quotas(self, namespace: str) -> list[dict[str, Any]]: ...

    def annotate_pod(self, namespace: str, name: str, annotations: dict[str, str]) -> None: ...

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]: ...

    def read_inference_service(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def list_length_children(self, namespace: str, parent: str) -> list[dict[str, Any]]: ...

    def delete_inference_service(self, namespace: str, name: str) -> None: ...

    def hand_over_replicas(self, workload: dict[str, Any], replicas: int) -> dict[str, Any]: ...

    def replace_status(
        self,
        namespace: str,
        name: str,
        status: dict[str, Any],
        resource_version: str | None = None,
    ) -> dict[str, Any]: ...
