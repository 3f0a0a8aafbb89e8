"""The reconcile runner, the fleet-wide metrics cache and the periodic resync loop.

:class:`Reconciler` runs :func:`reconcile` for one object: one at a time per object, from a
fresh read, and only while ``may_act()`` says this process is the leader. Kopf's handlers and
:func:`resync_forever` both call it. The periodic re-evaluation is our own loop, not a Kopf
timer: Kopf puts a finalizer on every object that has a timer, and a stopped operator would
then block deletions.
"""

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import kopf
from kubernetes.client.exceptions import ApiException

from tokenscale.controller.reconcile import EventSink, MetricsView, reconcile
from tokenscale.controller.settings import Settings
from tokenscale.controller.telemetry import Telemetry
from tokenscale.kube.client import Kube
from tokenscale.metrics import PrometheusConfig, PrometheusSource
from tokenscale.metrics.promql import QueryConfig
from tokenscale.metrics.source import QueryError, QueryErrorKind
from tokenscale.render.labels import INFERENCE_SERVICE_LABEL
from tokenscale.render.names import label_value
from tokenscale.scaling import Snapshot

log = logging.getLogger(__name__)
RESYNC_CONCURRENCY = 8


def now_stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def emitter(kube: Kube, body: Any) -> EventSink:
    def emit(type_: str, reason: str, message: str) -> None:
        try:
            kube.create_event(dict(body), type_, reason, message, now_stamp())
        except ApiException as exc:  # an event is never worth failing a reconcile for
            log.warning("cannot post event %s: %s %s", reason, exc.status, exc.reason)

    return emit


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


def fleet_metrics(settings: Settings, telemetry: Telemetry) -> "FleetMetrics":
    return FleetMetrics(
        source=metrics_source(settings),
        namespaces=None if settings.clusterwide else list(settings.namespaces),
        stale_after_s=max(60.0, 4 * settings.interval_seconds),
        telemetry=telemetry,
        interval_s=settings.interval_seconds,
    )


@dataclass
class FleetMetrics:
    """The last fleet-wide read, replaced whole every cycle (None source: plan-only)."""

    source: PrometheusSource | None
    namespaces: list[str] | None
    stale_after_s: float
    telemetry: Telemetry
    interval_s: float
    """``--interval``: the engine's interval for a service's first decision."""
    snapshots: dict[tuple[str, str], Snapshot] = field(default_factory=dict)
    running_by_pod: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    error: str | None = None
    read_at_s: float | None = None
    """When the last fleet read ran: the time of the observation every service's engine
    decides on once (None: no read yet)."""

    def refresh(self) -> None:
        """Replace the read; a source that raises leaves no data (every service holds) and its
        error in ``error``, never an exception out of the resync cycle."""
        if self.source is None:
            return
        # milliseconds: the observation's time round-trips through status.decision.observedAt
        read_at = round(time.time(), 3)
        try:
            snapshots = self.source.snapshots(self.namespaces, read_at)
            running = self.source.running_by_pod(self.namespaces)
            error = self.source.last_error
            errors = list(self.source.last_errors)
        except Exception as exc:  # a bug in reading must not stop the fleet's reconciles
            log.exception("metrics: the fleet read failed")
            snapshots, running = {}, {}
            error = f"the metrics read failed: {type(exc).__name__}: {str(exc)[:200]}"
            errors = [QueryError("*", QueryErrorKind.OTHER, error)]
        log.debug("metrics: %d services, per-pod %s", len(snapshots), running)
        # one assignment: a reconcile on another thread sees the whole read or none of it
        self.snapshots, self.running_by_pod, self.error, self.read_at_s = (
            snapshots,
            running,
            error,
            read_at,
        )
        self.telemetry.record_query_errors(errors)

    def view(self, key: tuple[str, str]) -> MetricsView | None:
        """The metrics of InferenceService ``key`` (namespace, metadata.name), found by the
        label its pods carry (``render/labels.py``: the name, or the derived value when the
        name is not a valid label value), which the PodMonitor copies into the series."""
        if self.source is None:
            return None
        ns, name = key
        series_key = (ns, label_value(name))
        snapshot = self.snapshots.get(series_key)
        error = self.error
        if snapshot is None and error is None:
            q = self.source.cfg.query
            error = (
                f'no vLLM series with {q.namespace_label}="{ns}", '
                f'{q.service_label}="{series_key[1]}" in Prometheus (the pods\' label '
                f"{INFERENCE_SERVICE_LABEL}; is the PodMonitor scraping them?)"
            )
        return MetricsView(
            snapshot=snapshot,
            source_error=error,
            now_s=time.time(),
            interval_s=self.interval_s,
            read_at_s=self.read_at_s,
            stale_after_s=self.stale_after_s,
            running_by_pod=self.running_by_pod.get(series_key),
        )


class Reconciler:
    """Reconcile one object at a time per key, from a fresh read, only while leading."""

    def __init__(
        self,
        kube: Kube,
        metrics: FleetMetrics,
        telemetry: Telemetry,
        may_act: Callable[[], bool] = lambda: True,
    ) -> None:
        self.kube, self.metrics, self.telemetry, self.may_act = kube, metrics, telemetry, may_act
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._guard = threading.Lock()
        self._last_error: dict[tuple[str, str], str] = {}
        self._in_flight = 0

    @property
    def in_flight(self) -> int:
        """Reconciles running now (past the leadership check, possibly writing)."""
        return self._in_flight

    def __call__(self, body: Any) -> None:
        """The handler, the loop and a Deployment event may fire together; the later one
        sees what the earlier one wrote."""
        key = (body["metadata"]["namespace"], body["metadata"]["name"])
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if not self.may_act():  # checked under the lock: a lost lease stops queued work
                log.info("%s/%s: not the leader; skipping", *key)
                return
            with self._guard:
                self._in_flight += 1
            try:
                current = self.kube.read_inference_service(*key)
                if current is None or (current.get("metadata") or {}).get("deletionTimestamp"):
                    self._locks.pop(key, None)
                    return
                self._reconcile(key, current)
            finally:
                with self._guard:
                    self._in_flight -= 1

    def _reconcile(self, key: tuple[str, str], body: dict[str, Any]) -> None:
        started = time.perf_counter()
        view = self.metrics.view(key)
        try:
            outcome = reconcile(self.kube, body, now_stamp(), emitter(self.kube, body), view)
        except ApiException as exc:
            message = f"{exc.status} {exc.reason}: {exc.body}"
            if self._last_error.get(key) != message:  # one event per distinct error
                emitter(self.kube, body)("Warning", "ApplyFailed", message)
                self._last_error[key] = message
            raise kopf.TemporaryError(f"API error {exc.status}", delay=10) from exc
        self._last_error.pop(key, None)
        elapsed = time.perf_counter() - started
        self.telemetry.reconcile_seconds.observe(elapsed)
        if outcome.plan is not None and outcome.decision is not None:
            self.telemetry.record(
                *key,
                outcome.plan,
                outcome.decision,
                outcome.live_replicas if outcome.decided else None,
                view.snapshot if view else None,
                outcome.decision.replicas,
                outcome.ready_replicas,
            )
        log.debug("reconciled %s/%s in %.1f ms", *key, elapsed * 1e3)
        if outcome.applied:
            log.info("%s/%s: applied %s", *key, ", ".join(outcome.applied))


async def resync_forever(
    settings: Settings, kube: Kube, metrics: FleetMetrics, run: Reconciler
) -> None:
    """Every interval: one fleet-wide metrics read, then every object reconciled. It never
    dies: an unexpected error is logged and the next cycle runs. Idle unless leading."""
    bound = asyncio.Semaphore(RESYNC_CONCURRENCY)

    async def one(item: dict[str, Any]) -> None:
        async with bound:
            try:
                await asyncio.to_thread(run, item)
            except kopf.TemporaryError as exc:
                log.warning("resync: %s", exc)
            except Exception:  # one service's failure never stops another's reconcile
                meta = item.get("metadata") or {}
                ns, name = meta.get("namespace"), meta.get("name")
                log.exception("resync: %s/%s failed; the others go on", ns, name)

    async def cycle() -> None:
        if not run.may_act():
            return
        await asyncio.to_thread(metrics.refresh)
        try:
            items = await asyncio.to_thread(
                kube.list_inference_services,
                None if settings.clusterwide else list(settings.namespaces),
            )
        except ApiException as exc:
            log.warning("resync: cannot list InferenceServices: %s %s", exc.status, exc.reason)
            return
        await asyncio.gather(*(one(item) for item in items))

    while True:
        try:
            with run.telemetry.evaluation_seconds.time():
                await cycle()
        except Exception:
            log.exception("resync cycle failed; retrying next interval")
        await asyncio.sleep(settings.interval_seconds)
