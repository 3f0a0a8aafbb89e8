"""The pod runner: the playground's kubelet. No kubelet runs here, so it watches (polls) the pods
the Deployment's ReplicaSet creates and gives each one a twin.

Prometheus' targets are a fixed set of port slots (twice ``maxReplicas``, every one in the
file-based discovery from the runner's start): a pod's twin takes a free slot's port, and its
``/metrics`` answers from Ready (or, for twins Ready before the load, from :meth:`publish`) to
deletion (503 otherwise, so the slot has no series). A new replica's first sample then comes
at the next scrape after Ready, as in the simulator, instead of after Prometheus' discovery and
scrape-manager updates (each throttled to 5 wall seconds: tens of modelled seconds at speed 5
and more). A pod beyond the slots gets a port of its own, added to the targets at Ready.

For every pod of the service: a twin server on its own port (one asyncio server per pod, all in
this process, ticked by one :class:`TwinDriver`); after the modelled cold start (÷ speed) the
pod is marked Ready through the status subresource (phase Running, conditions Ready and
ContainersReady, podIP 127.0.0.1), so the ReplicaSet's and the Deployment's ready counts follow
through the controller manager; the twin joins the router and its metrics answer (the targets
carry the ``namespace`` / ``inferenceservice`` labels). A pod that goes (pods never scheduled
are deleted at once) leaves the router and stops answering scrapes at once; its twin finishes
the requests it holds, as vLLM drains on SIGTERM, then stops.

A prefill/decode service's pods carry their role (``llm-d.ai/role``): a pod's twin models its
role's engine (a decode twin also the KV transfer), joins its role's router, and takes a port
slot of its role, whose target carries the ``role`` label the chart's PodMonitor copies from
that pod label. Each role's Deployment writes and decisions (``status.roles``) are matched on
their own for the cold start's time base.
"""

import asyncio
import contextlib
import logging
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes import client

from tokenscale.api.crd import PLURAL
from tokenscale.api.inference_service import API_GROUP, API_VERSION
from tokenscale.playground.engine import ModelClock, TwinDriver, TwinEngine
from tokenscale.playground.load import Router
from tokenscale.playground.processes import free_port
from tokenscale.playground.prometheus import PrometheusServer
from tokenscale.playground.service import PlaygroundService
from tokenscale.playground.start_clock import (
    Decided,
    Write,
    asking_observation,
    cold_start_begins,
)
from tokenscale.playground.twin import Twin
from tokenscale.playground.watch import ApiWatch
from tokenscale.render.disaggregated import LLMD_ROLE_LABEL
from tokenscale.render.labels import INFERENCE_SERVICE_LABEL
from tokenscale.render.names import label_value

log = logging.getLogger(__name__)
DRAIN_LIMIT_S = 30.0


@dataclass(eq=False)
class PodTwin:
    pod: str
    twin: Twin
    noticed: float
    """When the runner learnt of the pod (``time.monotonic()``, as every time here)."""
    ready: bool = False
    reported: bool = False
    """Whether the pod's Ready status was written (the twin serves from ``ready``)."""
    created: datetime | None = None
    """The pod's ``creationTimestamp`` (whole seconds, as the API server keeps it)."""
    asked: Write | None = None
    """The Deployment's write that asked for it (None: no write was pending, a replacement)."""
    observed: float | None = None
    """The observation of the decision behind ``asked`` (None: not known, or yet)."""
    ready_at: float | None = None
    """When the twin began serving."""
    role: str | None = None
    """The pod's prefill/decode role (None: one pool)."""


@dataclass(frozen=True)
class Report:
    """One decision as the InferenceService's status wrote it."""

    observed_s: float
    """The observation's time on the engine's clock."""
    replicas: int
    reason: str
    memory: dict[str, Any]
    """``status.scaling``: the engine's memory."""
    forecast: dict[str, Any]
    """``status.decision.forecast``: the outlook (expected rate, the replicas it asks)."""
    signals: list[dict[str, Any]] = field(default_factory=list)
    """``status.decision.signals``: each signal's value, watermarks and level."""


def _report(observed_s: float, replicas: int, status: dict[str, Any]) -> Report:
    """One decision from the status that reported it (the InferenceService's, or one role's
    entry in ``status.roles``: both carry ``decision`` and ``scaling``)."""
    decision = status.get("decision") or {}
    return Report(
        observed_s,
        replicas,
        decision.get("reason", ""),
        status.get("scaling") or {},
        decision.get("forecast") or {},
        list(decision.get("signals") or []),
    )


class PodRunner:
    def __init__(
        self,
        core: client.CoreV1Api,
        namespace: str,
        service: PlaygroundService,
        clock: ModelClock,
        driver: TwinDriver,
        router: Router,
        prometheus: PrometheusServer,
        cold_start_s: float,
        note: Callable[[str], None] = lambda _msg: None,
        poll_s: float = 1.0,
        publishing: bool = True,
        engine_origin_s: float | None = None,
        role_routers: dict[str, Router] | None = None,
    ) -> None:
        self.core = core
        self.namespace = namespace
        self.publishing = publishing
        """Whether Ready twins' metrics answer (False: not yet, :meth:`publish`)."""
        self.service = service
        self.clock = clock
        self.driver = driver
        self.router = router
        self.role_routers = role_routers or {}
        """A prefill/decode service: each role's router (its twins join it at Ready)."""
        self.prometheus = prometheus
        self.cold_start_wall_s = cold_start_s / clock.speed
        self.note = note
        self.poll_s = poll_s
        self.pods: dict[str, PodTwin] = {}
        self._draining: set[asyncio.Task[None]] = set()
        self._draining_twins: set[Twin] = set()
        self.ports_used: list[int] = []
        roles: list[str | None] = list(service.roles) if service.disaggregated else [None]
        per_role = 2 * service.spec.scaling.max_replicas
        self._slot_role: dict[int, str | None] = {
            free_port(): role for role in roles for _ in range(per_role)
        }
        self.slots = list(self._slot_role)
        """The ports always in Prometheus' targets (from :meth:`run`'s start), per role."""
        self._free_slots: dict[str | None, list[int]] = {
            role: [p for p, r in self._slot_role.items() if r == role] for role in roles
        }
        self.apps = client.AppsV1Api(core.api_client)
        self.custom = client.CustomObjectsApi(core.api_client)
        self.engine_origin_s = engine_origin_s
        self._wake: asyncio.Event | None = None
        self._noticed: dict[str, float] = {}
        """Pods the watch reported and no list returned yet, by name: when it did."""
        self._noticed_role: dict[str, str | None] = {}
        self._asks: dict[str | None, deque[Write]] = {}
        """Per role: one entry per replica a Deployment's write added that no new pod took
        yet."""
        self._replicas: dict[str, int] = {}
        self._last_write: dict[str | None, float] = {}
        self.writes: list[Write] = []
        """Every change of a Deployment's ``spec.replicas`` seen."""
        self.decided: list[Decided] = []
        """Every decision the InferenceService's status reported, by its observation."""
        self.role_decided: dict[str, list[Decided]] = {}
        """A prefill/decode service: each role's decisions (``status.roles``)."""
        self.role_reports: dict[str, list[Report]] = {}
        """A prefill/decode service: each role's decisions as ``status.roles`` wrote them."""
        self.reports: list[Report] = []
        """The same decisions as the status wrote them."""
        self.gone: list[PodTwin] = []
        """The pods deleted so far, in the order they went."""

    @property
    def ready(self) -> int:
        return sum(1 for p in self.pods.values() if p.ready)

    @property
    def starting(self) -> int:
        return sum(1 for p in self.pods.values() if not p.ready)

    def twins(self) -> list[Twin]:
        return [p.twin for p in self.pods.values() if p.ready]

    def counts(self, role: str) -> tuple[int, int]:
        """(ready, starting) pods of ``role``."""
        pods = [p for p in self.pods.values() if p.role == role]
        ready = sum(1 for p in pods if p.ready)
        return ready, len(pods) - ready

    def gpus(self) -> int:
        """GPUs the pods hold now (ready and starting), each at its role's GPUs per replica."""
        per = self.service.role_gpus
        one = self.service.plan.gpus_per_replica
        return sum(per.get(p.role, one) if p.role else one for p in self.pods.values())

    def _router(self, role: str | None) -> Router:
        return self.role_routers[role] if role is not None else self.router

    async def run(self) -> None:
        for port, role in self._slot_role.items():  # discovered long before any twin answers
            self.prometheus.add_target(
                f"127.0.0.1:{port}", self.namespace, label_value(self.service.name), role=role
            )
        self._wake = asyncio.Event()
        selector = f"{INFERENCE_SERVICE_LABEL}={self.service.name}"
        loop = asyncio.get_running_loop()
        watches = [
            ApiWatch(
                self.core.list_namespaced_pod,
                self._pod_event,
                self.namespace,
                label_selector=selector,
            ),
            ApiWatch(
                self.apps.list_namespaced_deployment,
                self._deployment_event,
                self.namespace,
                label_selector=selector,
            ),
        ]
        if self.engine_origin_s is not None:
            watches.append(
                ApiWatch(
                    self.custom.list_namespaced_custom_object,
                    self._service_event,
                    API_GROUP,
                    API_VERSION,
                    self.namespace,
                    PLURAL,
                    field_selector=f"metadata.name={self.service.name}",
                )
            )
        for w in watches:
            w.start(loop)
        try:
            while True:
                self._wake.clear()
                self._serve_due(set(self.pods))  # before the list call: Ready on time
                try:
                    await self.sync()
                except client.exceptions.ApiException as exc:
                    log.warning("pod runner: %s", exc.reason)
                except Exception as exc:  # a kubelet outlives one failed sync (a lost connection)
                    log.exception("pod runner: sync failed")
                    self.note(f"pod runner: sync failed ({type(exc).__name__}: {exc}); retrying")
                due = min(
                    (self.ready_due(p) for p in self.pods.values() if not p.ready),
                    default=math.inf,
                )
                wait = min(self.poll_s, max(0.0, due - time.monotonic()))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), wait)
        finally:
            for w in watches:
                w.stop()

    def ready_due(self, pt: PodTwin) -> float:
        """When the pod's twin is Ready: a cold start after its start (:mod:`.start_clock`)."""
        if pt.observed is None and pt.asked is not None:
            decided = self.decided if pt.role is None else self.role_decided.get(pt.role, [])
            pt.observed = asking_observation(decided, pt.asked)
        return cold_start_begins(pt.noticed, pt.observed, self.clock.speed) + self.cold_start_wall_s

    def _wakeup(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _pod_event(self, kind: str, pod: Any, at: float) -> None:
        if kind == "ADDED":
            self._noticed.setdefault(pod.metadata.name, at)
            self._noticed_role[pod.metadata.name] = _role_of(pod)
        elif kind == "DELETED":
            self._noticed.pop(pod.metadata.name, None)
        self._wakeup()

    def _deployment_event(self, kind: str, deployment: Any, at: float) -> None:
        name = deployment.metadata.name
        if kind == "DELETED":
            self._replicas.pop(name, None)
            return
        replicas = int(deployment.spec.replicas or 0)
        before = self._replicas.get(name, 0)
        self._replicas[name] = replicas
        if replicas == before:
            return
        role = _role_of(deployment)
        write = Write(at, replicas, self._last_write.get(role))
        self._last_write[role] = at
        self.writes.append(write)
        # the pods this count asks for beyond those the runner has or has heard of (none when
        # the watch opens on a Deployment whose pods exist already); fewer withdraw the newest
        have = sum(1 for p in self.pods.values() if p.role == role) + sum(
            1 for n in self._noticed if n not in self.pods and self._noticed_role.get(n) == role
        )
        wanted = max(0, replicas - have)
        asks = self._asks.setdefault(role, deque())
        while len(asks) > wanted:
            asks.pop()
        asks.extend([write] * (wanted - len(asks)))

    def _service_event(self, kind: str, body: Any, at: float) -> None:
        status = body.get("status") or {}
        if kind != "DELETED":
            self._role_event(status)
        observed = (status.get("scaling") or {}).get("observedAtSeconds")
        replicas = status.get("replicas")
        if kind == "DELETED" or observed is None or replicas is None:
            return
        if self.reports and self.reports[-1].observed_s >= float(observed) - 1e-6:
            return  # a status write without a new decision
        self.reports.append(_report(float(observed), int(replicas), status))
        self.decided.append(Decided(self._wall(float(observed)), int(replicas)))
        self._wakeup()

    def _role_event(self, status: dict[str, Any]) -> None:
        """Each role's new decision in ``status.roles`` (its own memory's observation)."""
        for role, entry in (status.get("roles") or {}).items():
            if not isinstance(entry, dict) or role not in self.role_routers:
                continue
            observed = (entry.get("scaling") or {}).get("observedAtSeconds")
            replicas = entry.get("replicas")
            if observed is None or replicas is None:
                continue
            seen = self.role_decided.setdefault(role, [])
            wall = self._wall(float(observed))
            if seen and seen[-1].observed_s >= wall - 1e-6:
                continue
            seen.append(Decided(wall, int(replicas)))
            self.role_reports.setdefault(role, []).append(
                _report(float(observed), int(replicas), entry)
            )
            self._wakeup()

    def _wall(self, engine_s: float) -> float:
        """An engine-clock time (the operator's ``--time-scale`` clock) on ``time.monotonic()``."""
        assert self.engine_origin_s is not None
        origin = self.engine_origin_s
        return origin + (engine_s - origin) / self.clock.speed - (time.time() - time.monotonic())

    async def sync(self) -> None:
        selector = f"{INFERENCE_SERVICE_LABEL}={self.service.name}"
        listed: Any = await asyncio.to_thread(
            self.core.list_namespaced_pod, self.namespace, label_selector=selector
        )
        live: set[str] = {
            p.metadata.name for p in listed.items if p.metadata.deletion_timestamp is None
        }
        created = {p.metadata.name: p.metadata.creation_timestamp for p in listed.items}
        roles = {p.metadata.name: _role_of(p) for p in listed.items}
        for name in sorted(live - self.pods.keys(), key=lambda n: self._noticed.get(n, math.inf)):
            noticed = self._noticed.pop(name, time.monotonic())
            self._noticed_role.pop(name, None)
            role = roles.get(name)
            await self._start(name, noticed, role)
            pt = self.pods[name]
            pt.created = created.get(name)
            asks = self._asks.get(role)
            pt.asked = asks.popleft() if asks else None
        self._serve_due(live)
        for name in sorted(self.pods.keys() - live):
            self._gone(self.pods.pop(name))
        for pt in [p for p in self.pods.values() if p.ready and not p.reported]:
            await self._report_ready(pt)

    async def _start(self, pod: str, noticed: float, role: str | None = None) -> None:
        role = role if role in self.role_routers else None
        cfg = self.service.roles[role] if role is not None else self.service.engine
        engine = TwinEngine(cfg, self.clock, self.driver.kick)
        transfer = self.service.transfer_s if role == "decode" else None
        free = self._free_slots.get(role, [])
        port = free.pop(0) if free else free_port()
        twin = Twin(engine, self.service.identity, port, transfer)
        twin.exposed = False  # not scraped while the pod starts
        try:
            await twin.start()
        except OSError:  # the port was taken meanwhile: the slot goes, a port of its own
            if port in self.slots:  # (a target from Ready, as beyond the slots)
                self.slots.remove(port)
                self._slot_role.pop(port, None)
                self.prometheus.remove_target(f"127.0.0.1:{port}")
            log.warning("pod runner: port %d taken; %s gets another", port, pod)
            port = free_port()
            twin = Twin(engine, self.service.identity, port, transfer)
            twin.exposed = False
            await twin.start()
        self.ports_used.append(port)
        self.driver.engines.add(engine)
        self.pods[pod] = PodTwin(pod, twin, noticed, role=role)
        self.note(f"pod {pod}: twin on :{port}, starting")

    def _serve_due(self, live: set[str]) -> None:
        now = time.monotonic()
        for pt in list(self.pods.values()):
            if pt.pod in live and not pt.ready and now >= self.ready_due(pt):
                self._serve(pt)

    def _serve(self, pt: PodTwin) -> None:
        """The cold start is over: the twin takes traffic and its metrics answer at once (the
        pod's Ready status follows, :meth:`_report_ready`)."""
        pt.ready = True
        pt.ready_at = time.monotonic()
        pt.twin.exposed = self.publishing
        self._router(pt.role).add(pt.twin)
        if self.publishing and pt.twin.port not in self.slots:
            self._add_target(pt)
        self.note(f"pod {pt.pod}: Ready")

    async def _report_ready(self, pt: PodTwin) -> None:
        # Ready's transition time is the creation time plus the modelled cold start, so the
        # lead time the operator reads from the pod (Ready − creation, whole seconds) is the
        # cold start, not a wall interval quantised to a second (``speed`` modelled seconds)
        at = datetime.now(UTC)
        if pt.created is not None:
            at = pt.created + timedelta(seconds=round(self.cold_start_wall_s))
        stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
        conditions = [
            {"type": t, "status": "True", "lastTransitionTime": stamp}
            for t in ("Initialized", "PodScheduled", "ContainersReady", "Ready")
        ]
        body: dict[str, Any] = {
            "status": {
                "phase": "Running",
                "podIP": "127.0.0.1",
                "podIPs": [{"ip": "127.0.0.1"}],
                "hostIP": "127.0.0.1",
                "startTime": stamp,
                "conditions": conditions,
            }
        }
        try:
            await asyncio.to_thread(
                self.core.patch_namespaced_pod_status, pt.pod, self.namespace, body
            )
        except client.exceptions.ApiException as exc:
            if exc.status == 404:
                return  # gone meanwhile: the next sync drops it
            raise
        pt.reported = True

    def publish(self) -> None:
        """From now on every Ready twin's ``/metrics`` answers (those Ready already at once):
        the fleet's metrics begin here."""
        self.publishing = True
        for pt in self.pods.values():
            if pt.ready:
                pt.twin.exposed = True
                if pt.twin.port not in self.slots:
                    self._add_target(pt)

    def _add_target(self, pt: PodTwin) -> None:
        self.prometheus.add_target(
            pt.twin.target, self.namespace, label_value(self.service.name), role=pt.role
        )

    def _gone(self, pt: PodTwin) -> None:
        self.gone.append(pt)
        self._router(pt.role).remove(pt.twin)
        pt.twin.exposed = False
        if pt.twin.port not in self.slots:
            self.prometheus.remove_target(pt.twin.target)
        self.note(f"pod {pt.pod}: deleted, twin draining")
        self._draining_twins.add(pt.twin)
        task = asyncio.get_running_loop().create_task(self._drain(pt.twin))
        self._draining.add(task)
        task.add_done_callback(self._draining.discard)

    async def _drain(self, twin: Twin) -> None:
        deadline = time.monotonic() + DRAIN_LIMIT_S
        while twin.in_flight and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        await twin.stop()
        self.driver.engines.discard(twin.engine)
        self._draining_twins.discard(twin)
        if twin.port in self._slot_role:
            self._free_slots[self._slot_role[twin.port]].append(twin.port)

    async def kill_busiest(self) -> str:
        """Replica loss: the ready pod holding the most requests loses its process (the twin is
        killed, its open streams cut; their clients retry) and the pod is deleted at once, so
        the ReplicaSet creates a replacement that serves after the cold start. Says what
        happened."""
        ready = [p for p in self.pods.values() if p.ready]
        if not ready:
            return "no ready replica to kill"
        victim = max(ready, key=lambda p: p.twin.in_flight)
        del self.pods[victim.pod]
        self.gone.append(victim)
        self._router(victim.role).remove(victim.twin)
        self.prometheus.remove_target(victim.twin.target)
        cut = await victim.twin.kill()
        self.driver.engines.discard(victim.twin.engine)
        with contextlib.suppress(client.exceptions.ApiException):
            await asyncio.to_thread(
                self.core.delete_namespaced_pod,
                victim.pod,
                self.namespace,
                grace_period_seconds=0,
            )
        return f"pod {victim.pod} died with {cut} requests (its clients retry)"

    def flush_prefix_caches(self) -> str:
        """Every engine's prefix cache emptied (the twins' engines are the simulator's)."""
        engines = [p.twin.engine for p in self.pods.values()]
        for engine in engines:
            engine.replica.flush_prefix_cache()
        return f"prefix caches flushed on {len(engines)} replicas"

    async def stop(self) -> None:
        """Stop every twin now (in-flight requests are cut)."""
        for task in list(self._draining):
            task.cancel()
        if self._draining:
            await asyncio.gather(*self._draining, return_exceptions=True)
        for twin in list(self._draining_twins):
            await twin.stop()
            self.driver.engines.discard(twin.engine)
        self._draining_twins.clear()
        for pt in self.pods.values():
            self._router(pt.role).remove(pt.twin)
            self.prometheus.remove_target(pt.twin.target)
            await pt.twin.stop()
            self.driver.engines.discard(pt.twin.engine)
        self.pods.clear()


def _role_of(obj: Any) -> str | None:
    """A pod's or Deployment's ``llm-d.ai/role`` label (None: none, one pool)."""
    labels = obj.metadata.labels or {}
    role = labels.get(LLMD_ROLE_LABEL)
    return str(role) if role else None
