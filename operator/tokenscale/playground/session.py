"""One playground run: start the real components, apply the service, replay the load, watch.

Started, in order, each a real component: etcd, kube-apiserver and kube-controller-manager
(:mod:`.cluster`; the binaries are built on the first run and cached), Prometheus
(:mod:`.prometheus`, file-based discovery) and ``tokenscale run`` itself, unchanged, as a child
process pointed at them. Then, in this process's event loop: the pod runner and its twins, the
load generator, and a monitor that samples the fleet once a second (wall) for the view, the
timeline and the summary. The load starts once the replicas the operator first asks for are
Ready (a service deployed before its traffic; the simulator's fleet starts so too), or after
three cold starts with whatever serves by then.

Time: the trace, the cold start and the latencies are modelled seconds; everything runs at
``speed`` × real time. The operator's resync interval and its Prometheus windows are wall
seconds, so they are divided by ``speed`` (with floors that Prometheus' 1 s scrapes need); its
engine runs on a clock ``speed`` times the wall clock (``--time-scale``), so the engine's own
time constants, the service's stabilization windows and the pods' measured lead time are
modelled seconds, as in the simulator.

A prefill/decode service (``PlaygroundService.disaggregated``) runs twins per role behind the
prefill/decode proxy (:mod:`.pd_router`): the load goes to the proxy, which sends each prompt to
a prefill twin and its decode to a decode twin after the modelled KV transfer; the frames and
the result carry each role's counts (``status.roles``) and GPUs count per role.

Stopping (:meth:`Playground.stop`, also on Ctrl-C): twins, operator, Prometheus, then the
controller manager, the API server and etcd, in that order. With ``keep`` the processes stay up
and ``stop.sh`` in the work directory stops them.
"""

import asyncio
import contextlib
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from tokenscale.api.crd import build_crd
from tokenscale.kube.connect import connect
from tokenscale.playground.cluster import BUILD_MINUTES, Cluster, kube_binaries_cached
from tokenscale.playground.engine import ModelClock, TwinDriver
from tokenscale.playground.faults import FAULT_EVENT, inject_fleet_faults
from tokenscale.playground.gateway import GatewayTwin
from tokenscale.playground.lateness import arrival_lateness_s
from tokenscale.playground.load import LoadStats, Outcome, Picker, Router, replay
from tokenscale.playground.pd_router import ROLES, RolesRouter
from tokenscale.playground.processes import Process, free_port
from tokenscale.playground.prometheus import PrometheusServer, scrape_interval_wall_s
from tokenscale.playground.runner import PodRunner, Report
from tokenscale.playground.service import PlaygroundService
from tokenscale.simulation import TimelinePoint, Trace
from tokenscale.simulation.faults import RETRY_DELAY_S, Fault
from tokenscale.simulation.recorder import Outcome as EngineOutcome
from tokenscale.simulation.summary import meets
from tokenscale.simulation.trace import percentile

NAMESPACE = "playground"
GROUP, VERSION, PLURAL = "tokenscale.io", "v1alpha1", "inferenceservices"


@dataclass(frozen=True)
class PlaygroundOptions:
    service: PlaygroundService
    trace: Trace
    workdir: Path
    speed: float = 10.0
    cold_start_s: float = 60.0
    """Modelled seconds from a pod's creation to Ready (image pull, weights, CUDA graphs)."""
    settle_s: float | None = None
    """Modelled seconds to keep watching after the load (None: the scale-down window + 60 s)."""
    keep: bool = False
    interval_s: float = 15.0
    """The operator's resync interval in modelled seconds."""
    faults: tuple[Fault, ...] = ()
    """Fleet faults to apply at their moments (replica loss, cache flush); the trace faults are
    already in ``trace`` (``faulted_trace``)."""
    client_retries: bool = False
    """Clients retry a request whose stream breaks, ``RETRY_DELAY_S`` later."""


@dataclass(frozen=True)
class ScaleEvent:
    t_s: float
    reason: str
    message: str


@dataclass
class Frame:
    """What the view shows at one moment (modelled time)."""

    t_s: float
    phase: str
    desired: int | None = None
    ready: int = 0
    starting: int = 0
    constraints: dict[str, float] = field(default_factory=dict)
    kv_usage: float | None = None
    waiting: float | None = None
    ttft_p99_s: float | None = None
    tpot_p99_s: float | None = None
    decision: str = ""
    sent: int = 0
    done: int = 0
    attainment: float | None = None
    events: list[ScaleEvent] = field(default_factory=list)
    roles: dict[str, "RoleFrame"] = field(default_factory=dict)
    """A prefill/decode service: each role's counts."""


@dataclass(frozen=True)
class RoleFrame:
    """One role of a prefill/decode service at one moment."""

    desired: int | None
    ready: int
    starting: int


@dataclass(frozen=True)
class DecisionPoint:
    """One decision of the operator's engine: the modelled time of the observation it was made
    on (since the load's start; negative before it) and the replicas it asked for."""

    t_s: float
    replicas: int
    reason: str = ""
    memory: dict[str, Any] = field(default_factory=dict)
    """``status.scaling`` as the decision left it (the engine's memory, engine-clock times)."""
    forecast: dict[str, Any] = field(default_factory=dict)
    """``status.decision.forecast``: the outlook the decision saw (expected rate, replicas)."""
    signals: list[dict[str, Any]] = field(default_factory=list)
    """``status.decision.signals``: each signal's value, watermarks and level."""


@dataclass(frozen=True)
class PodTiming:
    """One pod's start, in modelled seconds since the load's start (None: not known): the
    observation of the decision that asked for it, when the Deployment's write arrived, when
    the runner learnt of the pod, when its twin began serving and when Prometheus first
    scraped it."""

    pod: str
    observed_s: float | None
    asked_s: float | None
    noticed_s: float | None
    ready_s: float | None
    first_scrape_s: float | None


@dataclass
class PlaygroundResult:
    service: str
    speed: float
    trace: str
    duration_s: float
    sent: int
    completed: int
    slo_attainment: float
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p99_s: float
    gpu_hours: float
    replicas_max: int
    events: list[ScaleEvent]
    timeline: list[TimelinePoint]
    ttft_slo_s: float | None
    tpot_slo_s: float | None
    ports: list[int]
    pids: list[int]
    gpus_per_replica: int = 1
    load_duration_s: float = 0.0
    """The trace's span (its last arrival): the load, without the settling after it."""
    outcomes: list[Outcome] = field(default_factory=list)
    """Every finished request as its client saw it (the fault reports bin them)."""
    decisions: list[DecisionPoint] = field(default_factory=list)
    """Every engine decision, by its observation's time."""
    pods: list[PodTiming] = field(default_factory=list)
    """Every pod the runner started, in the order it did."""
    role_timeline: list[tuple[float, dict[str, RoleFrame]]] = field(default_factory=list)
    """A prefill/decode service: each role's counts, once a second (modelled time)."""
    role_gpus: dict[str, int] = field(default_factory=dict)
    """A prefill/decode service: GPUs per replica of each role."""
    role_decisions: dict[str, list[DecisionPoint]] = field(default_factory=dict)
    """A prefill/decode service: each role's decisions, as :attr:`decisions` for one pool."""
    engine_slo_attainment: float | None = None
    """The share of requests sent that the twins' engines finished within the SLO by their
    modelled latencies (what the simulator counts, and what the twins' histograms hold),
    beside ``slo_attainment``, the client's wall-clock latencies × speed."""
    arrival_late_s: list[float] | None = None
    """How late the twins received the requests against the trace, modelled seconds, in
    arrival order (``playground/lateness.py``; None: not every request reached a twin)."""


def meets_slo(o: Outcome, ttft_slo: float | None, tpot_slo: float | None) -> bool:
    if not o.ok or o.ttft_s is None:
        return False
    if ttft_slo is not None and o.ttft_s > ttft_slo:
        return False
    return tpot_slo is None or o.tpot_s is None or o.tpot_s <= tpot_slo


class Playground:
    def __init__(self, opts: PlaygroundOptions, note: Callable[[str], None]) -> None:
        self.opts = opts
        self.note = note
        w = opts.workdir
        self.cluster = Cluster(w / "cluster", progress=lambda m: note(f"  build: {m}"))
        self.prometheus = PrometheusServer(
            w / "prometheus", scrape_interval_s=scrape_interval_wall_s(opts.speed)
        )
        self.operator: Process | None = None
        self.runner: PodRunner | None = None
        self.frame = Frame(0.0, "starting")
        self.events: list[ScaleEvent] = []
        self._seen_events: set[str] = set()
        self.ports: list[int] = []
        self.pids: list[int] = []
        self.time_origin = time.time()
        """The wall time at which the operator's engine clock equals the wall clock."""
        self._load_wall: float | None = None
        self._load_mono: float | None = None
        self._pods: list[PodTiming] = []
        self._engine_outcomes: list[EngineOutcome] = []
        self._load_engine_s: float | None = None
        """The twins' engine clock when the replay began."""

    # -- processes --------------------------------------------------------------------------------
    def start_infrastructure(self) -> None:
        opts, note = self.opts, self.note
        opts.workdir.mkdir(parents=True, exist_ok=True)
        crd_file = opts.workdir / "crd.yaml"
        crd_file.write_text(yaml.safe_dump(build_crd(), sort_keys=False))
        self.cluster.crd_files = [crd_file]
        if not kube_binaries_cached():
            note(
                "First run: building kube-apiserver and kube-controller-manager from Debian's "
                f"Kubernetes 1.20 source ({BUILD_MINUTES} minutes on 2 cores; cached for the "
                "next runs)"
            )
        t = time.monotonic()
        self.cluster.start()
        self.pids += self.cluster.pids
        self.ports.append(self.cluster.port)
        note(f"etcd, kube-apiserver, kube-controller-manager up ({time.monotonic() - t:.0f} s)")
        if shutil.which("prometheus") is None:
            note("Prometheus not found: installing Debian's package (apt-get install prometheus)")
        t = time.monotonic()
        self.prometheus.start()
        assert self.prometheus.process is not None
        self.pids.append(self.prometheus.process.pid)
        self.ports.append(self.prometheus.port)
        note(f"Prometheus up at {self.prometheus.url} ({time.monotonic() - t:.0f} s)")
        speed = opts.speed
        gauge_s = max(3, math.ceil(60 / speed))
        rate_s = max(5, math.ceil(120 / speed))
        self.operator = self.cluster.operator(
            "tokenscale-run",
            NAMESPACE,
            max(1.0, opts.interval_s / speed),
            opts.workdir,
            "--prometheus-url",
            self.prometheus.url,
            "--metrics-gauge-window",
            f"{gauge_s}s",
            "--metrics-rate-window",
            f"{rate_s}s",
            "--time-scale",
            f"{speed:g}",
            "--time-origin",
            f"{self.time_origin:.3f}",
        )
        self.pids.append(self.operator.pid)
        note(f"tokenscale run started (log: {self.operator.log_path})")

    def stop(self) -> None:
        """Stop every process this playground started (twins stop with the event loop)."""
        if self.operator is not None:
            self.operator.stop()
            self.operator = None
        self.prometheus.stop()
        self.cluster.stop()

    def write_stop_script(self) -> Path:
        path = self.opts.workdir / "stop.sh"
        procs = [self.operator.pid] if self.operator else []
        if self.prometheus.process is not None:
            procs.append(self.prometheus.process.pid)
        procs += list(reversed(self.cluster.pids))  # the API server before etcd
        lines = [
            "#!/bin/sh",
            "# Stops what `tokenscale playground --keep` left running, in order (the API server",
            "# before etcd), each process group waited for up to 15 s.",
        ]
        for pid in procs:
            lines.append(f"kill -TERM -{pid} 2>/dev/null")
            lines.append(f"i=0; while kill -0 {pid} 2>/dev/null && [ $i -lt 75 ]; do")
            lines.append("  sleep 0.2; i=$((i+1)); done")
        path.write_text("\n".join(lines) + "\n")
        path.chmod(0o755)
        return path

    @property
    def kubeconfig(self) -> Path:
        return self.cluster.workdir / "kubeconfig-admin"

    # -- the loop ------------------------------------------------------------------------------
    async def run(self, on_frame: Callable[[Frame], None] | None = None) -> PlaygroundResult:
        opts = self.opts
        svc = opts.service
        api = connect(str(self.cluster.kubeconfig()))
        core = client.CoreV1Api(api)
        custom = client.CustomObjectsApi(api)
        namespace: Any = {"metadata": {"name": NAMESPACE}}
        await asyncio.to_thread(core.create_namespace, namespace)
        body = svc.applied_manifest(NAMESPACE)
        await asyncio.to_thread(
            custom.create_namespaced_custom_object, GROUP, VERSION, NAMESPACE, PLURAL, body
        )
        self.note(f"InferenceService {NAMESPACE}/{svc.name} applied")
        clock = ModelClock(opts.speed)
        driver = TwinDriver(clock)
        driver.start()
        router = Router()
        roles: RolesRouter | None = None
        if svc.disaggregated:  # the load goes through the prefill/decode proxy
            roles = await RolesRouter(free_port()).start()
            self.ports.append(roles.port)
            self.note(f"prefill/decode router at {roles.url}")
        picker: Picker = router if roles is None else roles
        runner = PodRunner(
            core,
            NAMESPACE,
            svc,
            clock,
            driver,
            router,
            self.prometheus,
            opts.cold_start_s,
            self.note,
            publishing=False,
            engine_origin_s=self.time_origin,
            role_routers=None if roles is None else roles.pools,
        )
        self.runner = runner
        stats = LoadStats()
        samples: list[TimelinePoint] = []
        role_samples: list[tuple[float, dict[str, RoleFrame]]] = []
        gpu_seconds = 0.0
        tasks: list[asyncio.Task[Any]] = [asyncio.get_running_loop().create_task(runner.run())]
        gateway: GatewayTwin | None = None
        try:
            # traffic starts once the replicas the operator asks for serve (a service deployed
            # before its traffic, as the simulator's fleet starts), or a few cold starts on
            # with whatever serves by then
            patience = time.monotonic() + (3 * opts.cold_start_s + 30.0) / opts.speed
            while not runner.ready or (
                runner.ready < (self.frame.desired or 1) and time.monotonic() < patience
            ):
                await asyncio.sleep(0.5)
                frame = await self._observe(custom, core, 0.0, stats)
                if on_frame:
                    on_frame(frame)
            # the fleet's metrics begin with its traffic (the simulator's first scrape is at
            # t = 0): no idle window before the load in the operator's rates and memory
            runner.publish()
            pool = svc.spec.gateway.inference_pool
            if pool is not None:  # the gateway twin: the endpoint picker's queue for the pool
                gateway = await GatewayTwin(
                    router, pool.name or svc.name, svc.identity.model, free_port()
                ).start()
                self.ports.append(gateway.port)
                self.prometheus.add_labelled_target(gateway.target, {"namespace": NAMESPACE})
                self.note(f"gateway twin exporting the endpoint picker's queue at {gateway.target}")
            self.note(f"{runner.ready} replicas Ready: replaying the load")
            self._load_wall = time.time()
            self._load_mono = time.monotonic()
            self._load_engine_s = clock.now()
            load_clock = ModelClock(opts.speed)
            load = asyncio.get_running_loop().create_task(
                replay(
                    opts.trace,
                    picker,
                    opts.speed,
                    svc.identity.model,
                    svc.identity.max_model_len,
                    stats,
                    retry_after_s=RETRY_DELAY_S if opts.client_retries else None,
                )
            )
            tasks.append(load)
            if opts.faults:
                tasks.append(
                    asyncio.get_running_loop().create_task(
                        inject_fleet_faults(opts.faults, runner, load_clock, self._fault_event)
                    )
                )
            window = svc.spec.scaling.policy.scale_down_stabilization_seconds
            if svc.spec.scaling.min_replicas == 0:  # long enough to see it go back to zero:
                # the last requests leave the rate window, then the idle window passes
                window = max(window, svc.spec.scaling.scale_to_zero.idle_seconds + 240)
            settle = opts.settle_s if opts.settle_s is not None else window + 60.0
            settle_until: float | None = None
            last_t, last_sent = 0.0, 0
            self.frame.phase = "load"
            while True:
                await asyncio.sleep(1.0)
                t = load_clock.now()
                frame = await self._observe(custom, core, t, stats)
                dt = max(t - last_t, 1e-9)
                gpu_seconds += runner.gpus() * dt
                if frame.roles:
                    role_samples.append((t, dict(frame.roles)))
                samples.append(
                    TimelinePoint(
                        t_s=t,
                        arrival_rps=(stats.sent - last_sent) / dt,
                        replicas_target=frame.desired or 0,
                        replicas_ready=frame.ready,
                        replicas_starting=frame.starting,
                        waiting=int(frame.waiting or 0),
                        kv_usage_max=frame.kv_usage or 0.0,
                        ttft_p99_s=frame.ttft_p99_s,
                        tpot_p99_s=frame.tpot_p99_s,
                        reason=frame.decision,
                    )
                )
                last_t, last_sent = t, stats.sent
                if load.done() and settle_until is None:
                    load.result()
                    settle_until = t + settle
                    self.frame.phase = "settling"
                    self.note(f"load done; watching {settle:.0f} s more for scale-down")
                if settle_until is not None and t >= settle_until:
                    break
                if on_frame:
                    on_frame(frame)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._pods = self._pod_timings(runner)
            self._engine_outcomes = [
                o for p in [*runner.gone, *runner.pods.values()] for o in p.twin.engine.rec.outcomes
            ]
            await runner.stop()
            if gateway is not None:
                await gateway.stop()
            if roles is not None:
                await roles.stop()
            await driver.stop()
            self.ports += runner.ports_used
        result = self._result(stats, samples, gpu_seconds)
        result.role_timeline = role_samples
        result.role_gpus = dict(svc.role_gpus)
        if svc.disaggregated:  # a decode engine's latencies count from its KV's arrival only
            result.engine_slo_attainment = None
        return result

    def _fault_event(self, t: float, message: str) -> None:
        self.events.append(ScaleEvent(t, FAULT_EVENT, message))
        self.note(f"fault: {message}")

    async def _observe(
        self, custom: client.CustomObjectsApi, core: client.CoreV1Api, t: float, stats: LoadStats
    ) -> Frame:
        svc, frame, runner = self.opts.service, self.frame, self.runner
        assert runner is not None
        frame.t_s = t
        frame.ready, frame.starting = runner.ready, runner.starting
        frame.sent, frame.done = stats.sent, len(stats.outcomes)
        slo = svc.spec.slo
        if stats.outcomes:
            met = sum(
                meets_slo(o, slo.ttft_p99_seconds, slo.tpot_p99_seconds) for o in stats.outcomes
            )
            frame.attainment = met / len(stats.outcomes)
        with contextlib.suppress(client.exceptions.ApiException):
            obj: Any = await asyncio.to_thread(
                custom.get_namespaced_custom_object, GROUP, VERSION, NAMESPACE, PLURAL, svc.name
            )
            status = obj.get("status") or {}
            frame.desired = status.get("replicas")
            plan = status.get("plan") or {}
            frame.constraints = {
                k: float(plan[f"{k}Replicas"])
                for k in ("throughput", "concurrency", "kv")
                if plan.get(f"{k}Replicas") is not None
            }
            live = status.get("live") or {}
            frame.kv_usage = live.get("kvUsage")
            frame.waiting = live.get("waiting")
            frame.ttft_p99_s = live.get("ttftP99Seconds")
            frame.tpot_p99_s = live.get("tpotP99Seconds")
            frame.decision = (status.get("decision") or {}).get("reason", "")
            if svc.disaggregated:
                of = status.get("roles") or {}
                frame.roles = {
                    role: RoleFrame((of.get(role) or {}).get("replicas"), *runner.counts(role))
                    for role in ROLES
                }
                frame.decision = " · ".join(
                    f"{role}: {((of.get(role) or {}).get('decision') or {}).get('reason', '–')}"
                    for role in ROLES
                )
            listed: Any = await asyncio.to_thread(core.list_namespaced_event, NAMESPACE)
            for e in sorted(listed.items, key=lambda e: e.metadata.creation_timestamp):
                if e.involved_object.name != svc.name or e.reason != "Scaled":
                    continue
                if e.metadata.uid in self._seen_events:
                    continue
                self._seen_events.add(e.metadata.uid)
                self.events.append(ScaleEvent(t, e.reason, e.message))
                self.note(f"event: {e.message}")
            frame.events = self.events[-5:]
        return frame

    def _result(
        self, stats: LoadStats, timeline: list[TimelinePoint], gpu_seconds: float
    ) -> PlaygroundResult:
        svc = self.opts.service
        slo = svc.spec.slo
        outs = stats.outcomes
        met = sum(meets_slo(o, slo.ttft_p99_seconds, slo.tpot_p99_seconds) for o in outs)
        ttft = [o.ttft_s for o in outs if o.ttft_s is not None]
        tpot = [o.tpot_s for o in outs if o.tpot_s is not None]

        def pct(values: list[float], q: float) -> float:
            return percentile(values, q) if values else math.nan

        return PlaygroundResult(
            service=svc.name,
            speed=self.opts.speed,
            trace=self.opts.trace.source,
            duration_s=timeline[-1].t_s if timeline else 0.0,
            sent=stats.sent,
            completed=sum(1 for o in outs if o.ok),
            slo_attainment=met / stats.sent if stats.sent else 0.0,
            ttft_p50_s=pct(ttft, 0.5),
            ttft_p99_s=pct(ttft, 0.99),
            tpot_p99_s=pct(tpot, 0.99),
            gpu_hours=gpu_seconds / 3600.0,
            replicas_max=max((p.replicas_ready for p in timeline), default=0),
            events=list(self.events),
            timeline=timeline,
            ttft_slo_s=slo.ttft_p99_seconds,
            tpot_slo_s=slo.tpot_p99_seconds,
            ports=list(self.ports),
            pids=list(self.pids),
            gpus_per_replica=svc.plan.gpus_per_replica,
            load_duration_s=self.opts.trace.duration_s,
            outcomes=list(outs),
            decisions=self._decisions(),
            role_decisions=self._role_decisions(),
            pods=self._pods,
            engine_slo_attainment=(
                sum(meets(o, slo) for o in self._engine_outcomes) / stats.sent
                if stats.sent
                else None
            ),
            arrival_late_s=self._lateness(),
        )

    def _lateness(self) -> list[float] | None:
        """Each request's delay from its trace time to its twin (``playground/lateness.py``)."""
        if self._load_engine_s is None:
            return None
        limit = self.opts.service.identity.max_model_len
        sent = [
            r.arrival_s
            for r in self.opts.trace.requests
            if r.input_tokens + r.output_tokens <= limit
        ]
        got = [o.arrival_s for o in self._engine_outcomes]
        return arrival_lateness_s(got, sent, self._load_engine_s)

    def _pod_timings(self, runner: PodRunner) -> list[PodTiming]:
        """Each pod's start (monotonic wall times) in modelled seconds since the load's start."""
        if self._load_mono is None:
            return []
        origin, speed = self._load_mono, self.opts.speed

        def at(mono: float | None) -> float | None:
            return None if mono is None else (mono - origin) * speed

        pods = sorted([*runner.gone, *runner.pods.values()], key=lambda p: p.noticed)
        return [
            PodTiming(
                p.pod,
                at(p.observed),
                at(None if p.asked is None else p.asked.at_s),
                at(p.noticed),
                at(p.ready_at),
                at(p.twin.first_scraped),
            )
            for p in pods
        ]

    def _decisions(self) -> list[DecisionPoint]:
        """Every decision the pod runner's watch of the InferenceService saw (each status
        write; a once-a-second read of the status would miss some at ×20, where the operator
        decides every wall second), its engine-clock time turned into the load's modelled time
        (the engine's clock runs ``speed`` times the wall clock from ``time_origin``)."""
        if self._load_wall is None:
            return []
        return self._as_points([] if self.runner is None else self.runner.reports)

    def _role_decisions(self) -> dict[str, list[DecisionPoint]]:
        """A prefill/decode service's decisions per role (``status.roles``), as
        :meth:`_decisions`."""
        if self.runner is None:
            return {}
        return {role: self._as_points(r) for role, r in self.runner.role_reports.items()}

    def _as_points(self, decided: list[Report]) -> list[DecisionPoint]:
        """Reports on the engine's clock as decisions on the load's modelled clock."""
        if self._load_wall is None:
            return []
        shift = (self._load_wall - self.time_origin) * self.opts.speed
        return [
            DecisionPoint(
                r.observed_s - self.time_origin - shift,
                r.replicas,
                r.reason,
                r.memory,
                r.forecast,
                r.signals,
            )
            for r in decided
        ]
