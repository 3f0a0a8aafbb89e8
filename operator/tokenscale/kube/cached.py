"""The operator's API calls with reads served from the watch cache (kube/store.py).

:class:`CachedKube` is a :class:`~tokenscale.kube.client.Kube` whose reads of the watched
kinds (InferenceServices, and the Deployments, Services, PodDisruptionBudgets,
LeaderWorkerSets labelled ``app.kubernetes.io/managed-by=tokenscale``, every ResourceQuota in
scope and, with a metrics source, pods carrying the ``tokenscale.io/inferenceservice`` label)
come from
the store, and whose writes (server-side apply, the status) are written through to it. A miss
of an owned kind costs nothing when the store knows the name is free (no object of ours, no
foreign one kept as a stub, and the kind's watch stream past the InferenceService's version:
``WatchStore.free``); otherwise it asks the API once (nothing there, or an object someone else
made under our name).
Everything else (the ConfigMap a ``spec.profileRef`` names, events, deletes, pod
annotations) is the plain API call.
"""

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tokenscale.api.crd import PLURAL
from tokenscale.api.inference_service import API_GROUP, API_VERSION
from tokenscale.kube import lws
from tokenscale.kube.client import Kube, object_path
from tokenscale.kube.store import WatchStore
from tokenscale.render.labels import INFERENCE_SERVICE_LABEL, MANAGED_BY
from tokenscale.render.length_classes import LENGTH_PARENT_LABEL
from tokenscale.render.names import label_value

INFERENCE_SERVICE = "InferenceService"
DEPLOYMENT = "Deployment"
SERVICE = "Service"
PDB = "PodDisruptionBudget"
POD = "Pod"
RESOURCE_QUOTA = "ResourceQuota"
KINDS = (INFERENCE_SERVICE, DEPLOYMENT, SERVICE, PDB, lws.KIND, RESOURCE_QUOTA)
"""Always cached; pods too (``POD``) when a metrics source is configured: only scaling on
metrics reads them (lead time, which pods a scale-down removes), and plan-only operators
need not pay for their watch events."""
MANAGED_LABEL = "app.kubernetes.io/managed-by"
OWNED_SELECTOR = f"{MANAGED_LABEL}={MANAGED_BY}"
FOREIGN_SELECTOR = f"{MANAGED_LABEL}!={MANAGED_BY}"
"""Everything else of an owned kind (an unlabelled object too): kept as stubs, so that a name
nobody holds needs no GET before its create."""
RENDERED = (DEPLOYMENT, SERVICE, PDB, lws.KIND)
"""The kinds we create by name: their foreign objects are tracked (``WatchStore.free``)."""
POD_SELECTOR = INFERENCE_SERVICE_LABEL
"""Pods: every pod our selectors pick carries the InferenceService label (its existence)."""


def _labels(selector: str) -> dict[str, str]:
    """``a=b,c=d`` as a dict (equality selectors only: all the operator writes)."""
    out = {}
    for part in selector.split(","):
        key, _, value = part.partition("=")
        if key.strip():
            out[key.strip()] = value.strip()
    return out


class CachedKube(Kube):
    """Reads from ``store`` (after :meth:`prime`), writes through the API and into it."""

    def __init__(
        self, api: client.ApiClient, store: WatchStore, namespaces: list[str] | None
    ) -> None:
        super().__init__(api)
        self.store = store
        self.namespaces = namespaces
        self.written: dict[tuple[str, str], dict[str, Any]] = {}
        """The InferenceService as our last status write returned it, by (namespace, name)."""
        self._listed: dict[tuple[str, str], list[Any]] = {}
        """The priming LISTs' resourceVersions by (kind, namespace): ours, then the rest."""
        self._owner = threading.local()
        """The resourceVersion of the InferenceService this thread reconciles (:meth:`owner`)."""

    @contextlib.contextmanager
    def owner(self, resource_version: str | None) -> Iterator[None]:
        """Reads of owned objects on this thread are for the InferenceService at
        ``resource_version``: a name the cache knows to be free as of it is not asked for."""
        self._owner.version = resource_version
        try:
            yield
        finally:
            self._owner.version = None

    def watched(self, kind: str, obj: dict[str, Any], deleted: bool, listing: bool) -> None:
        """A watch event of ``kind``: into the cache (an owned kind's object without our label
        as a stub), and how far the kind's stream has delivered. ``listing``: an object of the
        stream's initial listing (its objects come in name order, not resourceVersion order:
        the stream is known only from its first watch event on)."""
        meta = obj.get("metadata") or {}
        ns = str(meta.get("namespace") or "")
        if deleted:
            self.store.drop(kind, ns, str(meta.get("name") or ""), meta.get("resourceVersion"))
        elif kind in RENDERED and (meta.get("labels") or {}).get(MANAGED_LABEL) != MANAGED_BY:
            self.store.put_foreign(kind, obj)
        else:
            self.store.put(kind, obj)
        if kind in RENDERED and not listing:  # a namespaced operator's: one per namespace
            stream = ns if self.namespaces is not None else ""
            self.store.heard(kind, stream, meta.get("resourceVersion"))

    # -- priming: one LIST per kind and namespace -------------------------------------------
    def _collection(self, kind: str, namespace: str | None) -> str:
        scope = f"/namespaces/{namespace}" if namespace else ""
        return {
            INFERENCE_SERVICE: f"/apis/{API_GROUP}/{API_VERSION}{scope}/{PLURAL}",
            DEPLOYMENT: f"/apis/apps/v1{scope}/deployments",
            SERVICE: f"/api/v1{scope}/services",
            PDB: f"/apis/{self.pdb_api_version}{scope}/poddisruptionbudgets",
            lws.KIND: f"/apis/{lws.GROUP}/{lws.VERSION}{scope}/{lws.PLURAL}",
            POD: f"/api/v1{scope}/pods",
            RESOURCE_QUOTA: f"/api/v1{scope}/resourcequotas",
        }[kind]

    def list_kind(self, kind: str, foreign: bool = False) -> list[dict[str, Any]]:
        """Every object of ``kind`` in scope (owned kinds: ours only, or with ``foreign`` the
        rest); a kind the API server does not serve (no LeaderWorkerSet CRD) lists as empty.
        Both lists of an owned kind done, the store knows the kind as of the older one."""
        selector = POD_SELECTOR if kind == POD else OWNED_SELECTOR
        selector = FOREIGN_SELECTOR if foreign else selector
        unlabelled = (INFERENCE_SERVICE, RESOURCE_QUOTA)  # every one, not only ours
        query = [] if kind in unlabelled else [("labelSelector", selector)]
        items: list[dict[str, Any]] = []
        for ns in self.namespaces if self.namespaces is not None else [None]:
            try:
                got = self._raw("GET", self._collection(kind, ns), query=query)
            except ApiException as exc:
                if exc.status == 404 and kind == lws.KIND:
                    return []  # not served: never known free, each read asks
                raise
            items.extend(got.get("items") or [])
            if kind in RENDERED:
                listed = self._listed.setdefault((kind, ns or ""), [])
                listed.append((got.get("metadata") or {}).get("resourceVersion"))
                if len(listed) == 2:  # ours and the rest: everything up to the older
                    self.store.heard(kind, ns or "", min(listed, key=lambda v: int(str(v))))
        return items

    def prime(self) -> None:
        self._listed.clear()
        listers: dict[str, Callable[[], list[dict[str, Any]]]] = {
            kind: functools.partial(self.list_kind, kind) for kind in self.store.kinds
        }
        for kind in RENDERED:
            if kind in self.store.kinds:
                for obj in self.list_kind(kind, foreign=True):
                    self.store.put_foreign(kind, obj)
        self.store.prime(listers)

    # -- reads --------------------------------------------------------------------------------
    def read_inference_service(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.store.get(INFERENCE_SERVICE, namespace, name)

    def _owned(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The cached object; None when the store knows the name is free as of the
        InferenceService this thread reconciles (:meth:`owner`); else the API's answer: a
        miss is then either nothing (about to be created: one GET) or an object someone else
        made under that name, which must be seen to be left alone. The GET asks
        for ``resourceVersion=0``: the API server answers from its own watch cache, not etcd
        (the object as of a few milliseconds ago at worst; the apply that follows races a
        foreign create either way)."""
        found = self.store.get(kind, namespace, name)
        if found is not None:
            return found
        if self.store.free(kind, namespace, name, getattr(self._owner, "version", None)):
            return None  # nobody held it when the InferenceService was written
        path = {
            DEPLOYMENT: lambda: object_path(DEPLOYMENT, namespace, name),
            SERVICE: lambda: object_path(SERVICE, namespace, name),
            PDB: lambda: self._pdb_path(namespace, name),
            lws.KIND: lambda: lws.RESOURCE.path(namespace, name),
        }[kind]()
        try:
            return self._raw("GET", path, query=[("resourceVersion", "0")])
        except ApiException as exc:
            if exc.status == 404:  # no such object (or, for LWS, no such API)
                return None
            raise

    def read_deployment(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._owned(DEPLOYMENT, namespace, name)

    def read_service(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._owned(SERVICE, namespace, name)

    def read_pdb(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._owned(PDB, namespace, name)

    def read_leader_worker_set(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._owned(lws.KIND, namespace, name)

    def read_own_workload(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """From the cache alone: an object of ours carries our label, so the watch has it."""
        return self.store.get(kind, namespace, name)

    def list_resource_quotas(self, namespace: str) -> list[dict[str, Any]]:
        return self.store.select(RESOURCE_QUOTA, namespace, {})

    def list_length_children(self, namespace: str, parent: str) -> list[dict[str, Any]]:
        return self.store.select(
            INFERENCE_SERVICE, namespace, {LENGTH_PARENT_LABEL: label_value(parent)}
        )

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        if POD not in self.store.kinds:  # pods are watched only with a metrics source
            return super().list_pods(namespace, selector)
        if POD_SELECTOR not in _labels(selector):  # a referenced workload's: not watched
            return super().list_pods(namespace, selector)
        return self.store.select(POD, namespace, _labels(selector))

    # -- writes, written through ------------------------------------------------------------
    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        out = super().apply(obj)
        if obj["kind"] in self.store.kinds:  # a ScaledObject is not watched
            self.store.put(obj["kind"], out)
        return out

    def replace_status(
        self,
        namespace: str,
        name: str,
        status: dict[str, Any],
        resource_version: str | None = None,
    ) -> dict[str, Any]:
        out = super().replace_status(namespace, name, status, resource_version)
        self.store.put(INFERENCE_SERVICE, out)
        self.written[(namespace, name)] = out
        return out
