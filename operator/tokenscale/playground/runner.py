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
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes import client

from tokenscale.playground.engine import ModelClock, TwinDriver, TwinEngine
from tokenscale.playground.load import Router
from tokenscale.playground.processes import free_port
from tokenscale.playground.prometheus import PrometheusServer
from tokenscale.playground.service import PlaygroundService
from tokenscale.playground.twin import Twin
from tokenscale.render.labels import INFERENCE_SERVICE_LABEL
from tokenscale.render.names import label_value

log = logging.getLogger(__name__)
DRAIN_LIMIT_S = 30.0


@dataclass(eq=False)
class PodTwin:
    pod: str
    twin: Twin
    started: float
    ready: bool = False
    created: datetime | None = None
    """The pod's ``creationTimestamp`` (whole seconds, as the API server keeps it)."""


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
        poll_s: float = 0.25,
        publishing: bool = True,
    ) -> None:
        self.core = core
        self.namespace = namespace
        self.publishing = publishing
        """Whether Ready twins' metrics answer (False: not yet, :meth:`publish`)."""
        self.service = service
        self.clock = clock
        self.driver = driver
        self.router = router
        self.prometheus = prometheus
        self.cold_start_wall_s = cold_start_s / clock.speed
        self.note = note
        self.poll_s = poll_s
        self.pods: dict[str, PodTwin] = {}
        self._draining: set[asyncio.Task[None]] = set()
        self._draining_twins: set[Twin] = set()
        self.ports_used: list[int] = []
        self.slots = [free_port() for _ in range(2 * service.spec.scaling.max_replicas)]
        """The ports always in Prometheus' targets (from :meth:`run`'s start)."""
        self._free_slots = list(self.slots)

    @property
    def ready(self) -> int:
        return sum(1 for p in self.pods.values() if p.ready)

    @property
    def starting(self) -> int:
        return sum(1 for p in self.pods.values() if not p.ready)

    def twins(self) -> list[Twin]:
        return [p.twin for p in self.pods.values() if p.ready]

    async def run(self) -> None:
        for port in self.slots:  # discovered long before any twin answers on them
            self.prometheus.add_target(
                f"127.0.0.1:{port}", self.namespace, label_value(self.service.name)
            )
        while True:
            try:
                await self.sync()
            except client.exceptions.ApiException as exc:
                log.warning("pod runner: %s", exc.reason)
            await asyncio.sleep(self.poll_s)

    async def sync(self) -> None:
        selector = f"{INFERENCE_SERVICE_LABEL}={self.service.name}"
        listed: Any = await asyncio.to_thread(
            self.core.list_namespaced_pod, self.namespace, label_selector=selector
        )
        live: set[str] = {
            p.metadata.name for p in listed.items if p.metadata.deletion_timestamp is None
        }
        created = {p.metadata.name: p.metadata.creation_timestamp for p in listed.items}
        for name in sorted(live - self.pods.keys()):
            await self._start(name)
            self.pods[name].created = created.get(name)
        now = time.monotonic()
        for pt in list(self.pods.values()):
            if pt.pod in live and not pt.ready and now - pt.started >= self.cold_start_wall_s:
                await self._mark_ready(pt)
        for name in sorted(self.pods.keys() - live):
            self._gone(self.pods.pop(name))

    async def _start(self, pod: str) -> None:
        engine = TwinEngine(self.service.engine, self.clock, self.driver.kick)
        port = self._free_slots.pop(0) if self._free_slots else free_port()
        twin = Twin(engine, self.service.identity, port)
        twin.exposed = False  # not scraped while the pod starts
        await twin.start()
        self.ports_used.append(port)
        self.driver.engines.add(engine)
        self.pods[pod] = PodTwin(pod, twin, time.monotonic())
        self.note(f"pod {pod}: twin on :{port}, starting")

    async def _mark_ready(self, pt: PodTwin) -> None:
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
        pt.ready = True
        pt.twin.exposed = self.publishing
        self.router.add(pt.twin)
        if self.publishing and pt.twin.port not in self.slots:
            self._add_target(pt)
        self.note(f"pod {pt.pod}: Ready")

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
        self.prometheus.add_target(pt.twin.target, self.namespace, label_value(self.service.name))

    def _gone(self, pt: PodTwin) -> None:
        self.router.remove(pt.twin)
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
        if twin.port in self.slots:
            self._free_slots.append(twin.port)

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
        self.router.remove(victim.twin)
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
            self.router.remove(pt.twin)
            self.prometheus.remove_target(pt.twin.target)
            await pt.twin.stop()
            self.driver.engines.discard(pt.twin.engine)
        self.pods.clear()
