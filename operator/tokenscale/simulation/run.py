"""Replay a trace against a simulated fleet under one scaling policy (discrete events).

The one loop (``simulation/loop.py``) on a one-pool fleet: arrivals routed by the gateway,
Prometheus scrapes every ``scrape_interval_s``, policy decisions every ``decision_interval_s``
(the operator's resync interval) from the snapshot Prometheus would answer with. Its
end-of-run rule holds for every policy alike: decisions stop at the trace's end, requests
still in flight are served (up to ``drain_limit_s``) for their latencies, GPU-hours count over
the trace's span only.
"""

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.workload import Workload
from tokenscale.planning import Conditions, Plan, layout_of, plan_at, plan_service, resolve
from tokenscale.planning.pricing import Pricing
from tokenscale.scaling.dispersion import COUNT_WINDOW_S, DISPERSION_RANGE_S
from tokenscale.scaling.snapshot import Snapshot
from tokenscale.simulation.capacity import (
    lead_time_gpu_hours,
    oracle_replicas,
    schedule_gpu_hours,
    sustainable_rps,
)
from tokenscale.simulation.classes import class_results
from tokenscale.simulation.errors import TraceError
from tokenscale.simulation.faults import Fault, make_fleet
from tokenscale.simulation.fleet import Fleet
from tokenscale.simulation.loop import Clock, replay
from tokenscale.simulation.observe import Scrape, snapshot_at, with_demand, with_dispersion
from tokenscale.simulation.policies import (
    HpaPolicy,
    LeadTimeOraclePolicy,
    OraclePolicy,
    Policy,
    PolicyName,
    StaticPolicy,
    TokenscalePolicy,
)
from tokenscale.simulation.recorder import Outcome, Recorder
from tokenscale.simulation.replica import ReplicaConfig, SimRequest, replica_config
from tokenscale.simulation.result import Explanation, SimResult, TimelinePoint
from tokenscale.simulation.summary import meets
from tokenscale.simulation.trace import Trace, TraceRequest, percentile, trace_stats
from tokenscale.simulation.workloads import with_adapters

Progress = Callable[[float], None]
ORACLE_ROUNDS = 8
"""Replay-and-repair rounds of the verified oracle (:func:`verified_oracle`) that the CLI and
the autoscaling suite build."""


class SimOptions(BaseModel):
    model_config = ConfigDict(frozen=True)

    mismatch: float = Field(default=1.0, gt=0, description="Real speed ÷ the planner's")
    cold_start_s: float = Field(
        default=180.0,
        ge=0,
        description="Seconds from a scale-up to a ready replica; for a replica that spans "
        "nodes, the group's (its pods load their weight shares in parallel, the group is "
        "ready with its last pod)",
    )
    scrape_interval_s: float = Field(default=15.0, gt=0)
    decision_interval_s: float = Field(default=15.0, gt=0)
    first_decision_s: float | None = Field(
        default=None,
        gt=0,
        description="When the first decision falls, then one every decision_interval_s (the "
        "operator's resync phase against the trace's start); None: one interval in",
    )
    gauge_window_s: float = Field(default=60.0, gt=0)
    rate_window_s: float = Field(default=120.0, gt=0)
    stale_after_s: float = Field(default=120.0, gt=0)
    drain_limit_s: float = Field(default=1800.0, ge=0)
    queue_target: float = Field(default=2.0, gt=0, description="queue-threshold: waiting/replica")
    kv_target: float = Field(default=0.7, gt=0, le=1, description="kv-threshold: mean KV usage")
    oracle_bin_s: float = Field(default=60.0, gt=0)
    oracle_repair_rounds: int = Field(
        default=0,
        ge=0,
        le=32,
        description="Replay-and-repair rounds that make the oracle meet the target attainment "
        "per bin (verified_oracle; 0: the formula's allocation, as it is, its attainment still "
        "replayed when asked)",
    )
    capacity_requests: int = Field(default=1500, ge=100)
    seed: int = 0
    timeline: bool = True


class SimulationError(ValueError):
    """The spec cannot be simulated (its plan has no replica count: the configuration cannot
    serve at all), with the planner's reasons."""


def _probe_capacity(
    spec: InferenceServiceSpec,
    forecast: Plan,
    trace: Trace,
    replica: ReplicaConfig,
    opts: SimOptions,
) -> tuple[list[tuple[int, int]], float]:
    """The trace's (prompt, answer) pairs that fit the context, and the rate one simulated
    replica sustains within the SLO on them."""
    fits = [
        r for r in trace.requests if r.input_tokens + r.output_tokens <= forecast.max_model_len
    ] or list(trace.requests)
    pairs = [(r.input_tokens, r.output_tokens) for r in fits]
    # a trace with prefix blocks is probed in order with them: its reuse is local in time
    prefixes = [r.prefix_blocks for r in fits] if any(r.prefix_blocks for r in fits) else None
    capacity_rps = sustainable_rps(
        replica,
        spec.slo,
        pairs,
        guess_rps=forecast.rps_per_replica,
        requests=opts.capacity_requests,
        seed=opts.seed,
        prefixes=prefixes,
        in_order=prefixes is not None,
        adapters=[r.adapter for r in fits] if spec.lora is not None else None,
    )
    return pairs, capacity_rps


class Setup:
    """Everything a run needs that does not depend on the policy (shared across policies)."""

    def __init__(self, spec: InferenceServiceSpec, trace: Trace, opts: SimOptions, name: str):
        if not trace.requests:
            raise TraceError("the trace has no requests")
        forecast = plan_service(spec, name)
        if forecast.replicas is None:
            raise SimulationError(
                "the plan cannot serve, nothing to simulate: "
                + "; ".join(forecast.infeasible_reasons)
            )
        self.warnings: list[str] = (
            []
            if forecast.feasible
            else [
                "simulating an infeasible plan as it would be deployed: "
                + "; ".join(forecast.infeasible_reasons)
            ]
        )
        if spec.lora is not None and all(r.adapter < 0 for r in trace.requests):
            trace = with_adapters(trace, spec.lora.shares, opts.seed)
            self.warnings.append(
                "the trace's requests address no adapter: each is given one drawn from "
                f"spec.lora's shares (seed {opts.seed})"
            )
        self.spec = spec
        self.forecast = forecast
        self.trace = trace
        self.opts = opts
        self.stats = trace_stats(trace)
        # the static plan: the trace's workload at its 1-minute peak, at the forecast's layout
        self.peak_plan = plan_at(
            resolve(spec, name),
            Conditions(workload=self._trace_workload()),
            layout_of(forecast),
        )
        self.replica = replica_config(self.spec, forecast, trace.block_tokens, opts.mismatch)
        self.pairs, self.capacity_rps = _probe_capacity(spec, forecast, trace, self.replica, opts)
        self.faults: tuple[Fault, ...] = ()
        """Fleet-level faults injected into every replay (``simulation/drills.py``)."""
        self.cache: dict[tuple[object, ...], SimResult] = {}
        """Results that no cold start changes (oracle, static fleets), shared by copies."""
        self._schedule_oracle()

    def _schedule_oracle(self) -> None:
        """The oracle's schedule from the probed capacity, its GPU-hours, and, with
        ``oracle_repair_rounds``, the replay-and-repair that makes it meet the target."""
        spec, trace, opts, forecast = self.spec, self.trace, self.opts, self.forecast
        bin_s, gpus = opts.oracle_bin_s, forecast.gpus_per_replica
        if self.capacity_rps > 0:
            self.oracle_schedule = oracle_replicas(
                trace, self.capacity_rps, spec.scaling.min_replicas, bin_s
            )
            self.oracle_gpu_hours = schedule_gpu_hours(
                self.oracle_schedule, trace.duration_s, gpus, bin_s
            )
        else:
            self.oracle_schedule = [spec.scaling.max_replicas]
            self.oracle_gpu_hours = math.inf
            self.warnings.append(
                "one simulated replica met the SLO at no rate probed (down to 1/64 of the "
                "planner's per-replica rate): the oracle holds maxReplicas throughout and "
                "ratios to it say nothing; compare with best static instead"
            )
        self.oracle_formula_gpu_hours = self.oracle_gpu_hours
        self.oracle_attainment: float | None = None
        """The oracle's replayed attainment (None until replayed: :meth:`oracle_replayed`)."""
        if opts.oracle_repair_rounds > 0 and self.capacity_rps > 0:
            self.oracle_schedule, self.oracle_attainment = verified_oracle(
                self, opts.oracle_repair_rounds
            )
            self.oracle_gpu_hours = schedule_gpu_hours(
                self.oracle_schedule, trace.duration_s, gpus, bin_s
            )

    @property
    def target(self) -> float:
        """``spec.scaling.targetAttainment``: what the yardsticks are judged against."""
        return self.spec.scaling.target_attainment

    def oracle_replayed(self) -> float:
        """The oracle's attainment, replayed (once: cached with the oracle's replay)."""
        if self.oracle_attainment is None:
            self.oracle_attainment = simulate(self, "oracle").slo_attainment
        return self.oracle_attainment

    def with_options(self, opts: SimOptions) -> "Setup":
        """The same setup under other lifecycle options (cold start, intervals, targets).

        The capacity probe and the oracle depend only on the engine (``mismatch``, ``seed``,
        ``capacity_requests``, ``oracle_bin_s``), which must not change; so do the results of
        the policies with no cold start (oracle, best static, static), which are kept.
        """
        engine = (
            "mismatch",
            "seed",
            "capacity_requests",
            "oracle_bin_s",
            "oracle_repair_rounds",
        )
        if any(getattr(opts, k) != getattr(self.opts, k) for k in engine):
            raise ValueError(f"with_options cannot change {', '.join(engine)}")
        other = object.__new__(Setup)
        other.__dict__.update(self.__dict__)
        other.opts = opts
        return other

    @property
    def lead_time_lookahead_s(self) -> float:
        """How far ahead the lead-time oracle looks: the cold start rounded up to whole
        decision intervals, so the decision that asks for a replica falls one cold start or
        more before the bin it serves (bins start on decision ticks)."""
        step = self.opts.decision_interval_s
        return step * math.ceil(self.opts.cold_start_s / step - 1e-9)

    @property
    def lead_time_oracle_gpu_hours(self) -> float:
        """The lead-time oracle's GPU-hours (``capacity`` module docstring) at this cold start:
        the oracle's per-bin need, each added replica held from one cold start before its bin."""
        if self.capacity_rps <= 0:
            return math.inf
        return lead_time_gpu_hours(
            self.oracle_schedule,
            self.trace.duration_s,
            self.forecast.gpus_per_replica,
            self.opts.oracle_bin_s,
            self.opts.cold_start_s,
        )

    def _trace_workload(self) -> Workload:
        """The trace's workload at its 1-minute peak (the static plan)."""
        s, w = self.stats, self.spec.workload
        return w.model_copy(
            update={
                "rps": w.rps.model_copy(
                    update={"mean": s.mean_rps, "peak": s.peak_rps, "burst_factor": None}
                ),
                "input_tokens": w.input_tokens.model_copy(
                    update={"mean": s.input_mean, "p95": s.input_p95, "p99": s.input_p99}
                ),
                "output_tokens": w.output_tokens.model_copy(
                    update={"mean": s.output_mean, "p95": s.output_p95, "p99": s.output_p99}
                ),
            }
        )

    def policy(self, name: PolicyName) -> Policy:
        sc = self.spec.scaling
        if name == "tokenscale":
            return TokenscalePolicy(
                self.spec, self.forecast, self.opts.stale_after_s, self.opts.decision_interval_s
            )
        if name == "static":
            return StaticPolicy(self.peak_plan.sized.total)
        if name == "oracle":
            return OraclePolicy(self.oracle_schedule, self.opts.oracle_bin_s)
        if name == "oracle-lead-time":
            return LeadTimeOraclePolicy(
                self.oracle_schedule, self.opts.oracle_bin_s, self.lead_time_lookahead_s
            )
        if name == "best-static":
            raise ValueError("best-static is a search over static fleets: see best_static()")
        if name == "queue-threshold":
            return HpaPolicy(
                name, "waiting", self.opts.queue_target, sc.min_replicas, sc.max_replicas
            )
        return HpaPolicy(name, "kv_usage", self.opts.kv_target, sc.min_replicas, sc.max_replicas)

    def initial_replicas(self, name: PolicyName) -> int:
        if name == "static":
            return self.peak_plan.sized.total
        if name == "oracle":
            return self.oracle_schedule[0]
        if name == "oracle-lead-time":
            return LeadTimeOraclePolicy(
                self.oracle_schedule, self.opts.oracle_bin_s, self.lead_time_lookahead_s
            ).replicas_at(0.0)
        return self.forecast.sized.total

    @property
    def gpu_hour_price(self) -> float | None:
        return Pricing.for_gpu(self.spec.cost, self.forecast.gpu).gpu_hour_price


@dataclass
class _Counts:
    rejected: int = 0
    ups: int = 0
    downs: int = 0
    replicas_max: int = 0
    at_zero: set[float] = field(default_factory=set)
    """Arrival times of requests that found no replica asked for (a fleet at zero)."""
    shed: list[int] = field(default_factory=list)
    """The priority of each request the gateway shed (held past its TTL, the fleet saturated)."""


def simulate(
    setup: Setup,
    policy_name: PolicyName,
    progress: Progress | None = None,
    explain_at_s: float | None = None,
) -> SimResult:
    """Replay the trace under one policy. ``oracle`` replays with no cold start (hindsight);
    ``best-static`` is a bisection over static fleets (:func:`best_static`)."""
    if policy_name == "best-static":
        return _at_this_cold_start(setup, best_static(setup, progress))
    if policy_name in ("oracle", "static"):
        key = _cache_key(setup, policy_name)
        if key not in setup.cache:
            setup.cache[key] = _replay(
                setup,
                policy_name,
                setup.policy(policy_name),
                setup.initial_replicas(policy_name),
                0.0,
                progress,
            )
        return _at_this_cold_start(setup, setup.cache[key])
    return _replay(
        setup,
        policy_name,
        setup.policy(policy_name),
        setup.initial_replicas(policy_name),
        setup.opts.cold_start_s,
        progress,
        explain_at_s=explain_at_s,
    )


def _at_this_cold_start(setup: Setup, cached: SimResult) -> SimResult:
    """A result shared across cold starts, with this cold start's lead-time oracle."""
    return cached.model_copy(
        update={"lead_time_oracle_gpu_hours": setup.lead_time_oracle_gpu_hours}
    )


def _cache_key(setup: Setup, name: str) -> tuple[object, ...]:
    """Policies that never start a replica do not depend on the cold start."""
    return (name, setup.opts.model_copy(update={"cold_start_s": 0.0}))


def verified_oracle(setup: Setup, rounds: int) -> tuple[list[int], float]:
    """The replay-verified oracle (``capacity`` module docstring), the one yardstick the CLI
    and the autoscaling suite print: replay the per-bin allocation with no cold start; while
    any bin's arrivals met the SLO less than ``spec.scaling.targetAttainment`` of the time,
    give each such bin one more replica (up to ``maxReplicas``) and replay again, at most
    ``rounds`` repairs. Returns the schedule and its replayed attainment: every schedule
    returned has been replayed as it is (one that no bin misses meets the target overall; one
    cut by ``rounds`` says how far it got)."""
    schedule = list(setup.oracle_schedule)
    bin_s, slo, target = setup.opts.oracle_bin_s, setup.spec.slo, setup.target
    cap = setup.spec.scaling.max_replicas
    total = len(setup.trace.requests)
    for k in range(rounds + 1):
        outcomes: list[Outcome] = []
        _replay(
            setup,
            "oracle",
            OraclePolicy(schedule, bin_s),
            schedule[0],
            0.0,
            None,
            outcomes_out=outcomes,
        )
        met = [0] * len(schedule)
        seen = [0] * len(schedule)
        for o in outcomes:
            b = min(len(schedule) - 1, int(o.arrival_s // bin_s))
            seen[b] += 1
            met[b] += meets(o, slo)
        attainment = sum(met) / total if total else 0.0
        short = [
            b
            for b in range(len(schedule))
            if seen[b] and met[b] < target * seen[b] and schedule[b] < cap
        ]
        if not short or k == rounds:
            return schedule, attainment
        for b in short:
            schedule[b] += 1
    raise AssertionError("unreachable")  # pragma: no cover


def best_static(setup: Setup, progress: Progress | None = None) -> SimResult:
    """The smallest fixed replica count whose replay meets ``spec.scaling.targetAttainment``.

    Bisection between the oracle's smallest (``minReplicas`` when one replica sustains no rate)
    and (a doubling above) its largest allocation, within ``[minReplicas, maxReplicas]``;
    attainment grows with the count (a static fleet only gains capacity). Nothing meets it →
    the result at ``maxReplicas``. Cached per setup.
    """
    key = _cache_key(setup, "best-static")
    if key in setup.cache:
        return setup.cache[key]
    sc = setup.spec.scaling
    probes: dict[int, SimResult] = {}

    # a probe that has already missed more than the error budget's requests stops early
    give_up = int((1.0 - setup.target) * len(setup.trace.requests))

    def run(n: int, full: bool = False) -> SimResult:
        if n not in probes or (full and probes[n].unfinished < 0):
            if progress is not None:
                progress(min(0.95, 0.15 * len(probes)))
            probes[n] = static_fleet(setup, n, None if full else give_up)
        return probes[n]

    def ok(n: int) -> bool:
        return run(n).slo_attainment >= setup.target

    # without a sustainable rate the oracle holds maxReplicas: no lower bound from it
    oracle_low = min(setup.oracle_schedule) if setup.capacity_rps > 0 else 1
    lo = min(max(sc.min_replicas, 1, oracle_low), sc.max_replicas)
    hi = min(max(lo, *setup.oracle_schedule), sc.max_replicas)
    while not ok(hi) and hi < sc.max_replicas:
        lo, hi = hi + 1, min(2 * hi, sc.max_replicas)
    if not ok(hi):
        result = run(hi, full=True)
    else:
        while lo < hi:
            mid = (lo + hi) // 2
            if ok(mid):
                hi = mid
            else:
                lo = mid + 1
        result = run(hi)
    setup.cache[key] = result.model_copy(update={"static_replicas": hi})
    return setup.cache[key]


def static_fleet(setup: Setup, replicas: int, give_up_misses: int | None = None) -> SimResult:
    """A fixed fleet of ``replicas``, ready from the start (``best-static``'s probe and the
    static frontier's), cached per setup (with its ``give_up_misses``)."""
    key = (*_cache_key(setup, "fixed"), replicas, give_up_misses)
    if key not in setup.cache:
        policy = StaticPolicy(replicas, f"a fixed fleet of {replicas}")
        setup.cache[key] = _replay(
            setup, "best-static", policy, replicas, 0.0, None, give_up_misses
        )
    return setup.cache[key]


def _replay(
    setup: Setup,
    policy_name: str,
    policy: Policy,
    initial: int,
    cold_start_s: float,
    progress: Progress | None,
    give_up_misses: int | None = None,
    explain_at_s: float | None = None,
    outcomes_out: list[Outcome] | None = None,
    fleet_events_out: list[tuple[float, str]] | None = None,
) -> SimResult:
    """One replay through the one loop (``simulation/loop.py``: its end-of-run rule);
    ``outcomes_out`` receives every request's outcome, ``fleet_events_out`` what injected
    faults did. With ``give_up_misses`` it stops once more requests than that missed the SLO
    (or were rejected); such a result says ``unfinished=-1`` and undercounts attainment."""
    rec = Recorder()
    # with classes the gateway holds sheddable requests once every engine carries the plan's
    # operating batch (flow control's saturation threshold at the plan's operating point)
    sheds = setup.forecast.operating_batch if setup.spec.workload.classes else None
    fleet = make_fleet(
        setup.faults, setup.replica, rec, setup.forecast.gpus_per_replica, cold_start_s, initial
    )
    fleet.hold_batch = sheds
    hooks = _OnePool(setup, policy, fleet, rec, progress, give_up_misses, explain_at_s)
    opts = setup.opts
    clock = Clock(
        opts.scrape_interval_s, opts.decision_interval_s, opts.first_decision_s, opts.drain_limit_s
    )
    end = replay(fleet, setup.trace.requests, setup.trace.duration_s, hooks, clock)
    if end.gave_up:
        return _result(setup, policy_name, rec, sum(end.gpu_seconds_by_pool), hooks.counts, -1, [])
    if outcomes_out is not None:
        outcomes_out.extend(rec.outcomes)
    if fleet_events_out is not None:
        fleet_events_out.extend(getattr(fleet, "events", []))
    hooks.counts.shed = list(fleet.shed)
    result = _result(
        setup,
        policy_name,
        rec,
        sum(end.gpu_seconds_by_pool),
        hooks.counts,
        fleet.in_flight(),
        hooks.timeline,
    )
    if hooks.explanation is None:
        return result
    return result.model_copy(update={"explanation": hooks.explanation})


class _OnePool:
    """What an arrival, a scrape and a decision do for one pool under one policy."""

    def __init__(
        self,
        setup: Setup,
        policy: Policy,
        fleet: Fleet,
        rec: Recorder,
        progress: Progress | None,
        give_up_misses: int | None,
        explain_at_s: float | None,
    ) -> None:
        opts = setup.opts
        self.setup, self.policy, self.fleet, self.rec = setup, policy, fleet, rec
        self.progress, self.give_up_misses, self.explain_at_s = (
            progress,
            give_up_misses,
            explain_at_s,
        )
        self.scrapes: deque[Scrape] = deque(
            maxlen=math.ceil(max(opts.rate_window_s, opts.gauge_window_s) / opts.scrape_interval_s)
            + 2
        )
        # the first-token counter at each scrape that found an engine: the arrivals' dispersion
        self.counted: deque[tuple[float, float]] = deque(
            maxlen=math.ceil((DISPERSION_RANGE_S + 2 * COUNT_WINDOW_S) / opts.scrape_interval_s) + 2
        )
        self.counts = _Counts(replicas_max=fleet.active)
        self.timeline: list[TimelinePoint] = []
        self.explanation: Explanation | None = None
        self.arrivals_since, self.last_point = 0, 0.0
        self.misses, self.judged = 0, 0

    def admit(self, r: TraceRequest, t: float) -> None:
        _admit(
            self.fleet, r, t, self.setup.forecast.max_model_len, self.counts, self.fleet.hold_batch
        )
        self.arrivals_since += 1

    def scrape(self, t: float) -> None:
        self.scrapes.append(self.fleet.scrape(t))
        if self.scrapes[-1].waiting:
            self.counted.append((t, float(sum(self.scrapes[-1].buckets["ttft"]))))

    def decide(self, t: float) -> bool:
        opts, fleet, policy = self.setup.opts, self.fleet, self.policy
        snap = snapshot_at(self.scrapes, t, self.rec, opts.gauge_window_s, opts.rate_window_s)
        snap = with_demand(snap, self.scrapes, t, self.setup.spec, opts.gauge_window_s)
        snap = with_dispersion(snap, self.counted, t)
        if isinstance(policy, TokenscalePolicy):
            policy.lead_time_s = fleet.lead_time_s()
        delta = fleet.set_target(policy.decide(t, snap, fleet.target), t)
        self._explain(t, snap)
        self.counts.ups += delta > 0
        self.counts.downs += delta < 0
        self.counts.replicas_max = max(self.counts.replicas_max, fleet.active)
        if opts.timeline:
            rps = self.arrivals_since / (t - self.last_point)
            self.timeline.append(_point(fleet, t, rps, snap, policy))
        self.arrivals_since, self.last_point = 0, t
        if self.progress is not None:
            self.progress(min(1.0, t / max(self.setup.trace.duration_s, 1e-9)))
        if self.give_up_misses is None:
            return False
        outs = self.rec.outcomes
        self.misses += sum(1 for o in outs[self.judged :] if not meets(o, self.setup.spec.slo))
        self.judged = len(outs)
        return self.misses + self.counts.rejected > self.give_up_misses

    def _explain(self, t: float, snap: Snapshot | None) -> None:
        """``--explain``: keep the first tokenscale decision at or after the asked moment."""
        policy = self.policy
        if (
            self.explain_at_s is None
            or self.explanation is not None
            or t < self.explain_at_s
            or not isinstance(policy, TokenscalePolicy)
            or policy.last is None
        ):
            return
        self.explanation = Explanation(
            t_s=t,
            replicas_ready=self.fleet.count("ready"),
            replicas_starting=self.fleet.count("starting"),
            snapshot=snap,
            decision=policy.last,
        )


def _admit(
    fleet: Fleet,
    r: TraceRequest,
    now: float,
    max_len: int,
    counts: _Counts,
    sheds: float | None,
) -> None:
    """Route one arrival; longer than the max model len is rejected (vLLM answers 400); a
    sheddable one (negative priority) is held at the gateway while every ready engine holds
    ``sheds`` requests (the plan's operating batch; None: no classes, nothing is held) and
    dropped after ``HOLD_TTL_S``, as the endpoint picker's flow control holds and sheds the
    lowest priorities of a saturated pool (its saturation thresholds are assumed set to the
    plan's operating point, which tokenscale does not render)."""
    if r.input_tokens + r.output_tokens > max_len:
        counts.rejected += 1
        return
    request = SimRequest(
        r.arrival_s,
        max(r.input_tokens, 1),
        max(r.output_tokens, 1),
        r.prefix_blocks,
        adapter=r.adapter,
        priority=r.priority,
    )
    if fleet.active == 0:
        counts.at_zero.add(r.arrival_s)
    if sheds is not None and r.priority < 0:
        fleet.admit_sheddable(request, now)
        return
    fleet.route(request, now)


def _point(fleet: Fleet, t: float, rps: float, s: Snapshot | None, policy: Policy) -> TimelinePoint:
    last = policy.last if isinstance(policy, TokenscalePolicy) else None
    spread = None if last is None else last.dispersion
    engines = [m.replica for m in fleet.members if m.phase != "starting"]
    return TimelinePoint(
        t_s=t,
        arrival_rps=rps,
        replicas_target=fleet.target,
        replicas_ready=fleet.count("ready"),
        replicas_starting=fleet.count("starting"),
        waiting=len(fleet.held) + sum(len(e.waiting) for e in engines),
        kv_usage_max=max((e.kv_usage for e in engines), default=0.0),
        ttft_p99_s=s.ttft_p99_s if s else None,
        tpot_p99_s=s.tpot_p99_s if s else None,
        reason=policy.last_reason,
        why=policy.last_why,
        dispersion_index=None if spread is None else spread.index,
        dispersion_room=None if spread is None else spread.room,
    )


def _result(
    setup: Setup,
    policy: str,
    rec: Recorder,
    gpu_seconds: float,
    counts: _Counts,
    unfinished: int,
    timeline: list[TimelinePoint],
) -> SimResult:
    slo = setup.spec.slo
    outs = rec.outcomes
    total = len(setup.trace.requests)
    met = sum(1 for o in outs if meets(o, slo))

    def pct(values: list[float], q: float) -> float:
        return percentile(values, q) if values else math.nan

    ttft = [o.ttft_s for o in outs]
    woke = [o.ttft_s for o in outs if o.arrival_s in counts.at_zero]
    tpot = [o.tpot_s for o in outs if o.output_tokens > 1]
    e2e = [o.e2e_s for o in outs]
    gpu_hours = gpu_seconds / 3600.0
    price = setup.gpu_hour_price
    oracle = setup.oracle_gpu_hours
    return SimResult(
        policy=policy,
        trace=setup.trace.source,
        mismatch=setup.opts.mismatch,
        cold_start_s=setup.opts.cold_start_s,
        duration_s=setup.trace.duration_s,
        requests=total,
        completed=len(outs),
        rejected=counts.rejected,
        unfinished=unfinished,
        slo_attainment=met / total if total else 0.0,
        ttft_p50_s=pct(ttft, 0.5),
        ttft_p95_s=pct(ttft, 0.95),
        ttft_p99_s=pct(ttft, 0.99),
        tpot_p50_s=pct(tpot, 0.5),
        tpot_p95_s=pct(tpot, 0.95),
        tpot_p99_s=pct(tpot, 0.99),
        e2e_p50_s=pct(e2e, 0.5),
        e2e_p95_s=pct(e2e, 0.95),
        e2e_p99_s=pct(e2e, 0.99),
        gpu_hours=gpu_hours,
        oracle_gpu_hours=oracle,
        oracle_formula_gpu_hours=setup.oracle_formula_gpu_hours,
        oracle_attainment=setup.oracle_attainment,
        target_attainment=setup.target,
        lead_time_oracle_gpu_hours=setup.lead_time_oracle_gpu_hours,
        gpu_hours_vs_oracle=gpu_hours / oracle if oracle > 0 else math.inf,
        cost=None if price is None else gpu_hours * price,
        currency=setup.spec.cost.currency,
        scale_events=counts.ups + counts.downs,
        scale_ups=counts.ups,
        scale_downs=counts.downs,
        preemptions=int(rec.preemptions),
        replicas_max=counts.replicas_max,
        replicas_mean=gpu_seconds
        / setup.forecast.gpus_per_replica
        / max(setup.trace.duration_s, 1e-9),
        sustainable_rps_per_replica=setup.capacity_rps,
        planner_rps_per_replica=setup.forecast.rps_per_replica,
        timeline=timeline,
        arrived_at_zero=len(counts.at_zero),
        shed=len(counts.shed),
        classes=class_results(setup.spec, setup.trace, outs, counts.shed, gpu_hours),
        wake_ttft_max_s=max(woke) if woke else None,
    )
