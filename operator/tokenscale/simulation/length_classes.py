"""Length classes replayed (``spec.serving.lengthClasses``): the one fleet and the one loop,
with a routing rule.

The fleet (``simulation/fleet.py``) has one pool per class, each running its class plan's
engine (``replica_config``: its timing model, KV blocks and flags). Each arrival goes to the
pool of the class its prompt length falls in (``maxInputTokens``, shortest class first); each
pool is scraped on its own series and decided by the one-pool policy on its own spec and plan
(:class:`~tokenscale.simulation.policies.TokenscalePolicy`: the operator's stepper, one memory
per pool), or pinned at its plan's count (``static``). The same replay of the one shared pool
(the whole workload's plan, every request to it) is the alternative; both are judged per class
by prompt length, against ``spec.slo``, unserved and rejected requests counted as misses.
"""

import bisect
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.slo import Slo
from tokenscale.planning import Plan
from tokenscale.planning.length_classes import class_specs
from tokenscale.planning.pricing import Pricing
from tokenscale.simulation.fleet import Fleet, PoolEngine
from tokenscale.simulation.loop import Clock, replay
from tokenscale.simulation.observe import Scrape, snapshot_at, with_demand, with_dispersion
from tokenscale.simulation.policies import StaticPolicy, TokenscalePolicy
from tokenscale.simulation.recorder import Outcome, Recorder
from tokenscale.simulation.replica import SimRequest, replica_config
from tokenscale.simulation.result import FleetRun, PoolsPoint
from tokenscale.simulation.run import SimOptions, SimulationError
from tokenscale.simulation.search import smallest
from tokenscale.simulation.summary import meets, summarize
from tokenscale.simulation.trace import Trace, TraceRequest, percentile

LengthPolicy = Literal["tokenscale", "static"]


@dataclass(frozen=True)
class ClassOutcome:
    """One length class in one arrangement: its requests, the share meeting ``spec.slo``
    (unserved and rejected ones miss) and its TTFT P99 (arrival to first token)."""

    name: str
    requests: int
    attainment: float
    ttft_p99_s: float


@dataclass(frozen=True)
class LengthReplay:
    """The class pools and the one shared pool, replayed on the same trace and policy."""

    isolated: FleetRun
    shared: FleetRun
    isolated_by_class: list[ClassOutcome]
    shared_by_class: list[ClassOutcome]


@dataclass(frozen=True)
class _Pool:
    name: str
    spec: InferenceServiceSpec
    plan: Plan


def replay_length_classes(
    spec: InferenceServiceSpec,
    plan: Plan,
    trace: Trace,
    opts: SimOptions,
    policy: LengthPolicy = "tokenscale",
    counts: tuple[Sequence[int], int] | None = None,
) -> LengthReplay:
    """Replay ``trace`` on the class pools ``plan`` runs and on the one shared pool (module
    docstring); ``counts``: static fleets of these sizes (each class's, the shared pool's)
    instead of the plans'. Raises :class:`SimulationError` when a pool's plan cannot serve."""
    pools, bounds = _pools(spec, plan)
    names = [p.name for p in pools[:-1]]
    own, one = (None, None) if counts is None else (list(counts[0]), [counts[1]])
    isolated = _replay(pools[:-1], bounds, trace, opts, policy, spec.slo, own)
    shared = _replay(pools[-1:], bounds, trace, opts, policy, spec.slo, one)
    return LengthReplay(
        isolated=isolated.run,
        shared=shared.run,
        isolated_by_class=_by_class(isolated, names, bounds, spec.slo),
        shared_by_class=_by_class(shared, names, bounds, spec.slo),
    )


def _pools(spec: InferenceServiceSpec, plan: Plan) -> tuple[list[_Pool], list[int]]:
    """The class pools then the shared one, and the classes' upper bounds (all but the last)."""
    specs = class_specs(spec)
    plans = plan.class_plans
    if plan.length_split is None or len(plans) != len(specs):
        raise SimulationError("not a length-classes plan: spec.serving.lengthClasses is not set")
    pools = [_Pool(part.name, s, p) for (part, s), p in zip(specs, plans, strict=True)]
    for p in pools:
        if p.plan.replicas is None or p.plan.kv_capacity_blocks_per_replica <= 0:
            raise SimulationError(
                f"{'one shared pool' if p is pools[-1] else f'length class {p.name}'} cannot "
                f"serve: {'; '.join(p.plan.infeasible_reasons) or 'no replica count'}"
            )
    return pools, [part.max_tokens or 0 for part, _ in specs[:-2]]


@dataclass(frozen=True)
class SmallestFleets:
    """The fewest replicas of fixed fleets meeting ``target`` for every class (None: not even
    ``most``): each class's pool on its own requests, one shared pool on all of them judged
    class by class, and both arrangements replayed at those sizes."""

    target: float
    isolated: list[int | None]
    shared: int | None
    replayed: LengthReplay | None
    """None when an arrangement has no passing size."""


def smallest_fleets(
    spec: InferenceServiceSpec,
    plan: Plan,
    trace: Trace,
    opts: SimOptions,
    target: float = 0.99,
    most: int = 64,
) -> SmallestFleets:
    """Each arrangement's smallest static fleet meeting ``target`` of each class's requests
    within the SLOs (``simulation/search.py``), searched from the plans' counts: a class pool
    on its own requests, the shared pool on each class's share of all (the class pools give
    every class the target; a shared pool judged over all requests could spend the whole
    error budget on the longest class)."""
    pools, bounds = _pools(spec, plan)
    slo = spec.slo

    names = [p.name for p in pools[:-1]]

    def passes(pool: _Pool, sub: Trace, n: int) -> bool:
        replayed = _replay([pool], bounds, sub, opts, "static", slo, [n])
        if pool is not pools[-1]:
            return replayed.run.slo_attainment >= target
        return all(c.attainment >= target for c in _by_class(replayed, names, bounds, slo))

    isolated: list[int | None] = []
    for k, pool in enumerate(pools[:-1]):
        mine = tuple(r for r in trace.requests if _class_of(bounds, r.input_tokens) == k)
        sub = Trace(mine, trace.source, trace.block_tokens)
        if not mine:
            isolated.append(0)
            continue
        isolated.append(smallest(_passing(passes, pool, sub), pool.plan.sized.total, 1, most))
    shared_pool = pools[-1]
    shared = smallest(
        lambda n: passes(shared_pool, trace, n), shared_pool.plan.sized.total, 1, most
    )
    replayed = None
    if shared is not None and all(n is not None for n in isolated):
        counts = ([n or 0 for n in isolated], shared)
        replayed = replay_length_classes(spec, plan, trace, opts, "static", counts)
    return SmallestFleets(target, isolated, shared, replayed)


def _passing(
    passes: Callable[[_Pool, Trace, int], bool], pool: _Pool, sub: Trace
) -> Callable[[int], bool]:
    return lambda n: passes(pool, sub, n)


@dataclass(frozen=True)
class _Replayed:
    run: FleetRun
    outcomes: list[Outcome]
    arrived: list[int]
    """Arrivals per class (by prompt length), whatever pool served them."""


def _replay(
    pools: Sequence[_Pool],
    bounds: list[int],
    trace: Trace,
    opts: SimOptions,
    policy: LengthPolicy,
    slo: Slo,
    counts: Sequence[int] | None = None,
) -> _Replayed:
    """One arrangement replayed (``counts``: static sizes instead of the plans')."""
    sizes = list(counts) if counts is not None else [p.plan.sized.total for p in pools]
    engines = [
        PoolEngine(
            name=p.name,
            cfg=replica_config(p.spec, p.plan, trace.block_tokens, opts.mismatch),
            gpus_per_replica=p.plan.gpus_per_replica,
            gpu_hour_price=Pricing.for_gpu(p.spec.cost, p.plan.gpu).gpu_hour_price,
            max_model_len=p.plan.max_model_len,
        )
        for p in pools
    ]
    recs = [Recorder() for _ in pools]
    fleet = Fleet(engines, recs, opts.cold_start_s, sizes)
    hooks = _Hooks(fleet, pools, bounds, opts, policy, sizes)
    clock = Clock(
        opts.scrape_interval_s, opts.decision_interval_s, opts.first_decision_s, opts.drain_limit_s
    )
    end = replay(fleet, trace.requests, trace.duration_s, hooks, clock)
    run = summarize(
        fleet,
        end,
        trace,
        slo,
        policy=policy if len(pools) > 1 else f"{policy} (one shared pool)",
        peak=hooks.peak,
        asked_end=fleet.asked(),
        events=hooks.events,
        marked=[],
        timeline=hooks.points if opts.timeline else [],
    )
    return _Replayed(run, [o for r in recs for o in r.outcomes], hooks.arrived)


def _class_of(bounds: Sequence[int], input_tokens: int) -> int:
    """The class a prompt of ``input_tokens`` falls in: the first whose bound holds it."""
    return bisect.bisect_left(bounds, input_tokens)


class _Hooks:
    """What an arrival, a scrape and a decision do: each arrival to its class's pool (every
    arrival to pool 0 with one pool), each pool scraped on its own series, one policy step
    per pool."""

    def __init__(
        self,
        fleet: Fleet,
        pools: Sequence[_Pool],
        bounds: list[int],
        opts: SimOptions,
        policy: LengthPolicy,
        sizes: Sequence[int],
    ) -> None:
        self.fleet, self.pools, self.bounds, self.opts = fleet, pools, bounds, opts
        keep = math.ceil(max(opts.rate_window_s, opts.gauge_window_s) / opts.scrape_interval_s)
        self.scrapes: list[deque[Scrape]] = [deque(maxlen=keep + 2) for _ in pools]
        self.counted: list[list[tuple[float, float]]] = [[] for _ in pools]
        self.policies = [
            TokenscalePolicy(p.spec, p.plan, opts.stale_after_s, opts.decision_interval_s)
            if policy == "tokenscale"
            else StaticPolicy(n)
            for p, n in zip(pools, sizes, strict=True)
        ]
        self.arrived = [0 for _ in range(len(bounds) + 1)]
        self.peak = fleet.asked()
        self.points: list[PoolsPoint] = []
        self.events = 0

    def admit(self, r: TraceRequest, t: float) -> None:
        k = _class_of(self.bounds, r.input_tokens)
        self.arrived[k] += 1
        pool = k if len(self.pools) > 1 else 0
        req = SimRequest(
            r.arrival_s, max(r.input_tokens, 1), max(r.output_tokens, 1), r.prefix_blocks
        )
        self.fleet.route(req, t, pool)

    def scrape(self, t: float) -> None:
        for i in range(len(self.pools)):
            s = self.fleet.scrape(t, [i])
            self.scrapes[i].append(s)
            if s.waiting:
                self.counted[i].append((t, float(sum(s.buckets["ttft"]))))

    def decide(self, t: float) -> bool:
        fleet, opts = self.fleet, self.opts
        asked = fleet.asked()
        wanted: dict[str, int] = {}
        reasons: dict[str, str] = {}
        for i, (p, policy) in enumerate(zip(self.pools, self.policies, strict=True)):
            snap = snapshot_at(
                self.scrapes[i], t, fleet.recs[i], opts.gauge_window_s, opts.rate_window_s
            )
            snap = with_demand(snap, self.scrapes[i], t, p.spec, opts.gauge_window_s)
            snap = with_dispersion(snap, self.counted[i], t)
            if isinstance(policy, TokenscalePolicy):
                policy.lead_time_s = fleet.lead_time_s()
            wanted[p.name] = policy.decide(t, snap, asked[p.name])
            reasons[p.name] = policy.last_reason
        self.events += any(fleet.set_counts(wanted, t))
        asked = fleet.asked()
        self.peak = {n: max(self.peak[n], asked[n]) for n in self.peak}
        if self.opts.timeline:
            self.points.append(
                PoolsPoint(
                    t, asked, fleet.in_phase("ready"), fleet.in_phase("pending"), "per pool",
                    reasons,
                )
            )  # fmt: skip
        return False


def _by_class(
    replayed: _Replayed, names: list[str], bounds: list[int], slo: Slo
) -> list[ClassOutcome]:
    """Each class's requests (by prompt length) in one arrangement."""
    mine: list[list[Outcome]] = [[] for _ in names]
    for o in replayed.outcomes:
        mine[_class_of(bounds, o.input_tokens)].append(o)
    out = []
    for name, outs, n in zip(names, mine, replayed.arrived, strict=True):
        ttfts = [o.ttft_s for o in outs]
        out.append(
            ClassOutcome(
                name=name,
                requests=n,
                attainment=sum(1 for o in outs if meets(o, slo)) / n if n else 1.0,
                ttft_p99_s=percentile(ttfts, 0.99) if ttfts else math.nan,
            )
        )
    return out
