"""Typed wrappers over the kubernetes client for what the operator does, with 409 retries."""

import functools
import json
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tokenscale.api.crd import PLURAL
from tokenscale.api.inference_service import API_GROUP, API_VERSION
from tokenscale.kube import inference_objective, inference_pool, keda, lws, scale
from tokenscale.kube.custom import CustomResource
from tokenscale.kube.custom import or_none as _or_none
from tokenscale.render.inference_objective import KIND as INFERENCE_OBJECTIVE
from tokenscale.render.inference_pool import KIND as INFERENCE_POOL
from tokenscale.render.keda import KIND as SCALED_OBJECT
from tokenscale.render.length_classes import LENGTH_PARENT_LABEL
from tokenscale.render.names import label_value

FIELD_MANAGER = "tokenscale"
HANDOVER_MANAGER = "tokenscale-handover"
"""Co-owns ``spec.replicas`` of a workload whose replicas KEDA writes
(``Kube.hand_over_replicas``)."""
APPLY = "application/apply-patch+yaml"
log = logging.getLogger(__name__)
T = TypeVar("T")


def retry_on_conflict(fn: Callable[[], T], attempts: int = 5, backoff_s: float = 0.1) -> T:
    """Run ``fn``; on HTTP 409 (a stale resourceVersion) run it again, re-reading inside ``fn``."""
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except ApiException as exc:
            if exc.status != 409 or attempt == attempts:
                raise
            log.info("409 conflict, retrying (%d/%d)", attempt, attempts)
            time.sleep(backoff_s * attempt)
    raise AssertionError("unreachable")  # pragma: no cover


def object_path(kind: str, namespace: str, name: str) -> str:
    """The API path of a Deployment or Service."""
    if kind == "Deployment":
        return f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
    if kind == "Service":
        return f"/api/v1/namespaces/{namespace}/services/{name}"
    raise ValueError(f"no path for {kind}")  # pragma: no cover - callers pass these two


INFERENCE_SERVICES = CustomResource(
    API_GROUP,
    API_VERSION,
    PLURAL,
    lambda: RuntimeError("the InferenceService CRD is not installed (crds/ or the chart)"),
)
"""Our own resource, as a custom resource: a length class's child is applied through it."""


class Kube:
    """The operator's API calls. Each method is one verb on one resource (see RBAC)."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api
        self.apps = client.AppsV1Api(api)
        self.core = client.CoreV1Api(api)
        self.policy = client.PolicyV1Api(api)
        self.custom = client.CustomObjectsApi(api)

    def _plain(self, obj: object) -> dict[str, Any]:
        """A client model as the plain JSON-shaped dict the API server sent."""
        data = self.api.sanitize_for_serialization(obj)  # type: ignore[no-untyped-call]
        return cast(dict[str, Any], data)

    # -- owned objects ----------------------------------------------------------------------
    def read_deployment(self, namespace: str, name: str) -> dict[str, Any] | None:
        return _or_none(lambda: self._raw("GET", object_path("Deployment", namespace, name)))

    def read_service(self, namespace: str, name: str) -> dict[str, Any] | None:
        return _or_none(lambda: self._raw("GET", object_path("Service", namespace, name)))

    def read_config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        return _or_none(lambda: self._plain(self.core.read_namespaced_config_map(name, namespace)))

    def _raw(
        self,
        method: str,
        path: str,
        body: object = None,
        content_type: str | None = None,
        query: list[tuple[str, str]] | None = None,
    ) -> dict[str, Any]:
        """A JSON request on ``path`` with the client's credentials (for what the typed client
        lacks); raises ApiException like the typed methods."""
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        if content_type == APPLY and body is not None:
            # an apply body is parsed as YAML, which refuses JSON's surrogate-pair escapes of a
            # character beyond the BMP (an emoji): send UTF-8, not the client's ASCII-escaped JSON
            body = json.dumps(body, ensure_ascii=False).encode()
        request = self.api.param_serialize(
            method,
            path,
            query_params=query or [],
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        response = self.api.call_api(*request)
        response.read()  # type: ignore[no-untyped-call]
        if not 200 <= response.status < 300:
            raise ApiException(http_resp=response)
        return cast(dict[str, Any], json.loads(response.data or b"{}"))

    @functools.cached_property
    def pdb_api_version(self) -> str:
        """``policy/v1`` where served (Kubernetes ≥ 1.21), else ``policy/v1beta1``."""
        try:
            self._raw("GET", "/apis/policy/v1")
        except ApiException as exc:
            if exc.status == 404:
                return "policy/v1beta1"
            raise
        return "policy/v1"

    def _pdb_path(self, namespace: str, name: str) -> str:
        return f"/apis/{self.pdb_api_version}/namespaces/{namespace}/poddisruptionbudgets/{name}"

    def read_pdb(self, namespace: str, name: str) -> dict[str, Any] | None:
        return _or_none(lambda: self._raw("GET", self._pdb_path(namespace, name)))

    def _apply_pdb(self, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        body = {**obj, "apiVersion": self.pdb_api_version}
        return self._raw(
            "PATCH",
            self._pdb_path(meta["namespace"], meta["name"]),
            body,
            APPLY,
            query=[("fieldManager", FIELD_MANAGER), ("force", "true")],
        )

    # -- LeaderWorkerSets (kube/lws.py) -----------------------------------------------------
    def read_leader_worker_set(self, namespace: str, name: str) -> dict[str, Any] | None:
        return lws.RESOURCE.read(self._raw, namespace, name)

    def read_own_workload(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """A Deployment or LeaderWorkerSet that may be ours (to remove when stale); a cached
        client answers from its cache."""
        if kind == lws.KIND:
            return self.read_leader_worker_set(namespace, name)
        return self.read_deployment(namespace, name)

    # -- KEDA ScaledObjects (kube/keda.py) --------------------------------------------------
    def read_scaled_object(self, namespace: str, name: str) -> dict[str, Any] | None:
        return keda.RESOURCE.read(self._raw, namespace, name)

    # -- InferencePools (kube/inference_pool.py) --------------------------------------------
    def read_inference_pool(self, namespace: str, name: str) -> dict[str, Any] | None:
        return inference_pool.RESOURCE.read(self._raw, namespace, name)

    # -- InferenceObjectives (kube/inference_objective.py) ------------------------------------
    def read_inference_objective(self, namespace: str, name: str) -> dict[str, Any] | None:
        return inference_objective.RESOURCE.read(self._raw, namespace, name)

    def list_inference_objectives(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        return inference_objective.list_labelled(self._raw, namespace, selector)

    def delete_inference_objective(self, namespace: str, name: str) -> None:
        inference_objective.RESOURCE.delete(self._raw, namespace, name)

    # -- any workload's /scale (spec.workloadRef, kube/scale.py) -----------------------------
    def scalable(self, api_version: str, kind: str) -> scale.Resource | None:
        """From discovery; a kind found is remembered (one discovery read per kind, not one
        per reconcile), a kind not found is asked again (its CRD may be installed later)."""
        cache: dict[tuple[str, str], scale.Resource] = self.__dict__.setdefault("_scalable", {})
        found = cache.get((api_version, kind)) or scale.resource(self._raw, api_version, kind)
        if found is not None:
            cache[(api_version, kind)] = found
        return found

    def read_object(
        self, where: scale.Resource, namespace: str, name: str
    ) -> dict[str, Any] | None:
        return scale.read(self._raw, where, namespace, name)

    def read_scale(self, where: scale.Resource, namespace: str, name: str) -> dict[str, Any] | None:
        return scale.read_scale(self._raw, where, namespace, name)

    def write_replicas(self, where: scale.Resource, namespace: str, name: str, n: int) -> None:
        scale.write_replicas(self._raw, where, namespace, name, n)

    def delete_scaled_object(self, namespace: str, name: str) -> None:
        keda.RESOURCE.delete(self._raw, namespace, name)

    def hand_over_replicas(self, workload: dict[str, Any], replicas: int) -> dict[str, Any]:
        """Server-side apply of ``spec.replicas`` alone as field manager
        ``tokenscale-handover`` (no force: the value is the live one), so that the next apply
        of ``tokenscale``'s own without ``replicas`` leaves the field to its other writer
        (KEDA's HPA) instead of removing it (Kubernetes' documented hand-over to an HPA)."""
        meta = workload["metadata"]
        body = {
            "apiVersion": workload["apiVersion"],
            "kind": workload["kind"],
            "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
            "spec": {"replicas": replicas},
        }
        if workload["kind"] == lws.KIND:
            path = lws.RESOURCE.path(meta["namespace"], meta["name"])
        else:
            path = f"/apis/apps/v1/namespaces/{meta['namespace']}/deployments/{meta['name']}"
        return self._raw("PATCH", path, body, APPLY, query=[("fieldManager", HANDOVER_MANAGER)])

    def delete_deployment(self, namespace: str, name: str) -> None:
        """Delete our Deployment (foreground: its pods go before it does); 404 is success."""
        _or_none(
            lambda: self._plain(
                self.apps.delete_namespaced_deployment(
                    name, namespace, propagation_policy="Foreground"
                )
            )
        )

    def delete_leader_worker_set(self, namespace: str, name: str) -> None:
        lws.RESOURCE.delete(self._raw, namespace, name)

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply as field manager ``tokenscale`` (force: we own these fields)."""
        kind, ns, name = obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"]
        if kind == lws.KIND:
            return lws.RESOURCE.apply(self._raw, obj, FIELD_MANAGER, APPLY)
        if kind == SCALED_OBJECT:
            return keda.RESOURCE.apply(self._raw, obj, FIELD_MANAGER, APPLY)
        if kind == INFERENCE_POOL:
            return inference_pool.RESOURCE.apply(self._raw, obj, FIELD_MANAGER, APPLY)
        if kind == INFERENCE_OBJECTIVE:
            return inference_objective.RESOURCE.apply(self._raw, obj, FIELD_MANAGER, APPLY)
        if kind == "PodDisruptionBudget":
            return self._apply_pdb(obj)
        if kind == "InferenceService":  # a length class's child
            return INFERENCE_SERVICES.apply(self._raw, obj, FIELD_MANAGER, APPLY)
        if kind not in ("Deployment", "Service"):  # pragma: no cover - the renderer makes these
            raise ValueError(f"cannot apply {kind}")
        # the answer as JSON, not through the client's models (a parse and a re-serialisation
        # of every field, per apply)
        query = [("fieldManager", FIELD_MANAGER), ("force", "true")]
        return self._raw("PATCH", object_path(kind, ns, name), obj, APPLY, query=query)

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        got = self.core.list_namespaced_pod(namespace, label_selector=selector)
        return list(self._plain(got).get("items") or [])

    def list_resource_quotas(self, namespace: str) -> list[dict[str, Any]]:
        """The namespace's ResourceQuotas (their ``status.hard``/``status.used`` bound GPUs)."""
        got = self.core.list_namespaced_resource_quota(namespace)
        return list(self._plain(got).get("items") or [])

    def annotate_pod(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        """Merge-patch annotations onto a pod (404: it is already gone, which is fine)."""
        _or_none(
            lambda: self._plain(
                self.core.patch_namespaced_pod(
                    name, namespace, {"metadata": {"annotations": annotations}}
                )
            )
        )

    # -- the InferenceService ----------------------------------------------------------------
    def read_inference_service(self, namespace: str, name: str) -> dict[str, Any] | None:
        return _or_none(
            lambda: cast(
                dict[str, Any],
                self.custom.get_namespaced_custom_object(
                    API_GROUP, API_VERSION, namespace, PLURAL, name
                ),
            )
        )

    def list_length_children(self, namespace: str, parent: str) -> list[dict[str, Any]]:
        """The InferenceServices labelled as length classes of ``parent``."""
        selector = f"{LENGTH_PARENT_LABEL}={label_value(parent)}"
        got = self._raw(
            "GET", INFERENCE_SERVICES.path(namespace), query=[("labelSelector", selector)]
        )
        return list(got.get("items") or [])

    def delete_inference_service(self, namespace: str, name: str) -> None:
        """Delete one (a length class the spec dropped); absent is success."""
        INFERENCE_SERVICES.delete(self._raw, namespace, name)

    def create_event(
        self, involved: dict[str, Any], type_: str, reason: str, message: str, now: str
    ) -> None:
        """A core/v1 Event about ``involved`` (works from any thread, inside kopf or not)."""
        meta = involved["metadata"]
        event: dict[str, Any] = {
            "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
            "involvedObject": {
                "apiVersion": involved.get("apiVersion", f"{API_GROUP}/{API_VERSION}"),
                "kind": involved.get("kind", "InferenceService"),
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "type": type_,
            "reason": reason,
            "message": message[:1024],
            "source": {"component": FIELD_MANAGER},
            "reportingComponent": FIELD_MANAGER,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        self._raw("POST", f"/api/v1/namespaces/{meta['namespace']}/events", event)

    def list_inference_services(self, namespaces: list[str] | None) -> list[dict[str, Any]]:
        """Every InferenceService in ``namespaces`` (None: all namespaces)."""
        if namespaces is None:
            got = self.custom.list_cluster_custom_object(API_GROUP, API_VERSION, PLURAL)
            return list(cast(dict[str, Any], got)["items"])
        items: list[dict[str, Any]] = []
        for ns in namespaces:
            got = self.custom.list_namespaced_custom_object(API_GROUP, API_VERSION, ns, PLURAL)
            items.extend(cast(dict[str, Any], got)["items"])
        return items

    def replace_status(
        self,
        namespace: str,
        name: str,
        status: dict[str, Any],
        resource_version: str | None = None,
    ) -> dict[str, Any]:
        """Replace the whole ``status`` (PUT on the status subresource: keys left out are
        removed). Conditional on ``resource_version``; on 409 (someone, e.g. Kopf's annotation
        patch, wrote since) the current version is re-read and the same status written again:
        the operator is the status' only writer."""
        version = [resource_version]

        def write() -> dict[str, Any]:
            if version[0] is None:  # from the API server, never a cache
                current = Kube.read_inference_service(self, namespace, name)
                if current is None:
                    raise ApiException(status=404, reason="Not Found")
                version[0] = current["metadata"]["resourceVersion"]
            body: dict[str, Any] = {
                "apiVersion": f"{API_GROUP}/{API_VERSION}",
                "kind": "InferenceService",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "resourceVersion": version[0],
                },
                "status": status,
            }
            try:
                out = self.custom.replace_namespaced_custom_object_status(
                    API_GROUP, API_VERSION, namespace, PLURAL, name, body
                )
                return cast(dict[str, Any], out)
            except ApiException as exc:
                if exc.status == 409:
                    version[0] = None  # re-read on the next attempt
                raise

        return retry_on_conflict(write)
