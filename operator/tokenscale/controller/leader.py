"""Run the operator: alone, or as one candidate of a leader election on a Lease.

Only the leader runs Kopf (its handlers, the resync loop and the metrics reads inside it).
A candidate whose namespaces overlap another live shard's Lease (controller/shards.py)
raises :class:`ShardConflictError` before competing, and again right after acquiring.
Followers keep retrying the Lease, answer their health probe and do nothing else. A leader
that cannot renew within the renew deadline stops at once: the reconciler's gate refuses new
work from that moment and the process exits (the Kubernetes convention: the pod restarts as a
follower), before the Lease can expire for anybody else. A clean stop (SIGTERM) closes the
gate, lets the reconciles already running finish, hands the Lease back (a follower takes over
at once instead of after a lease duration), then lets Kopf stop.
"""

import asyncio
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from urllib.parse import urlparse

import kopf
from aiohttp import web
from kubernetes.client.exceptions import ApiException

from tokenscale.controller.arenas import limit_arenas
from tokenscale.controller.handlers import build_registry
from tokenscale.controller.leadership import (
    ElectionConfig,
    LeaseRecord,
    Memory,
    Observed,
    leading,
    lost_write,
    release,
    step,
    wrote,
)
from tokenscale.controller.resync import Reconciler, fleet_metrics
from tokenscale.controller.settings import Settings
from tokenscale.controller.shards import (
    NAMESPACES_ANNOTATION,
    ShardConflictError,
    claim,
    conflicts,
    describe,
)
from tokenscale.controller.telemetry import Telemetry
from tokenscale.kube.cached import KINDS, POD, CachedKube
from tokenscale.kube.client import Kube
from tokenscale.kube.connect import connect
from tokenscale.kube.lease import LeaseStore
from tokenscale.kube.store import WatchStore
from tokenscale.kube.throttle import install

log = logging.getLogger(__name__)


def micro_stamp() -> str:
    """A Kubernetes MicroTime: RFC 3339 with microseconds."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Elector:
    """The state machine of controller/leadership.py driven against a real Lease."""

    def __init__(
        self,
        config: ElectionConfig,
        store: LeaseStore,
        clock: Callable[[], float] = time.monotonic,
        stamp: Callable[[], str] = micro_stamp,
    ) -> None:
        self.config, self.store, self.clock, self.stamp = config, store, clock, stamp
        self.memory = Memory()
        self.transitions_seen: int | None = None

    def attempt(self) -> bool:
        """Read the Lease, take one step, write if the step says so; True while leading."""
        now = self.clock()
        try:
            spec, version = self.store.read()
            record = LeaseRecord.from_spec(spec) if spec is not None else None
            s = step(self.config, now, self.stamp(), Observed(record, version), self.memory)
            self.memory = s.memory
            if s.write is not None:
                spec_out = s.write.to_spec()
                ok = (
                    self.store.create(spec_out)
                    if s.action == "create" or version is None
                    else self.store.replace(spec_out, version)
                )
                self.memory = wrote(self.memory, now, s.write) if ok else lost_write(self.memory)
                if ok and s.action != "renew":
                    log.info("acquired the Lease %s (%s)", self.config.name, s.why)
        except Exception as exc:  # the API is down or slow: our lead runs out on its own
            log.warning("leader election: cannot reach the Lease: %s", exc)
        return self.leading()

    def leading(self) -> bool:
        return leading(self.config, self.memory, self.clock())

    def release(self) -> None:
        """Hand the Lease back (best effort: it expires on its own otherwise)."""
        try:
            spec, version = self.store.read()
            if spec is None or version is None:
                return
            out = release(LeaseRecord.from_spec(spec), self.config.identity, self.stamp())
            if out is not None and self.store.replace(out.to_spec(), version):
                log.info("released the Lease %s", self.config.name)
        except Exception as exc:
            log.warning("leader election: cannot release the Lease: %s", exc)
        self.memory = Memory()


async def _serve_health(endpoint: str, role: Callable[[], str]) -> web.AppRunner:
    """``/healthz`` for leader and followers alike (200 while the process runs)."""
    url = urlparse(endpoint)

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text=f"ok ({role()})\n")

    app = web.Application()
    app.router.add_get(url.path or "/healthz", healthz)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, url.hostname or "0.0.0.0", url.port or 8080).start()
    return runner


async def run_elected(
    settings: Settings, config: ElectionConfig, kube: Kube, telemetry: Telemetry
) -> None:
    namespaces = None if settings.clusterwide else settings.namespaces
    store = LeaseStore(
        kube, config.namespace, config.name, {NAMESPACES_ANNOTATION: claim(namespaces)}
    )
    elector = Elector(config, store)
    mine = None if namespaces is None else frozenset(namespaces)

    def refuse_overlap() -> None:
        try:
            leases = store.list_all()
        except ApiException as exc:  # e.g. RBAC from before shards: no list on Leases
            log.warning(
                "cannot list the Leases in %s (%s %s): the shard overlap check is skipped",
                config.namespace,
                exc.status,
                exc.reason,
            )
            return
        found = conflicts(mine, config.name, leases, datetime.now(UTC))
        if found:
            raise ShardConflictError(describe(found, config.namespace, config.name))

    await asyncio.to_thread(refuse_overlap)
    health = None
    if settings.liveness_endpoint:
        health = await _serve_health(
            settings.liveness_endpoint, lambda: "leader" if elector.leading() else "follower"
        )
    try:
        log.info(
            "leader election: %s competes for Lease %s/%s",
            config.identity,
            config.namespace,
            config.name,
        )
        while not await asyncio.to_thread(elector.attempt):
            await asyncio.sleep(config.retry_period_s)
        try:  # again, holding the Lease: two shards that started together see each other
            await asyncio.to_thread(refuse_overlap)
        except ShardConflictError:
            await asyncio.to_thread(elector.release)
            raise
        log.info("leader election: %s leads; starting the operator", config.identity)
        stopping = threading.Event()
        run = Reconciler(
            kube,
            fleet_metrics(settings, telemetry),
            telemetry,
            may_act=lambda: elector.leading() and not stopping.is_set(),
            unwatched_resync_s=settings.unwatched_resync_s,
        )
        registry = build_registry(settings, kube, telemetry, run=run)
        stop, ready = asyncio.Event(), asyncio.Event()
        work = asyncio.create_task(
            kopf.operator(
                registry=registry,
                standalone=True,
                clusterwide=settings.clusterwide,
                namespaces=list(settings.namespaces),
                stop_flag=stop,
                ready_flag=ready,
            )
        )
        renewal: asyncio.Task[bool] | None = None

        async def hand_over() -> None:
            """On SIGTERM: refuse new work, let running reconciles finish (bounded), release
            the Lease so a follower takes over now, then let Kopf stop."""
            stopping.set()
            deadline = time.monotonic() + config.renew_deadline_s
            while run.in_flight and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            if renewal is not None:
                await asyncio.wait({renewal})  # no renewal may land after the release
            await asyncio.to_thread(elector.release)
            stop.set()

        handing_over: list[asyncio.Task[None]] = []

        def on_signal() -> None:
            if not handing_over:
                log.info("leader election: stopping; handing the Lease over")
                handing_over.append(asyncio.create_task(hand_over()))

        await asyncio.wait({work, asyncio.create_task(ready.wait())}, return_when="FIRST_COMPLETED")
        if threading.current_thread() is threading.main_thread():  # replaces Kopf's handlers
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, on_signal)
        while not work.done():
            if not stopping.is_set() and (renewal is None or renewal.done()):
                # one attempt at a time, even if it hangs
                renewal = asyncio.create_task(asyncio.to_thread(elector.attempt))
            await asyncio.wait({work}, timeout=config.retry_period_s)
            if not work.done() and not stopping.is_set() and not elector.leading():
                log.error(
                    "leader election: lost the Lease %s (not renewed within %g s); stopping",
                    config.name,
                    config.renew_deadline_s,
                )
                logging.shutdown()
                os._exit(1)
        await work
        if not handing_over:  # Kopf stopped on its own
            await asyncio.to_thread(elector.release)
    finally:
        if health is not None:
            await health.cleanup()


def run_operator(settings: Settings) -> None:
    """Connect once, serve /metrics, then block running the operator until a signal stops it."""
    limit_arenas()  # before the first thread starts
    telemetry = Telemetry()
    if settings.metrics_port:
        telemetry.serve(settings.metrics_port)
    api = connect(settings.kubeconfig)
    install(api, settings.limits(), telemetry.record_request)
    namespaces = None if settings.clusterwide else list(settings.namespaces)
    kinds = (*KINDS, POD) if settings.prometheus_url else KINDS
    kube = CachedKube(api, WatchStore(kinds), namespaces)
    election = settings.election()
    if election is not None:
        asyncio.run(run_elected(settings, election, kube, telemetry))
        return
    kopf.run(
        registry=build_registry(settings, kube, telemetry),
        standalone=True,
        clusterwide=settings.clusterwide,
        namespaces=list(settings.namespaces),
        liveness_endpoint=settings.liveness_endpoint,
    )
