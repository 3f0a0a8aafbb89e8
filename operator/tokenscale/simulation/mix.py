"""A GPU mix replayed: one pool per variant of the one fleet, through the one loop.

Each variant is a pool of the fleet (``simulation/fleet.py``: its own engine, KV pool and
flags, from the variant's own plan), routed round-robin (a plain Service) or least-loaded (a
load-aware gateway, ``spec.gateway``). Scrapes cover every serving engine of every variant;
each decision sets every variant's count. Who decides (a :class:`Sizer`):

- :class:`MixTokenscale`: the operator's mix policy, :class:`~tokenscale.scaling.mix_stepper.
  MixStepper` — the shared stepper decides the total, the stockout rule marks a variant whose
  pods stayed unschedulable past the grace, and the split goes up on the cheapest capacity
  with room and down the dearest first, from the fleet's pods as the operator reads them.
- :class:`VariantTokenscale`: the shared stepper on one variant alone (its own one-GPU spec
  and plan), every replica of that variant.
- :class:`StaticMix`: a pinned policy — fixed counts, or counts that change at given moments
  (a fleet taken away and replaced by hand).

A stockout (:class:`~tokenscale.simulation.fleet.GpuStockout`) leaves new pods of its variant
pending; replicas placed before it keep running. The end-of-run rule is the loop's.
"""

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning import Plan
from tokenscale.planning.variants import variant_price, variant_spec
from tokenscale.scaling.mix_stepper import MixState, MixStepper
from tokenscale.scaling.snapshot import Snapshot
from tokenscale.scaling.state import ScalingState
from tokenscale.scaling.stepper import Observation, Stepper
from tokenscale.scaling.stockout import STOCKOUT_GRACE_S, STOCKOUT_RETRY_S, VariantPod
from tokenscale.scaling.variant_order import mix_counts
from tokenscale.simulation.fleet import Fleet, GpuStockout, PoolEngine, SimRouting
from tokenscale.simulation.loop import Clock, replay
from tokenscale.simulation.observe import Scrape, snapshot_at, with_demand
from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import SimRequest, replica_config
from tokenscale.simulation.result import FleetRun, PoolsPoint
from tokenscale.simulation.run import SimulationError
from tokenscale.simulation.search import smallest
from tokenscale.simulation.summary import meets, summarize
from tokenscale.simulation.trace import Trace, TraceRequest


def mix_engines(
    spec: InferenceServiceSpec, plan: Plan, block_tokens: int, mismatch: float = 1.0
) -> list[PoolEngine]:
    """One pool per variant of a mix ``plan`` that can serve (its own plan has a count), in
    ``spec.hardware.variants`` order; ``mismatch`` is the truth's speed over the model's."""
    variants = spec.hardware.variants
    if variants is None or len(plan.variant_plans) != len(variants):
        raise SimulationError("not a mix plan: spec.hardware.variants is not set")
    engines = []
    for v, own in zip(variants, plan.variant_plans, strict=True):
        if own.replicas is None or own.kv_capacity_blocks_per_replica <= 0:
            continue
        engines.append(
            PoolEngine(
                name=v.resolved_name,
                cfg=replica_config(variant_spec(spec, v), own, block_tokens, mismatch),
                gpus_per_replica=own.gpus_per_replica,
                gpu_hour_price=variant_price(spec, v),
                max_model_len=own.max_model_len,
            )
        )
    return engines


class Sizer(Protocol):
    name: str
    last_reason: str

    def initial(self) -> dict[str, int]:
        """Replicas per variant ready at the start."""
        ...

    def counts(
        self,
        now: float,
        snap: Snapshot | None,
        pods: Sequence[VariantPod],
        lead_time_s: float | None,
    ) -> dict[str, int]:
        """Replicas per variant to ask for at this decision."""
        ...


class MixTokenscale:
    """The operator's mix policy (module docstring), its memory kept from one decision to the
    next as the operator keeps it in status."""

    name = "tokenscale"

    def __init__(
        self,
        spec: InferenceServiceSpec,
        plan: Plan,
        interval_s: float,
        stale_after_s: float = 120.0,
        grace_s: float = STOCKOUT_GRACE_S,
        retry_s: float = STOCKOUT_RETRY_S,
    ) -> None:
        self.stepper = MixStepper(Stepper(spec, plan, interval_s, stale_after_s), grace_s, retry_s)
        self.state: MixState = self.stepper.initial()
        self.last_reason = ""
        self._decided = ""
        self.marked: list[tuple[float, str, str]] = []
        """(when, variant, reason) of every exhausted mark made."""

    def initial(self) -> dict[str, int]:
        return mix_counts(self.stepper.plan, self.stepper.plan.sized.total).counts

    def counts(
        self,
        now: float,
        snap: Snapshot | None,
        pods: Sequence[VariantPod],
        lead_time_s: float | None,
    ) -> dict[str, int]:
        before = self.state.marks
        step = self.stepper.step(self.state, Observation(now, snap), pods, now, lead_time_s)
        self.state = step.state
        for name, m in step.state.marks.items():
            if name not in before or before[name].since_s != m.since_s:
                self.marked.append((now, name, m.reason))
        if step.decision is not None:
            self._decided = step.decision.reason
        limited = step.bound.limited
        self.last_reason = self._decided + ("" if limited is None else f"; {limited}")
        return step.counts


class VariantTokenscale:
    """The shared stepper on variant ``variant`` alone: its one-GPU spec (``maxReplicas`` the
    lower of the variant's and the service's) and its own plan."""

    def __init__(
        self,
        spec: InferenceServiceSpec,
        plan: Plan,
        variant: str,
        interval_s: float,
        stale_after_s: float = 120.0,
    ) -> None:
        variants = spec.hardware.variants or []
        at = [v.resolved_name for v in variants].index(variant)
        own = plan.variant_plans[at]
        self.variant = variant
        self.name = f"tokenscale, {variant} alone"
        self.stepper = Stepper(variant_spec(spec, variants[at]), own, interval_s, stale_after_s)
        self.state = ScalingState(decided_replicas=own.sized.total)
        self.last_reason = ""

    def initial(self) -> dict[str, int]:
        return {self.variant: self.stepper.forecast.sized.total}

    def counts(
        self,
        now: float,
        snap: Snapshot | None,
        pods: Sequence[VariantPod],
        lead_time_s: float | None,
    ) -> dict[str, int]:
        step = self.stepper.step(self.state, Observation(now, snap), now, lead_time_s)
        self.state = step.state
        if step.decision is not None:
            self.last_reason = step.decision.reason
        return {self.variant: self.state.decided_replicas or 0}


class StaticMix:
    """A pinned policy: fixed counts per variant, ready from the start, and from each
    ``changes`` moment (in time order) the counts given then (a count left out stays)."""

    def __init__(
        self,
        counts: Mapping[str, int],
        name: str = "static",
        changes: Sequence[tuple[float, Mapping[str, int]]] = (),
    ) -> None:
        self.fixed = dict(counts)
        self.changes = list(changes)
        self.name = name
        self.last_reason = "static: " + (
            " + ".join(f"{n} {v}" for v, n in self.fixed.items() if n) or "none"
        )

    def initial(self) -> dict[str, int]:
        return dict(self.fixed)

    def counts(
        self,
        now: float,
        snap: Snapshot | None,
        pods: Sequence[VariantPod],
        lead_time_s: float | None,
    ) -> dict[str, int]:
        out = dict(self.fixed)
        for at_s, counts in self.changes:
            if now >= at_s:
                out.update(counts)
        return out


@dataclass(frozen=True)
class MixScaleOptions:
    cold_start_s: float = 180.0
    scrape_interval_s: float = 15.0
    decision_interval_s: float = 15.0
    gauge_window_s: float = 60.0
    rate_window_s: float = 120.0
    drain_limit_s: float = 1800.0


class _MixHooks:
    """What an arrival, a scrape and a decision do for a mix under one sizer."""

    def __init__(
        self,
        fleet: Fleet,
        spec: InferenceServiceSpec,
        sizer: Sizer,
        opts: MixScaleOptions,
        timeline: bool,
        give_up_misses: int | None,
    ) -> None:
        self.fleet, self.spec, self.sizer, self.opts = fleet, spec, sizer, opts
        self.want_timeline, self.give_up_misses = timeline, give_up_misses
        self.scrapes: deque[Scrape] = deque(
            maxlen=math.ceil(max(opts.rate_window_s, opts.gauge_window_s) / opts.scrape_interval_s)
            + 2
        )
        self.peak = fleet.asked()
        self.points: list[PoolsPoint] = []
        self.events, self.misses = 0, 0
        self.judged = [0 for _ in fleet.recs]

    def admit(self, r: TraceRequest, t: float) -> None:
        self.fleet.route(
            SimRequest(
                r.arrival_s, max(r.input_tokens, 1), max(r.output_tokens, 1), r.prefix_blocks
            ),
            t,
        )

    def scrape(self, t: float) -> None:
        self.scrapes.append(self.fleet.scrape(t))

    def decide(self, t: float) -> bool:
        fleet, opts = self.fleet, self.opts
        snap = snapshot_at(self.scrapes, t, fleet.recs[0], opts.gauge_window_s, opts.rate_window_s)
        snap = with_demand(snap, self.scrapes, t, self.spec, opts.gauge_window_s)
        wanted = self.sizer.counts(t, snap, fleet.variant_pods(), fleet.lead_time_s())
        self.events += any(fleet.set_counts(wanted, t))
        asked = fleet.asked()
        self.peak = {n: max(self.peak[n], asked[n]) for n in self.peak}
        if self.want_timeline:
            self.points.append(
                PoolsPoint(
                    t, asked, fleet.in_phase("ready"), fleet.in_phase("pending"),
                    self.sizer.last_reason,
                )
            )  # fmt: skip
        if self.give_up_misses is None:
            return False
        for i, rec in enumerate(fleet.recs):
            outs = rec.outcomes
            self.misses += sum(1 for o in outs[self.judged[i] :] if not meets(o, self.spec.slo))
            self.judged[i] = len(outs)
        return self.misses + fleet.rejected > self.give_up_misses


def replay_mix(
    engines: Sequence[PoolEngine],
    trace: Trace,
    spec: InferenceServiceSpec,
    sizer: Sizer,
    routing: SimRouting,
    opts: MixScaleOptions = MixScaleOptions(),
    stockouts: Sequence[GpuStockout] = (),
    timeline: bool = False,
    give_up_misses: int | None = None,
) -> FleetRun:
    """Replay ``trace`` on a mixed fleet that starts at ``sizer.initial()`` (ready) and is
    sized by ``sizer`` at every decision (module docstring). With ``give_up_misses`` it stops
    once more requests than that missed the SLOs or were rejected; such a result says
    ``unfinished=-1`` and undercounts attainment."""
    recs = [Recorder() for _ in engines]
    start = sizer.initial()
    fleet = Fleet(
        engines, recs, opts.cold_start_s, [start.get(e.name, 0) for e in engines], routing,
        stockouts,
    )  # fmt: skip
    hooks = _MixHooks(fleet, spec, sizer, opts, timeline, give_up_misses)
    clock = Clock(opts.scrape_interval_s, opts.decision_interval_s, None, opts.drain_limit_s)
    end = replay(fleet, trace.requests, trace.duration_s, hooks, clock)
    return summarize(
        fleet,
        end,
        trace,
        spec.slo,
        policy=sizer.name,
        peak=hooks.peak,
        asked_end=hooks.peak if end.gave_up else fleet.asked(),
        events=hooks.events,
        marked=list(getattr(sizer, "marked", [])),
        timeline=hooks.points,
    )


def best_static_mix(
    engines: Sequence[PoolEngine],
    trace: Trace,
    spec: InferenceServiceSpec,
    routing: SimRouting,
    max_replicas: Mapping[str, int],
    target: float = 0.99,
) -> FleetRun | None:
    """The cheapest fixed fleet (ready from the start) whose replay meets the SLOs for at
    least ``target`` of requests: for every count of every variant but the last (within
    ``max_replicas``), the fewest of the last (the static search, ``simulation/search.py``:
    doubling from below, then bisection; attainment grows with it), skipping prefixes already
    dearer than the best found. Cost is price-weighted GPU-hours (GPU-hours when a variant has
    no price). None when no fleet within the bounds meets ``target``."""
    names = [e.name for e in engines]
    price = {
        e.name: (e.gpu_hour_price if e.gpu_hour_price is not None else 1.0) * e.gpus_per_replica
        for e in engines
    }
    best: FleetRun | None = None
    best_cost = math.inf
    last = names[-1]

    # a probe gives up once it cannot reach ``target``: more misses than (1 − target) × requests
    allowed_misses = math.floor((1.0 - target) * len(trace.requests))

    def probe(counts: dict[str, int]) -> FleetRun:
        sizer = StaticMix(counts, "best static mix")
        return replay_mix(engines, trace, spec, sizer, routing, give_up_misses=allowed_misses)

    for head in _prefixes(names[:-1], max_replicas):
        fixed_cost = sum(price[n] * c for n, c in head.items())
        if fixed_cost >= best_cost:
            continue
        found = _fewest_last(head, last, max_replicas.get(last, 0), probe, target)
        if found is None:
            continue
        cost = fixed_cost + price[last] * found.counts[last]
        if cost < best_cost:
            best, best_cost = found, cost
    return best  # a probe meeting ``target`` never gave up: its figures are whole


def _prefixes(names: Sequence[str], most: Mapping[str, int]) -> list[dict[str, int]]:
    """Every count of every variant in ``names`` within ``most``."""
    out: list[dict[str, int]] = [{}]
    for name in names:
        out = [{**p, name: n} for p in out for n in range(most.get(name, 0) + 1)]
    return out


def _fewest_last(
    head: dict[str, int],
    last: str,
    most: int,
    probe: "Probe",
    target: float,
) -> FleetRun | None:
    """The fewest replicas of ``last`` beside ``head`` meeting ``target`` (the static search,
    ``simulation/search.py``; a fleet that misses gives up early); None within ``most``."""
    runs: dict[int, FleetRun] = {}

    def ok(n: int) -> bool:
        runs[n] = probe({**head, last: n})
        return runs[n].slo_attainment >= target

    lo = 0 if any(head.values()) else 1
    n = smallest(ok, lo, lo, most) if most >= lo else None
    return None if n is None else runs[n]


class Probe(Protocol):
    def __call__(self, counts: dict[str, int], /) -> FleetRun: ...
