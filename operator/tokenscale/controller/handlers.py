"""Kopf handlers, registered on a registry built at start-up from the settings.

Every entry point (create, update, resume, the resync timer, a change to an owned Deployment
or LeaderWorkerSet)
calls the same :func:`reconcile`. Kopf keeps its own state in annotations (works on a 1.20 API
server with a structural status schema) and runs standalone unless peering is asked for.
"""

import asyncio
import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import kopf
from kubernetes.client.exceptions import ApiException

from tokenscale.api.crd import PLURAL
from tokenscale.api.inference_service import API_GROUP, API_VERSION, KIND
from tokenscale.controller.reconcile import EventSink, MetricsView, reconcile
from tokenscale.controller.settings import Settings
from tokenscale.controller.telemetry import Telemetry
from tokenscale.kube import lws
from tokenscale.kube.client import Kube
from tokenscale.kube.connect import bearer_token, connect
from tokenscale.metrics import PrometheusConfig, PrometheusSource
from tokenscale.metrics.promql import QueryConfig
from tokenscale.render.labels import MANAGED_BY
from tokenscale.scaling import Snapshot

log = logging.getLogger(__name__)
KOPF_PREFIX = "kopf.tokenscale.io"
RESYNC_CONCURRENCY = 8


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _emitter(kube: Kube, body: Any) -> EventSink:
    def emit(type_: str, reason: str, message: str) -> None:
        try:
            kube.create_event(dict(body), type_, reason, message, _now())
        except ApiException as exc:  # an event is never worth failing a reconcile for
            log.warning("cannot post event %s: %s %s", reason, exc.status, exc.reason)

    return emit


@dataclass
class _FleetMetrics:
    """The last fleet-wide read (replaced whole every cycle)."""

    snapshots: dict[tuple[str, str], Snapshot] = field(default_factory=dict)
    error: str | None = None


def build_registry(
    settings: Settings,
    kube: Kube,
    telemetry: Telemetry | None = None,
) -> kopf.OperatorRegistry:
    metrics_out = telemetry or Telemetry()
    registry = kopf.OperatorRegistry()
    resource = (API_GROUP, API_VERSION, PLURAL)
    source = metrics_source(settings)
    latest = _FleetMetrics()
    stale_after_s = max(60.0, 4 * settings.interval_seconds)

    def metrics_view(key: tuple[str, str]) -> MetricsView | None:
        if source is None:
            return None
        return MetricsView(
            snapshot=latest.snapshots.get(key),
            source_error=latest.error,
            now_s=time.time(),
            stale_after_s=stale_after_s,
        )

    def refresh_metrics() -> None:
        if source is None:
            return
        namespaces = None if settings.clusterwide else list(settings.namespaces)
        latest.snapshots = source.snapshots(namespaces, time.time())
        latest.error = source.last_error
        metrics_out.record_query_errors(source.last_error)

    locks: dict[tuple[str, str], threading.Lock] = {}
    last_error: dict[tuple[str, str], str] = {}
    locks_guard = threading.Lock()

    def run(body: Any) -> None:
        """Reconcile one object: one at a time per object, from a fresh read (the handler, the
        timer and a Deployment event may fire together; the later one sees what the earlier
        one wrote)."""
        key = (body["metadata"]["namespace"], body["metadata"]["name"])
        with locks_guard:
            lock = locks.setdefault(key, threading.Lock())
        with lock:
            current = kube.read_inference_service(*key)
            if current is None or (current.get("metadata") or {}).get("deletionTimestamp"):
                locks.pop(key, None)
                return
            _reconcile(current)

    def _reconcile(body: dict[str, Any]) -> None:
        key = (body["metadata"]["namespace"], body["metadata"]["name"])
        started = time.perf_counter()
        try:
            outcome = reconcile(kube, body, _now(), _emitter(kube, body), metrics_view(key))
        except ApiException as exc:
            message = f"{exc.status} {exc.reason}: {exc.body}"
            if last_error.get(key) != message:  # one event per distinct error, not per retry
                _emitter(kube, body)("Warning", "ApplyFailed", message)
                last_error[key] = message
            raise kopf.TemporaryError(f"API error {exc.status}", delay=10) from exc
        last_error.pop(key, None)
        elapsed = time.perf_counter() - started
        metrics_out.reconcile_seconds.observe(elapsed)
        if outcome.plan is not None and outcome.decision is not None:
            view = metrics_view(key)
            metrics_out.record(
                *key,
                outcome.plan,
                outcome.decision,
                outcome.previous_decision,
                view.snapshot if view else None,
                outcome.decision.replicas,
                outcome.ready_replicas,
            )
        log.debug("reconciled %s/%s in %.1f ms", *key, elapsed * 1e3)
        if outcome.applied:
            log.info(
                "%s/%s: applied %s",
                body["metadata"]["namespace"],
                body["metadata"]["name"],
                ", ".join(outcome.applied),
            )

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=KOPF_PREFIX)
        settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
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

    # The periodic re-evaluation is our own loop, not a kopf timer: kopf puts a finalizer on
    # every object that has a timer, and a stopped operator would then block deletions.
    async def resync_forever() -> None:
        """Every interval: one fleet-wide metrics read, then every object reconciled. It never
        dies: an unexpected error is logged and the next cycle runs."""
        while True:
            try:
                await resync_once()
            except Exception:
                log.exception("resync cycle failed; retrying next interval")
            await asyncio.sleep(settings.interval_seconds)

    async def resync_once() -> None:
        with metrics_out.evaluation_seconds.time():
            await resync_cycle()

    async def resync_cycle() -> None:
        await asyncio.to_thread(refresh_metrics)
        try:
            items = await asyncio.to_thread(
                kube.list_inference_services,
                None if settings.clusterwide else list(settings.namespaces),
            )
        except ApiException as exc:
            log.warning("resync: cannot list InferenceServices: %s %s", exc.status, exc.reason)
            return
        await asyncio.gather(*(reconcile_bounded(item) for item in items))

    bound = asyncio.Semaphore(RESYNC_CONCURRENCY)

    async def reconcile_bounded(item: dict[str, Any]) -> None:
        async with bound:
            try:
                await asyncio.to_thread(run, item)
            except kopf.TemporaryError as exc:
                log.warning("resync: %s", exc)

    tasks: list[asyncio.Task[None]] = []

    @kopf.on.startup(registry=registry, id="resync-start")
    async def start_resync(**_: Any) -> None:
        tasks.append(asyncio.create_task(resync_forever(), name="tokenscale-resync"))

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


def metrics_source(settings: Settings) -> PrometheusSource | None:
    if not settings.prometheus_url:
        return None
    return PrometheusSource(
        PrometheusConfig(
            url=settings.prometheus_url,
            bearer_token_file=settings.prometheus_bearer_token_file,
            ca_file=settings.prometheus_ca_file,
            verify_tls=settings.prometheus_verify_tls,
            timeout_s=settings.prometheus_timeout_seconds,
            concurrency=settings.metrics_query_concurrency,
            query=QueryConfig(
                namespace_label=settings.metrics_namespace_label,
                service_label=settings.metrics_service_label,
                gauge_window=settings.metrics_gauge_window,
                rate_window=settings.metrics_rate_window,
            ),
        )
    )


def run_operator(settings: Settings) -> None:
    """Connect once, serve /metrics, then block running the operator until a signal stops it."""
    telemetry = Telemetry()
    if settings.metrics_port:
        telemetry.serve(settings.metrics_port)
    registry = build_registry(settings, Kube(connect(settings.kubeconfig)), telemetry)
    kopf.run(
        registry=registry,
        standalone=settings.standalone,
        # kopf makes peering mandatory whenever a name is given (and then pauses until the
        # peering CRD exists), so the name goes only with peering
        peering_name=None if settings.standalone else settings.peering_name,
        clusterwide=settings.clusterwide,
        namespaces=list(settings.namespaces),
        liveness_endpoint=settings.liveness_endpoint,
    )
