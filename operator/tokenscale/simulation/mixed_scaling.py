"""A GPU mix autoscaled in simulation: the operator's own mix policy on a changing mixed fleet.

Events, in time order (as ``simulation/run.py`` for one GPU type): arrivals (routed by the
fleet's router), Prometheus scrapes every ``scrape_interval_s`` of every serving engine of
every variant, a decision every ``decision_interval_s`` on the snapshot Prometheus would
answer with (``simulation/observe.py``), started replicas becoming ready and stocked-out
replicas being placed (``simulation/mixed_fleet.py``). Each decision sets every variant's
count. Who decides (a :class:`Sizer`):

- :class:`MixTokenscale`: the operator's mix policy, :class:`~tokenscale.scaling.mix_stepper.
  MixStepper` — the shared stepper decides the total, the stockout rule marks a variant whose
  pods stayed unschedulable past the grace, and the split goes up on the cheapest capacity
  with room and down the dearest first, from the fleet's pods as the operator reads them.
- :class:`VariantTokenscale`: the shared stepper on one variant alone (its own one-GPU spec
  and plan), every replica of that variant; a stockout of it leaves its new pods pending.
- :class:`StaticMix`: fixed counts.

Decisions stop at the trace's end; requests in flight are then served (up to
``drain_limit_s``) for their latencies, while GPU-hours and cost count over the trace's span.
"""

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning import Plan
from tokenscale.planning.variants import variant_spec
from tokenscale.scaling.mix_stepper import MixState, MixStepper
from tokenscale.scaling.snapshot import Snapshot
from tokenscale.scaling.state import ScalingState
from tokenscale.scaling.stepper import Observation, Stepper
from tokenscale.scaling.stockout import STOCKOUT_GRACE_S, STOCKOUT_RETRY_S, VariantPod
from tokenscale.scaling.variant_order import mix_counts
from tokenscale.simulation.mixed import SimRouting, VariantEngine
from tokenscale.simulation.mixed_fleet import GpuStockout, MixedFleet
from tokenscale.simulation.observe import Scrape, snapshot_at, with_demand
from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import SimRequest
from tokenscale.simulation.run import meets
from tokenscale.simulation.trace import Trace, percentile


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
    """Fixed counts per variant, ready from the start."""

    def __init__(self, counts: Mapping[str, int], name: str = "static") -> None:
        self.fixed = dict(counts)
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
        return dict(self.fixed)


@dataclass(frozen=True)
class MixScaleOptions:
    cold_start_s: float = 180.0
    scrape_interval_s: float = 15.0
    decision_interval_s: float = 15.0
    gauge_window_s: float = 60.0
    rate_window_s: float = 120.0
    drain_limit_s: float = 1800.0


@dataclass(frozen=True)
class MixPoint:
    """One decision: the counts asked for, what was ready and pending, and why."""

    t_s: float
    asked: dict[str, int]
    ready: dict[str, int]
    pending: dict[str, int]
    reason: str


@dataclass(frozen=True)
class ScaledMixRun:
    """What one replay of an autoscaled (or static) mixed fleet measured."""

    policy: str
    routing: SimRouting
    requests: int
    rejected: int
    unfinished: int
    slo_attainment: float
    """Share of all requests (rejected and unfinished included) meeting TTFT and TPOT SLOs."""
    ttft_p99_s: float
    tpot_p99_s: float
    gpu_hours: float
    cost: float | None
    """GPU-hours × each variant's price (None when a variant used has no price)."""
    gpu_hours_by_variant: dict[str, float]
    replicas_max: dict[str, int]
    scale_events: int
    marked: list[tuple[float, str, str]] = field(default_factory=list)
    """(when, variant, reason) of each exhausted mark (tokenscale on the mix only)."""
    timeline: list[MixPoint] = field(default_factory=list)


def replay_scaled_mix(
    engines: Sequence[VariantEngine],
    trace: Trace,
    spec: InferenceServiceSpec,
    sizer: Sizer,
    routing: SimRouting,
    opts: MixScaleOptions = MixScaleOptions(),
    stockouts: Sequence[GpuStockout] = (),
    timeline: bool = False,
    give_up_misses: int | None = None,
) -> ScaledMixRun:
    """Replay ``trace`` on a mixed fleet that starts at ``sizer.initial()`` (ready) and is
    sized by ``sizer`` at every decision (module docstring). With ``give_up_misses`` it stops
    once more requests than that missed the SLOs or were rejected; such a result says
    ``unfinished=-1`` and undercounts attainment."""
    rec = Recorder()
    fleet = MixedFleet(engines, rec, routing, opts.cold_start_s, sizer.initial(), stockouts)
    scrapes: deque[Scrape] = deque(
        maxlen=math.ceil(max(opts.rate_window_s, opts.gauge_window_s) / opts.scrape_interval_s) + 2
    )
    arrivals, end_t = trace.requests, trace.duration_s
    peak = fleet.asked()
    points: list[MixPoint] = []
    i, events, misses, judged = 0, 0, 0, 0
    t_scrape, t_decide = 0.0, opts.decision_interval_s
    while True:
        t = min(
            arrivals[i].arrival_s if i < len(arrivals) else math.inf,
            fleet.next_event_s(),
            t_scrape,
            t_decide,
            end_t,
        )
        fleet.advance(t)
        while i < len(arrivals) and arrivals[i].arrival_s <= t:
            r = arrivals[i]
            fleet.route(
                SimRequest(
                    r.arrival_s, max(r.input_tokens, 1), max(r.output_tokens, 1), r.prefix_blocks
                ),
                t,
            )
            i += 1
        if t >= t_scrape:
            scrapes.append(fleet.scrape(t))
            t_scrape += opts.scrape_interval_s
        if t >= t_decide:
            snap = snapshot_at(scrapes, t, rec, opts.gauge_window_s, opts.rate_window_s)
            snap = with_demand(snap, scrapes, t, spec, opts.gauge_window_s)
            wanted = sizer.counts(t, snap, fleet.variant_pods(), fleet.lead_time_s())
            events += fleet.set_counts(wanted, t) > 0
            asked = fleet.asked()
            peak = {n: max(peak[n], asked[n]) for n in peak}
            if timeline:
                points.append(
                    MixPoint(
                        t, asked, fleet.in_phase("ready"), fleet.in_phase("pending"),
                        sizer.last_reason,
                    )
                )  # fmt: skip
            t_decide += opts.decision_interval_s
            if give_up_misses is not None:
                misses += sum(1 for o in rec.outcomes[judged:] if not meets(o, spec.slo))
                judged = len(rec.outcomes)
                if misses + fleet.rejected > give_up_misses:
                    run = _summary(
                        sizer, fleet, rec, engines, list(fleet.gpu_seconds), trace, spec,
                        routing, peak, events, points,
                    )  # fmt: skip
                    return replace(run, unfinished=-1)
        if t >= end_t:
            break
    gpu_seconds = list(fleet.gpu_seconds)
    drain_end = end_t + opts.drain_limit_s
    while fleet.in_flight() and t < drain_end:
        t = min(fleet.next_event_s(), drain_end)
        fleet.advance(t)
    return _summary(
        sizer, fleet, rec, engines, gpu_seconds, trace, spec, routing, peak, events, points
    )


def _summary(
    sizer: Sizer,
    fleet: MixedFleet,
    rec: Recorder,
    engines: Sequence[VariantEngine],
    gpu_seconds: list[float],
    trace: Trace,
    spec: InferenceServiceSpec,
    routing: SimRouting,
    peak: dict[str, int],
    events: int,
    points: list[MixPoint],
) -> ScaledMixRun:
    outs = rec.outcomes
    total = len(trace.requests)
    met = sum(1 for o in outs if meets(o, spec.slo))
    by_variant = {e.name: s / 3600.0 for e, s in zip(engines, gpu_seconds, strict=True)}
    used = [e for e in engines if by_variant[e.name] > 0]
    priced = all(e.gpu_hour_price is not None for e in used)
    cost = sum(by_variant[e.name] * (e.gpu_hour_price or 0.0) for e in used)
    ttfts = [o.ttft_s for o in outs]
    tpots = [o.tpot_s for o in outs if o.output_tokens > 1]
    return ScaledMixRun(
        policy=sizer.name,
        routing=routing,
        requests=total,
        rejected=fleet.rejected,
        unfinished=fleet.in_flight(),
        slo_attainment=met / total if total else 1.0,
        ttft_p99_s=percentile(ttfts, 0.99) if ttfts else 0.0,
        tpot_p99_s=percentile(tpots, 0.99) if tpots else 0.0,
        gpu_hours=sum(by_variant.values()),
        cost=cost if priced else None,
        gpu_hours_by_variant=by_variant,
        replicas_max=peak,
        scale_events=events,
        marked=list(getattr(sizer, "marked", [])),
        timeline=points,
    )


def best_static_mix(
    engines: Sequence[VariantEngine],
    trace: Trace,
    spec: InferenceServiceSpec,
    routing: SimRouting,
    max_replicas: Mapping[str, int],
    target: float = 0.99,
) -> ScaledMixRun | None:
    """The cheapest fixed fleet (ready from the start) whose replay meets the SLOs for at
    least ``target`` of requests: for every count of every variant but the last (within
    ``max_replicas``), the fewest of the last (doubling from below, then bisection; attainment
    grows with it), skipping
    prefixes already dearer than the best found. Cost is price-weighted GPU-hours (GPU-hours
    when a variant has no price). None when no fleet within the bounds meets ``target``."""
    names = [e.name for e in engines]
    price = {
        e.name: (e.gpu_hour_price if e.gpu_hour_price is not None else 1.0) * e.gpus_per_replica
        for e in engines
    }
    best: ScaledMixRun | None = None
    best_cost = math.inf
    last = names[-1]

    # a probe gives up once it cannot reach ``target``: more misses than (1 − target) × requests
    allowed_misses = math.floor((1.0 - target) * len(trace.requests))

    def replay(counts: dict[str, int]) -> ScaledMixRun:
        return replay_scaled_mix(
            engines,
            trace,
            spec,
            StaticMix(counts, "best static mix"),
            routing,
            give_up_misses=allowed_misses,
        )

    def prefixes(k: int) -> list[dict[str, int]]:
        if k == 0:
            return [{}]
        return [
            {**p, names[k - 1]: n}
            for p in prefixes(k - 1)
            for n in range(max_replicas.get(names[k - 1], 0) + 1)
        ]

    for head in prefixes(len(names) - 1):
        fixed_cost = sum(price[n] * c for n, c in head.items())
        if fixed_cost >= best_cost:
            continue
        lo, most = (0 if any(head.values()) else 1), max_replicas.get(last, 0)
        if most < lo:
            continue
        # doubling from below (a fleet that misses gives up early), then bisection
        hi, found = lo, replay({**head, last: lo})
        while found.slo_attainment < target and hi < most:
            lo, hi = hi + 1, min(most, max(1, 2 * hi))
            found = replay({**head, last: hi})
        if found.slo_attainment < target:
            continue
        while lo < hi:
            mid = (lo + hi) // 2
            r = replay({**head, last: mid})
            if r.slo_attainment >= target:
                hi, found = mid, r
            else:
                lo = mid + 1
        cost = fixed_cost + price[last] * hi
        if cost < best_cost:
            best, best_cost = found, cost
    return best  # a probe meeting ``target`` never gave up: its figures are whole
