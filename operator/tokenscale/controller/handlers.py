"""Kopf handlers, registered on a registry built at start-up from the settings.

Every entry point (create, update, the resync loop, a change to an owned Deployment,
LeaderWorkerSet, Service or PodDisruptionBudget) calls the same
:class:`~tokenscale.controller.resync.Reconciler`. Only the resync loop reads metrics, so only
it brings a new observation for the decision engine; the other entry points render and apply
the decision stored in status (``scaling/stepper.py``). Every watch event also feeds the watch
cache (kube/store.py) the reconciles read from; an owned object's event reconciles only when
it drifts from what was rendered or changes what the status reports (one that arrives while
its service's reconcile runs is judged by that reconcile, ``Reconciler.defer``), an object of
an owned kind without our label is kept as a stub (its name is not free), and pods (watched
only with a metrics source) never wake a reconcile. Kopf keeps a retry's progress in annotations
(works on a 1.20 API server with a structural status schema) and the last-handled
configuration in memory (``controller/diffbase.py``), and always runs standalone: with
several replicas, leader election on a Lease (controller/leader.py) decides which one runs
Kopf at all.
"""

import asyncio
import logging
from typing import Any

import kopf

from tokenscale.api.crd import PLURAL
from tokenscale.api.inference_service import API_GROUP, API_VERSION, KIND
from tokenscale.controller.diffbase import MemoryDiffBaseStorage
from tokenscale.controller.progress import ProgressAnnotations
from tokenscale.controller.resync import Reconciler, fleet_metrics, resync_forever
from tokenscale.controller.settings import Settings
from tokenscale.controller.telemetry import Telemetry
from tokenscale.kube import cached, lws
from tokenscale.kube.client import Kube
from tokenscale.kube.connect import bearer_token
from tokenscale.render.labels import INFERENCE_SERVICE_LABEL, MANAGED_BY
from tokenscale.render.length_classes import LENGTH_PARENT_LABEL

log = logging.getLogger(__name__)
KOPF_PREFIX = "kopf.tokenscale.io"
IDLE_WORKER_S = 0.5
"""How long Kopf's task for one object waits for its next event before it exits."""


def build_registry(
    settings: Settings,
    kube: Kube,
    telemetry: Telemetry | None = None,
    run: Reconciler | None = None,
) -> kopf.OperatorRegistry:
    """The handlers around ``run`` (default: a reconciler that always acts, for a single
    operator; leader election passes one gated on the Lease)."""
    metrics_out = telemetry or Telemetry()
    registry = kopf.OperatorRegistry()
    resource = (API_GROUP, API_VERSION, PLURAL)
    if run is None:
        run = Reconciler(
            kube,
            fleet_metrics(settings, metrics_out),
            metrics_out,
            unwatched_resync_s=settings.unwatched_resync_s,
        )
    metrics = run.metrics
    handled = MemoryDiffBaseStorage()

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.persistence.progress_storage = ProgressAnnotations(prefix=KOPF_PREFIX)
        # in memory: no PATCH of the object per create and change (controller/diffbase.py)
        settings.persistence.diffbase_storage = handled
        settings.posting.level = logging.WARNING  # our own events say what happened
        settings.watching.server_timeout = 300
        settings.execution.max_workers = 16
        # Kopf keeps one task per object while its events come, and that task holds the last
        # event it handled (the whole object, every manager's fields) until it has waited this
        # long for the next: at Kopf's 5 s, a create wave kept ~800 of them at once, ~20 MB of
        # a 1,000-service operator's peak (docs/scale-out.md). An object's own events come
        # within milliseconds (our apply, its ADDED event) or seconds apart (the Deployment
        # controller's reports); a later one starts a new task, a coroutine's cost.
        settings.queueing.idle_timeout = IDLE_WORKER_S
        # after its own annotation patch (a retry's progress record; the last-handled
        # configuration is in memory) Kopf waits this long for the patched version before it
        # takes an older event at face value: under load watch events lag by seconds
        settings.persistence.consistency_timeout = 30.0
        # one "Handler … succeeded" line per watch event is noise at a thousand objects
        logging.getLogger("kopf.objects").setLevel(logging.WARNING)

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        cfg = kube.api.configuration
        return kopf.ConnectionInfo(
            server=cfg.host,
            ca_path=cfg.ssl_ca_cert,
            insecure=not cfg.verify_ssl,
            token=bearer_token(kube.api),
            certificate_path=cfg.cert_file,
            private_key_path=cfg.key_file,
        )

    @kopf.on.create(*resource, registry=registry)
    def created(body: Any, **_: Any) -> None:
        run(body, "create")

    @kopf.on.update(*resource, registry=registry)
    def updated(body: Any, **_: Any) -> None:
        run(body, "update")

    tasks: list[asyncio.Task[None]] = []

    @kopf.on.startup(registry=registry, id="resync-start")
    async def start_resync(**_: Any) -> None:
        if isinstance(kube, cached.CachedKube):  # one LIST per kind, then the watches
            await asyncio.to_thread(kube.prime)
            log.info(
                "watch cache primed: %s",
                ", ".join(f"{kube.store.count(k)} {k}" for k in kube.store.kinds),
            )
        loop = resync_forever(settings, kube, metrics, run)
        tasks.append(asyncio.create_task(loop, name="tokenscale-resync"))

    @kopf.on.cleanup(registry=registry)
    async def stop_resync(**_: Any) -> None:
        for task in tasks:
            task.cancel()

    store = run.store
    watching = run.kube if isinstance(run.kube, cached.CachedKube) else None

    def cache(kind: str, event: kopf.RawEvent) -> dict[str, Any] | None:
        """Feed the watch cache; the object as it now is (None: deleted)."""
        obj: dict[str, Any] = dict(event.get("object") or {})
        meta: dict[str, Any] = obj.get("metadata") or {}
        if watching is not None:
            deleted = event.get("type") == "DELETED"
            watching.watched(kind, obj, deleted, listing=event.get("type") is None)
            return None if deleted else obj
        if event.get("type") == "DELETED":
            if store is not None:
                store.drop(
                    kind,
                    meta.get("namespace", ""),
                    meta.get("name", ""),
                    meta.get("resourceVersion"),
                )
            return None
        if store is not None:
            store.put(kind, obj)
        return obj

    # The watch handlers are coroutines: feeding the cache costs microseconds, and a thread
    # hop per event (thousands when a fleet is created) would crowd out the reconciles.
    @kopf.on.event(*resource, registry=registry)
    async def inference_service_event(event: kopf.RawEvent, **_: Any) -> None:
        meta = (event.get("object") or {}).get("metadata") or {}
        if LENGTH_PARENT_LABEL in (meta.get("labels") or {}):  # a length class's child: its
            await owned_changed(cached.INFERENCE_SERVICE, event)  # status is its parent's too
            if event.get("type") == "DELETED":
                handled.forget(meta.get("uid"))
            return
        if cache(cached.INFERENCE_SERVICE, event) is None:  # deleted
            handled.forget(meta.get("uid"))

    if store is not None and cached.RESOURCE_QUOTA in store.kinds:

        @kopf.on.event("v1", "resourcequotas", registry=registry)
        async def quota_event(event: kopf.RawEvent, **_: Any) -> None:
            cache(cached.RESOURCE_QUOTA, event)  # read by the next reconcile or tick

    if store is not None and cached.POD in store.kinds:

        @kopf.on.event(
            "v1", "pods", registry=registry, labels={INFERENCE_SERVICE_LABEL: kopf.PRESENT}
        )
        async def pod_event(event: kopf.RawEvent, **_: Any) -> None:
            cache(cached.POD, event)

    async def owned_changed(kind: str, event: kopf.RawEvent) -> None:
        """A change to an object we render: reconcile its InferenceService only when the
        change drifts from what was rendered or changes what its status reports."""
        raw: dict[str, Any] = dict(event.get("object") or {})
        cache(kind, event)
        if event.get("type") is None:  # the initial listing: each service's create handles it
            return
        meta: dict[str, Any] = raw.get("metadata") or {}
        if (meta.get("labels") or {}).get(cached.MANAGED_LABEL) != MANAGED_BY:
            return  # someone else's: cached as a stub (a name it holds is not free)
        owner = next(
            (
                o
                for o in meta.get("ownerReferences") or []
                if o.get("kind") == KIND and o.get("apiVersion", "").startswith(API_GROUP)
            ),
            None,
        )
        if owner is None:
            return
        key, which = (meta["namespace"], owner["name"]), (kind, meta["name"])
        if run.defer(key, which):  # its reconcile in flight judges it once written
            return
        if not run.may_need(key, which):
            run.telemetry.skipped.labels("owned").inc()
            return
        body = {"metadata": {"namespace": key[0], "name": key[1]}}
        await asyncio.to_thread(run, body, "owned", which)

    @kopf.on.event("apps", "v1", "deployments", registry=registry)
    async def deployment_event(event: kopf.RawEvent, **_: Any) -> None:
        await owned_changed(cached.DEPLOYMENT, event)

    @kopf.on.event(lws.GROUP, lws.VERSION, lws.PLURAL, registry=registry)
    async def lws_event(event: kopf.RawEvent, **_: Any) -> None:
        await owned_changed(lws.KIND, event)

    @kopf.on.event("v1", "services", registry=registry)
    async def service_event(event: kopf.RawEvent, **_: Any) -> None:
        await owned_changed(cached.SERVICE, event)

    @kopf.on.event("policy", "poddisruptionbudgets", registry=registry)
    async def pdb_event(event: kopf.RawEvent, **_: Any) -> None:
        await owned_changed(cached.PDB, event)

    return registry
