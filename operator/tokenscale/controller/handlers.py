"""Kopf handlers, registered on a registry built at start-up from the settings.

Every entry point (create, update, resume, the resync loop, a change to an owned Deployment
or LeaderWorkerSet) calls the same :class:`~tokenscale.controller.resync.Reconciler`. Only the
resync loop reads metrics, so only it brings a new observation for the decision engine; the
other entry points render and apply the decision stored in status (``scaling/stepper.py``).
Kopf keeps its own state in annotations (works on a 1.20 API server with a structural status
schema) and always runs standalone: with several replicas, leader election on a Lease
(controller/leader.py) decides which one runs Kopf at all.
"""

import asyncio
import logging
from typing import Any

import kopf

from tokenscale.api.crd import PLURAL
from tokenscale.api.inference_service import API_GROUP, API_VERSION, KIND
from tokenscale.controller.diffbase import DigestDiffBaseStorage
from tokenscale.controller.resync import Reconciler, fleet_metrics, resync_forever
from tokenscale.controller.settings import Settings
from tokenscale.controller.telemetry import Telemetry
from tokenscale.kube import lws
from tokenscale.kube.client import Kube
from tokenscale.kube.connect import bearer_token
from tokenscale.render.labels import MANAGED_BY

log = logging.getLogger(__name__)
KOPF_PREFIX = "kopf.tokenscale.io"


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
        run = Reconciler(kube, fleet_metrics(settings, metrics_out), metrics_out)
    metrics = run.metrics

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=KOPF_PREFIX)
        # a digest, not the whole object: a spec near 256 KiB still fits (controller/diffbase.py)
        settings.persistence.diffbase_storage = DigestDiffBaseStorage(
            prefix=KOPF_PREFIX, key="last-handled-configuration"
        )
        settings.posting.level = logging.INFO
        settings.watching.server_timeout = 300
        settings.execution.max_workers = 16

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

    @kopf.on.resume(*resource, registry=registry)
    def resumed(body: Any, **_: Any) -> None:
        run(body)

    @kopf.on.create(*resource, registry=registry)
    def created(body: Any, **_: Any) -> None:
        run(body)

    @kopf.on.update(*resource, registry=registry)
    def updated(body: Any, **_: Any) -> None:
        run(body)

    tasks: list[asyncio.Task[None]] = []

    @kopf.on.startup(registry=registry, id="resync-start")
    async def start_resync(**_: Any) -> None:
        loop = resync_forever(settings, kube, metrics, run)
        tasks.append(asyncio.create_task(loop, name="tokenscale-resync"))

    @kopf.on.cleanup(registry=registry)
    async def stop_resync(**_: Any) -> None:
        for task in tasks:
            task.cancel()

    @kopf.on.event(
        "apps",
        "v1",
        "deployments",
        registry=registry,
        labels={"app.kubernetes.io/managed-by": MANAGED_BY},
    )
    @kopf.on.event(
        lws.GROUP,
        lws.VERSION,
        lws.PLURAL,
        registry=registry,
        labels={"app.kubernetes.io/managed-by": MANAGED_BY},
    )
    def owned_deployment_changed(event: kopf.RawEvent, body: kopf.Body, **_: Any) -> None:
        if event.get("type") is None:  # the initial listing: resume handles those
            return
        meta = body.get("metadata") or {}
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
        run({"metadata": {"namespace": meta["namespace"], "name": owner["name"]}})

    return registry
