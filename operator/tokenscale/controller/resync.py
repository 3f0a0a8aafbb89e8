"""The reconcile runner, the fleet-wide metrics cache and the periodic resync loop.

:class:`Reconciler` runs :func:`reconcile` for one object: one at a time per object, from the
watch cache (a fresh read without one), and only while ``may_act()`` says this process is the
leader. Kopf's handlers and :func:`resync_forever` both call it. The periodic re-evaluation
is our own loop, not a Kopf timer: Kopf puts a finalizer on every object that has a timer,
and a stopped operator would then block deletions.
"""

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import kopf
from kubernetes.client.exceptions import ApiException

from tokenscale.controller.plans import reads_config_maps
from tokenscale.controller.quota import gpu_quotas
from tokenscale.controller.reconcile import EventSink, MetricsView, reconcile
from tokenscale.controller.settings import Settings
from tokenscale.controller.status import Observed
from tokenscale.controller.telemetry import Telemetry
from tokenscale.controller.workload import WORKLOAD_KINDS, observe_workload, selector_drift
from tokenscale.kube.cached import INFERENCE_SERVICE, RESOURCE_QUOTA, CachedKube
from tokenscale.kube.client import Kube
from tokenscale.kube.drift import differences
from tokenscale.kube.store import WatchStore
from tokenscale.metrics import PrometheusConfig, PrometheusSource
from tokenscale.metrics.demand import Demand, DemandQuery
from tokenscale.metrics.promql import QueryConfig
from tokenscale.metrics.source import QueryError, QueryErrorKind
from tokenscale.render.labels import INFERENCE_SERVICE_LABEL
from tokenscale.render.names import label_value
from tokenscale.scaling import Snapshot

log = logging.getLogger(__name__)
RESYNC_CONCURRENCY = 8
FORGET_AFTER_INTERVALS = 5
"""A demand source no reconcile renewed for this many intervals is no longer read."""
PRIME_WAIT_S = 120.0
UNWATCHED_RESYNC_S = 60.0
"""The longest a plan-only operator goes without reading the inputs it does not watch (a
ConfigMap, a referenced workload, a GPU mix's pods), unless told (``--unwatched-resync``;
the operator passes ``Settings.unwatched_resync_s``)."""


def unwatched_input(spec: Any) -> str | None:
    """What the spec makes a reconcile read that no watch stream reports (None: nothing):
    the ConfigMap of ``spec.profileRef`` or ``spec.model.hfConfigRef`` (``plans.py``), the
    workload ``spec.workloadRef`` names, or a GPU mix's pods (stockouts)."""
    if not isinstance(spec, dict):
        return None
    if reads_config_maps(spec):
        return "a ConfigMap"
    if spec.get("workloadRef"):
        return "the workload spec.workloadRef names"
    if (spec.get("hardware") or {}).get("variants") is not None:
        return "a GPU mix's pods"
    return None


def now_stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


EVENT_POSTERS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="tokenscale-events")
"""Events are posted in the background: a reconcile does not wait for them."""


def emitter(kube: Kube, body: Any) -> EventSink:
    involved = dict(body)

    def post(type_: str, reason: str, message: str, stamp: str) -> None:
        try:
            kube.create_event(involved, type_, reason, message, stamp)
        except ApiException as exc:  # an event is never worth failing a reconcile for
            log.warning("cannot post event %s: %s %s", reason, exc.status, exc.reason)
        except Exception:
            log.exception("cannot post event %s", reason)

    def emit(type_: str, reason: str, message: str) -> None:
        EVENT_POSTERS.submit(post, type_, reason, message, now_stamp())

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
    scale = settings.time_scale
    return FleetMetrics(
        source=metrics_source(settings),
        namespaces=None if settings.clusterwide else list(settings.namespaces),
        stale_after_s=max(60.0, 4 * settings.interval_seconds * scale),
        telemetry=telemetry,
        interval_s=settings.interval_seconds * scale,
        time_scale=scale,
        origin_s=time.time() if settings.time_origin is None else settings.time_origin,
    )


@dataclass
class FleetMetrics:
    """The last fleet-wide read, replaced whole every cycle (None source: plan-only)."""

    source: PrometheusSource | None
    namespaces: list[str] | None
    stale_after_s: float
    telemetry: Telemetry
    interval_s: float
    """``--interval`` in engine seconds: the engine's interval for a service's first decision."""
    time_scale: float = 1.0
    """Engine seconds per wall second (``--time-scale``; 1 except in a compressed-time
    playground, where the engine's clock, its intervals and the measured lead time run in the
    playground's modelled seconds)."""
    origin_s: float = field(default_factory=time.time)
    """The wall time at which the engine's clock equals the wall clock."""
    snapshots: dict[tuple[str, str], Snapshot] = field(default_factory=dict)
    running_by_pod: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    error: str | None = None
    read_at_s: float | None = None
    """When the last fleet read ran: the time of the observation every service's engine
    decides on once (None: no read yet)."""
    wanted: dict[tuple[str, str], tuple[DemandQuery | None, bool, float]] = field(
        default_factory=dict
    )
    """What the next read reads beyond the engines' series, per service as its last reconcile
    found it: its demand source (an InferencePool, an activation query; None: none), whether it
    is sized for its arrivals' dispersion (then the fleet read includes the dispersion
    subqueries), and the reconcile's wall time. An entry no reconcile renewed for
    :data:`FORGET_AFTER_INTERVALS` intervals (a deleted service) goes."""
    demands: dict[tuple[str, str], Demand] = field(default_factory=dict)
    _wanted_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def refresh(self) -> None:
        """Replace the read; a source that raises leaves no data (every service holds) and its
        error in ``error``, never an exception out of the resync cycle."""
        if self.source is None:
            return
        # milliseconds: the observation's time round-trips through status.decision.observedAt
        wall = time.time()
        read_at = round(self.engine_time(wall), 3)
        try:
            snapshots = self._on_engine_clock(
                self.source.snapshots(
                    self.namespaces,
                    read_at if self.time_scale == 1 else wall,
                    dispersion=any(d for _, d in self._renewed(wall).values()),
                ),
                read_at,
            )
            running = self.source.running_by_pod(self.namespaces)
            error = self.source.last_error
            errors = list(self.source.last_errors)
            demand = {k: q for k, (q, _) in self._renewed(wall).items() if q is not None}
            demands, demand_errors = self.source.demand(demand, self.namespaces)
            errors += demand_errors
        except Exception as exc:  # a bug in reading must not stop the fleet's reconciles
            log.exception("metrics: the fleet read failed")
            snapshots, running, demands = {}, {}, {}
            error = f"the metrics read failed: {type(exc).__name__}: {str(exc)[:200]}"
            errors = [QueryError("*", QueryErrorKind.OTHER, error)]
        log.debug("metrics: %d services, per-pod %s", len(snapshots), running)
        # one assignment: a reconcile on another thread sees the whole read or none of it
        self.snapshots, self.running_by_pod, self.error, self.read_at_s, self.demands = (
            snapshots,
            running,
            error,
            read_at,
            demands,
        )
        self.telemetry.record_query_errors(errors)

    def _renewed(self, wall_s: float) -> dict[tuple[str, str], tuple[DemandQuery | None, bool]]:
        """What the services renewed recently want read (older entries are forgotten)."""
        horizon = FORGET_AFTER_INTERVALS * self.interval_s / max(self.time_scale, 1e-9)
        with self._wanted_lock:
            for key in [k for k, (*_, t) in self.wanted.items() if wall_s - t > horizon]:
                del self.wanted[key]
            return {k: (q, d) for k, (q, d, _) in self.wanted.items()}

    def engine_time(self, wall_s: float) -> float:
        """The engine's clock at wall time ``wall_s`` (the wall clock when ``time_scale`` is 1)."""
        return self.origin_s + (wall_s - self.origin_s) * self.time_scale

    def _on_engine_clock(
        self, snapshots: dict[tuple[str, str], Snapshot], read_at: float
    ) -> dict[tuple[str, str], Snapshot]:
        """Each snapshot stamped with the engine's read time, its sample age and rate window in
        engine seconds (a prefill/decode service's role snapshots too)."""
        if self.time_scale == 1.0:
            return snapshots

        def engine_s(wall: float | None) -> float | None:
            return None if wall is None else wall * self.time_scale

        def stamped(s: Snapshot) -> Snapshot:
            roles = {role: stamped(r) for role, r in s.roles.items()}
            return s.model_copy(
                update={
                    "at": read_at,
                    "newest_sample_age_s": engine_s(s.newest_sample_age_s),
                    "rate_window_s": engine_s(s.rate_window_s),
                    "roles": roles,
                }
            )

        return {k: stamped(s) for k, s in snapshots.items()}

    def view(
        self,
        key: tuple[str, str],
        demand: DemandQuery | None = None,
        dispersion: bool = False,
    ) -> MetricsView | None:
        """The metrics of InferenceService ``key`` (namespace, metadata.name), found by the
        label its pods carry (``render/labels.py``: the name, or the derived value when the
        name is not a valid label value), which the PodMonitor copies into the series.
        ``demand``: what the service reads in front of its engines, read from the next cycle
        on (None: nothing; forgets it). ``dispersion``: the service is sized for its arrivals'
        dispersion, read from the next cycle on (False: forgets it)."""
        if self.source is None:
            return None
        with self._wanted_lock:
            if demand is None and not dispersion:
                self.wanted.pop(key, None)
            else:
                self.wanted[key] = (demand, dispersion, time.time())
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
            now_s=self.engine_time(time.time()),
            interval_s=self.interval_s,
            time_scale=self.time_scale,
            read_at_s=self.read_at_s,
            stale_after_s=self.stale_after_s,
            running_by_pod=self.running_by_pod.get(series_key),
            demand=self.demands.get(key) if demand is not None else None,
        )


def demand_query(body: dict[str, Any]) -> DemandQuery | None:
    """What the service reads in front of its engines, from its manifest as stored (the
    InferencePool's name defaults to the service's): None when it reads nothing."""
    spec = body.get("spec")
    if not isinstance(spec, dict):
        return None
    gateway, scaling = spec.get("gateway"), spec.get("scaling")
    ref = gateway.get("inferencePool") if isinstance(gateway, dict) else None
    pool = None
    if isinstance(ref, dict):
        pool = str(ref.get("name") or (body.get("metadata") or {}).get("name") or "") or None
    activation = scaling.get("activation") if isinstance(scaling, dict) else None
    query = activation.get("query") if isinstance(activation, dict) else None
    if pool is None and not query:
        return None
    return DemandQuery(pool=pool, activation=str(query) if query else None)


def dispersion_wanted(body: dict[str, Any]) -> bool:
    """Whether the service, as stored, sizes for its arrivals' dispersion."""
    scaling = (body.get("spec") or {}).get("scaling")
    policy = scaling.get("policy") if isinstance(scaling, dict) else None
    return isinstance(policy, dict) and policy.get("dispersionSizing") is True


@dataclass(frozen=True)
class Seen:
    """What the last reconcile of one object read and rendered."""

    spec_and_status: bytes
    """The InferenceService's generation and status (labels, annotations and Kopf's own
    bookkeeping change nothing a reconcile does): a digest of their canonical JSON (only
    compared, never read; the JSON itself is a few KB per service)."""
    versions: dict[tuple[str, str], str | None]
    """resourceVersion of each owned object by (kind, name), after the reconcile."""
    desired: dict[tuple[str, str], bytes]
    """The rendered objects by (kind, name) as compact JSON (a mix or a P/D service has
    several Deployments): parsed again only when an owned object's new state is judged
    (:meth:`Reconciler.owned_changed`, tens of microseconds), a fifth of what the parsed
    objects would hold for each service between reconciles."""
    observed: Observed | None
    quotas: str = ""
    """The namespace's GPU quota figures (hard and used), as canonical JSON."""


def _quotas(store: WatchStore, namespace: str) -> str:
    """The GPU figures of the namespace's ResourceQuotas (what ``controller/quota.py`` bounds a
    decision by) as canonical JSON; empty when the quotas are not watched."""
    if RESOURCE_QUOTA not in store.kinds:
        return ""
    figures = gpu_quotas(store.select(RESOURCE_QUOTA, namespace, {}))
    return json.dumps([[q.name, q.hard, q.used] for q in figures], sort_keys=True)


def _judged(seen: Seen, kind: str, live: dict[str, Any] | None, name: str) -> bool:
    """Whether the owned object ``kind``/``name`` in state ``live`` (None: deleted) differs from
    what ``seen``'s reconcile rendered, or changes what its status reports."""
    compact = seen.desired.get((kind, name))
    if compact is None:  # not ours to render now (a workload of the other kind)
        return False
    desired: dict[str, Any] = json.loads(compact)
    if live is None:
        return True
    if kind in WORKLOAD_KINDS and observe_workload({**live, "kind": kind}) != seen.observed:
        return True
    want = {k: v for k, v in desired.items() if k not in ("apiVersion", "kind")}
    return bool(differences(want, live) or selector_drift(desired, live))


def _essence(body: dict[str, Any]) -> bytes:
    meta = body.get("metadata") or {}
    canonical = json.dumps(
        [meta.get("generation"), meta.get("deletionTimestamp"), body.get("status")],
        sort_keys=True,
        default=str,
    )
    return hashlib.blake2b(canonical.encode(), digest_size=16).digest()


def _compact(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _canonical(status: Any) -> str:
    return json.dumps(status, sort_keys=True, default=str)


def _version(obj: dict[str, Any] | None) -> str | None:
    return None if obj is None else (obj.get("metadata") or {}).get("resourceVersion")


class Reconciler:
    """Reconcile one object at a time per key, only while leading. With a
    :class:`~tokenscale.kube.cached.CachedKube` every read comes from the watch cache, and a
    wake-up that cannot change anything is skipped: an owned object's event that neither
    drifts from the rendered object nor changes what the status reports, and a periodic tick
    without a metrics source (plan-only: nothing new to decide) when the spec, the status and
    every owned object are as the last reconcile left them, and, when the spec reads an input
    the operator does not watch (:func:`unwatched_input`), the last reconcile is younger than
    ``unwatched_resync_s``."""

    def __init__(
        self,
        kube: Kube,
        metrics: FleetMetrics,
        telemetry: Telemetry,
        may_act: Callable[[], bool] = lambda: True,
        unwatched_resync_s: float = UNWATCHED_RESYNC_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kube, self.metrics, self.telemetry, self.may_act = kube, metrics, telemetry, may_act
        self.unwatched_resync_s, self.clock = unwatched_resync_s, clock
        self._reconciled_at: dict[tuple[str, str], float] = {}
        """When each object's last reconcile finished (``clock``)."""
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._guard = threading.Lock()
        self._last_error: dict[tuple[str, str], str] = {}
        self._seen: dict[tuple[str, str], Seen] = {}
        self._held: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
        """A status a reconcile held back (nothing a reader acts on changed), with the stored
        status (canonical JSON) it is newer than: the next reconcile starts from it while the
        API server still holds that one."""
        self._in_flight = 0
        self._deferred: dict[tuple[str, str], set[tuple[str, str]]] = {}
        """Owned objects (kind, name) whose events arrived while their InferenceService's
        reconcile held its lock: judged by that reconcile's thread before it releases the
        lock (:meth:`defer`), not by a worker thread each, blocked on the lock meanwhile."""
        self._reading: dict[tuple[str, str], str] = {}
        """The resourceVersion of the InferenceService each running reconcile read: an event
        for that same version finds its work already under way (:meth:`covered`)."""

    @property
    def store(self) -> WatchStore | None:
        return self.kube.store if isinstance(self.kube, CachedKube) else None

    @property
    def in_flight(self) -> int:
        """Reconciles running now (past the leadership check, possibly writing)."""
        return self._in_flight

    def _seen_now(
        self,
        key: tuple[str, str],
        outcome_desired: dict[tuple[str, str], dict[str, Any]],
        observed: Observed | None,
        read: dict[str, Any],
    ) -> Seen | None:
        """What this reconcile knew: the InferenceService as it wrote it (else as it read
        it), never a later write of someone else's that the cache may already hold."""
        store = self.store
        if store is None or not isinstance(self.kube, CachedKube):
            return None
        body = self.kube.written.pop(key, None) or read
        desired = {which: _compact(obj) for which, obj in outcome_desired.items()}
        seen = Seen(_essence(body), {}, desired, observed, _quotas(store, key[0]))
        versions: dict[tuple[str, str], str | None] = {}
        for kind, name in outcome_desired:
            # a version the cache holds that already differs from what was rendered (someone
            # else's write whose event came during this reconcile, or in a watch's listing,
            # which wakes nothing) is not recorded: the next tick judges it
            live = store.get(kind, key[0], name)
            drifted = live is not None and _judged(seen, kind, live, name)
            versions[(kind, name)] = None if drifted else _version(live)
        return replace(seen, versions=versions)

    def unchanged(self, key: tuple[str, str]) -> bool:
        """Nothing this object's last reconcile read has changed (plan-only ticks)."""
        seen, store = self._seen.get(key), self.store
        if seen is None or store is None or self.metrics.source is not None:
            return False
        body = store.get(INFERENCE_SERVICE, *key)
        if body is None or _essence(body) != seen.spec_and_status:
            return False
        if _quotas(store, key[0]) != seen.quotas:
            return False  # a GPU quota's limit or use moved: the bound may have
        if unwatched_input(body.get("spec") or {}) is not None:
            at = self._reconciled_at.get(key)
            if at is None or self.clock() - at >= self.unwatched_resync_s:
                return False  # bounded staleness of what no watch reports
        rendered = {kind for kind, _ in seen.desired}
        for kind in WORKLOAD_KINDS:  # a workload of the other kind left to remove
            if kind not in rendered and store.get(kind, *key) is not None:
                return False
        for kind, name in seen.desired:
            live = store.get(kind, key[0], name)
            changed = _version(live) != seen.versions.get((kind, name))
            if changed and self.owned_changed(key, kind, live, name):
                return False
        return True

    def owned_changed(
        self, key: tuple[str, str], kind: str, live: dict[str, Any] | None, name: str
    ) -> bool:
        """Whether the owned object ``kind``/``name``'s new state (None: deleted) needs a
        reconcile: it drifted from what was rendered, or it changes what the status reports."""
        seen = self._seen.get(key)
        return True if seen is None else _judged(seen, kind, live, name)

    def defer(self, key: tuple[str, str], owned: tuple[str, str]) -> bool:
        """Whether an owned object's event was left to the reconcile of ``key`` running now:
        it judges the event against the cache once it has written (its own applies cause
        most such events), on its own thread, before it releases the object's lock. Without
        this each event took a worker thread that waited on the lock meanwhile: a third of
        the workers' time in a create wave, reconciles that could not start."""
        if self.store is None:
            return False
        with self._guard:
            lock = self._locks.get(key)
            if lock is None or not lock.locked():
                return False
            self._deferred.setdefault(key, set()).add(owned)
            return True

    def may_need(self, key: tuple[str, str], owned: tuple[str, str]) -> bool:
        """Without waiting: whether an owned object's event may need a reconcile (False only
        when nothing is reconciling this object and the cached object changes nothing)."""
        store = self.store
        lock = self._locks.get(key)
        if store is None or key not in self._seen or (lock is not None and lock.locked()):
            return True
        return self.owned_changed(key, owned[0], store.get(owned[0], key[0], owned[1]), owned[1])

    def covered(self, key: tuple[str, str], version: str | None) -> bool:
        """Whether the reconcile running for ``key`` now read ``version`` of it."""
        with self._guard:
            return version is not None and self._reading.get(key) == version

    def __call__(
        self, body: Any, trigger: str = "event", owned: tuple[str, str] | None = None
    ) -> None:
        """The handler, the loop and a Deployment event may fire together; the later one
        sees what the earlier one wrote. ``owned`` (kind, name): woken by that owned object's
        event; judged under the lock, against the cache as it is then, so an event that
        arrives while this object's reconcile is still writing is judged after it."""
        key = (body["metadata"]["namespace"], body["metadata"]["name"])
        store = self.store
        if store is not None and not store.wait_primed(PRIME_WAIT_S):
            raise kopf.TemporaryError("the watch cache is not primed yet", delay=5)
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        if not lock.acquire(blocking=False):
            # an object being reconciled now needs no tick, nor an event for the version that
            # reconcile read (a tick that reached a new service before its create handler):
            # the worker would only wait out that reconcile to find nothing to do
            if trigger == "tick" or (owned is None and self.covered(key, _version(body))):
                self.telemetry.skipped.labels(trigger).inc()
                return
            lock.acquire()
        try:
            self._locked(key, trigger, owned)
        finally:
            self._release(key, lock)

    def _release(self, key: tuple[str, str], lock: threading.Lock) -> None:
        """Judge the owned-object events deferred to this reconcile (:meth:`defer`), each as
        its own wake-up under the lock, then release it. Checked and released under the
        guard :meth:`defer` takes, so no event is deferred to a reconcile already gone. A
        failed wake-up here is logged, not raised: the object's next tick or event retries."""
        while True:
            with self._guard:
                deferred = self._deferred.pop(key, None)
                if not deferred:
                    lock.release()
                    return
            for owned in sorted(deferred):
                try:
                    self._locked(key, "owned", owned)
                except Exception as exc:  # see the docstring
                    log.warning("%s/%s: reconcile for %s %s failed: %s", *key, *owned, exc)

    def _locked(
        self,
        key: tuple[str, str],
        trigger: str,
        owned: tuple[str, str] | None,
    ) -> None:
        """One wake-up, under the object's lock."""
        store = self.store
        if not self.may_act():  # checked under the lock: a lost lease stops queued work
            log.info("%s/%s: not the leader; skipping", *key)
            return
        if trigger == "tick" and self.unchanged(key):
            self.telemetry.skipped.labels(trigger).inc()
            return
        if owned is not None and store is not None:
            live = store.get(owned[0], key[0], owned[1])
            if not self.owned_changed(key, owned[0], live, owned[1]):
                self.telemetry.skipped.labels(trigger).inc()
                return
        with self._guard:
            self._in_flight += 1
        try:
            current = self.kube.read_inference_service(*key)
            if current is None and store is not None:  # not (yet) cached: ask the server
                current = Kube.read_inference_service(self.kube, *key)
            if current is None or (current.get("metadata") or {}).get("deletionTimestamp"):
                self._locks.pop(key, None)
                self._seen.pop(key, None)
                self._reconciled_at.pop(key, None)
                self._held.pop(key, None)
                return
            self.telemetry.reconciles.labels(trigger).inc()
            version = _version(current)
            with self._guard:
                if version is not None:
                    self._reading[key] = version
            self._reconcile(key, current, trigger)
        finally:
            with self._guard:
                self._in_flight -= 1
                self._reading.pop(key, None)

    def _reconcile(self, key: tuple[str, str], body: dict[str, Any], trigger: str) -> None:
        started = time.perf_counter()
        if isinstance(self.kube, CachedKube):
            self.kube.written.pop(key, None)
        view = self.metrics.view(key, demand_query(body), dispersion_wanted(body))
        stored = _canonical(body.get("status"))
        kept = self._held.pop(key, None)
        held = kept[1] if kept is not None and kept[0] == stored else None
        # reads of owned objects are for this version of the object: a name the cache knows
        # nobody held when it was written needs no GET (kube/store.py::WatchStore.free)
        version = (body.get("metadata") or {}).get("resourceVersion")
        reading = (
            self.kube.owner(version)
            if isinstance(self.kube, CachedKube)
            else contextlib.nullcontext()
        )
        try:
            with reading:
                outcome = reconcile(
                    self.kube, body, now_stamp(), emitter(self.kube, body), view, held=held
                )
        except ApiException as exc:
            if kept is not None:
                self._held[key] = kept
            self._seen.pop(key, None)
            message = f"{exc.status} {exc.reason}: {exc.body}"
            if self._last_error.get(key) != message:  # one event per distinct error
                emitter(self.kube, body)("Warning", "ApplyFailed", message)
                self._last_error[key] = message
            raise kopf.TemporaryError(f"API error {exc.status}", delay=10) from exc
        self._last_error.pop(key, None)
        self._reconciled_at[key] = self.clock()
        if outcome.held_status is not None:
            self._held[key] = (stored, outcome.held_status)
        self.telemetry.status_writes.labels(
            "written" if outcome.status_written else "held" if outcome.held_status else "same"
        ).inc()
        seen = self._seen_now(key, outcome.desired, outcome.observed, body)
        if seen is not None:
            self._seen[key] = seen
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
        log.debug("reconciled %s/%s (%s) in %.1f ms", *key, trigger, elapsed * 1e3)
        if outcome.applied:
            log.info("%s/%s: applied %s", *key, ", ".join(outcome.applied))


async def resync_forever(
    settings: Settings, kube: Kube, metrics: FleetMetrics, run: Reconciler
) -> None:
    """Every interval: one fleet-wide metrics read, then every object's tick (its keys from
    the watch cache, else one LIST); a plan-only tick that would change nothing is skipped.
    It never dies: an unexpected error is logged and the next cycle runs. Idle unless
    leading."""
    bound = asyncio.Semaphore(RESYNC_CONCURRENCY)

    async def one(item: dict[str, Any]) -> None:
        async with bound:
            try:
                await asyncio.to_thread(run, item, "tick")
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
        store = run.store
        if store is not None:  # the watch cache: no LIST per cycle
            await asyncio.to_thread(store.wait_primed)
            items = [
                {"metadata": {"namespace": ns, "name": name}}
                for ns, name in store.keys(INFERENCE_SERVICE)
            ]
        else:
            try:
                items = await asyncio.to_thread(
                    kube.list_inference_services,
                    None if settings.clusterwide else list(settings.namespaces),
                )
            except ApiException as exc:
                log.warning("resync: cannot list InferenceServices: %s %s", exc.status, exc.reason)
                return
        await asyncio.gather(*(one(item) for item in items))

    loop = asyncio.get_running_loop()
    period = settings.interval_seconds
    due = loop.time()
    while True:
        try:
            with run.telemetry.evaluation_seconds.time():
                await cycle()
        except Exception:
            log.exception("resync cycle failed; retrying next interval")
        due = next_due(due, loop.time(), period)
        await asyncio.sleep(max(0.0, due - loop.time()))


def next_due(due: float, now: float, period: float) -> float:
    """The next cycle's start: one period after the last one was due, so that reads are
    ``period`` apart however long a cycle takes (a cycle longer than a period skips the
    starts it overran instead of bunching them)."""
    due += period
    if due < now:
        due += math.ceil((now - due) / period) * period
    return due
