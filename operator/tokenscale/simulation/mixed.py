"""A fixed fleet of several GPU variants, replayed against a trace.

Each replica is its own simulated engine (``replica.py``) with its variant's timing model, KV
pool and vLLM flags (``replica_config`` of the variant's own plan). Routing:

- ``round-robin``: a plain Service; arrivals go to the ready replicas in turn, whatever their
  speed or load.
- ``least-loaded``: a load-aware gateway; each arrival goes to the replica with the fewest
  requests (waiting + running) relative to its variant's ``max_num_seqs`` share of the fleet's
  sequences, lowest index on ties — so a replica that holds more sequences takes more.

A request longer than the serving replica's max model len is rejected (vLLM answers 400).
Every replica is ready from the start (no cold start) unless a :class:`Stockout` takes some
replicas of one variant away at ``at_s`` and adds replacements of others, ready
``cold_start_s`` later. GPU cost counts every replica from when it is asked for until the
trace ends (a replica taken away stops counting when it is taken).
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeVar

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.slo import Slo
from tokenscale.planning import Plan
from tokenscale.planning.variants import variant_price, variant_spec
from tokenscale.simulation.recorder import Outcome, Recorder
from tokenscale.simulation.replica import Replica, ReplicaConfig, SimRequest, replica_config
from tokenscale.simulation.run import SimulationError
from tokenscale.simulation.trace import Trace, percentile

SimRouting = Literal["round-robin", "least-loaded"]


@dataclass(frozen=True)
class VariantEngine:
    """One variant's engine and what one replica of it costs."""

    name: str
    cfg: ReplicaConfig
    gpus_per_replica: int
    gpu_hour_price: float | None
    max_model_len: int


def mix_engines(
    spec: InferenceServiceSpec, plan: Plan, block_tokens: int, mismatch: float = 1.0
) -> list[VariantEngine]:
    """One engine per variant of a mix ``plan`` that can serve (its own plan has a count), in
    ``spec.hardware.variants`` order; ``mismatch`` is the truth's speed over the model's."""
    variants = spec.hardware.variants
    if variants is None or len(plan.variant_plans) != len(variants):
        raise SimulationError("not a mix plan: spec.hardware.variants is not set")
    engines = []
    for v, own in zip(variants, plan.variant_plans, strict=True):
        if own.replicas is None or own.kv_capacity_blocks_per_replica <= 0:
            continue
        vspec = variant_spec(spec, v)
        engines.append(
            VariantEngine(
                name=v.resolved_name,
                cfg=replica_config(vspec, own, block_tokens, mismatch),
                gpus_per_replica=own.gpus_per_replica,
                gpu_hour_price=variant_price(spec, v),
                max_model_len=own.max_model_len,
            )
        )
    return engines


@dataclass(frozen=True)
class Stockout:
    """At ``at_s`` ``lost`` replicas of variant ``variant`` go away (their requests finish
    first: they stop receiving new ones) and ``replacements[name]`` replicas of other variants
    are asked for, serving ``cold_start_s`` later."""

    at_s: float
    variant: str
    lost: int
    replacements: dict[str, int]
    cold_start_s: float = 180.0


@dataclass(eq=False)
class _Member:
    variant: int
    replica: Replica
    ready_at_s: float
    asked_s: float
    gone_s: float = math.inf


@dataclass(frozen=True)
class VariantOutcome:
    name: str
    replicas: int
    requests: int
    attainment: float


@dataclass(frozen=True)
class MixedRun:
    """What one replay of a fixed mixed fleet measured."""

    counts: dict[str, int]
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
    cost_per_hour: float | None
    per_variant: list[VariantOutcome] = field(default_factory=list)


def _meets(o: Outcome, slo: Slo) -> bool:
    return (slo.ttft_p99_seconds is None or o.ttft_s <= slo.ttft_p99_seconds) and (
        slo.tpot_p99_seconds is None or o.output_tokens <= 1 or o.tpot_s <= slo.tpot_p99_seconds
    )


class Routed(Protocol):
    """A replica the router may pick: its variant's index and its engine."""

    variant: int
    replica: Replica


R = TypeVar("R", bound=Routed)


class Router:
    """Picks the replica an arrival goes to (module docstring's routing)."""

    def __init__(self, engines: Sequence[VariantEngine], routing: SimRouting) -> None:
        self.engines = engines
        self.routing = routing
        self.turn = 0

    def choose(self, ready: Sequence[R]) -> R | None:
        """One of the ``ready`` replicas (None when there is none)."""
        if not ready:
            return None
        if self.routing == "round-robin":
            chosen = ready[self.turn % len(ready)]
            self.turn += 1
            return chosen
        return min(ready, key=lambda m: m.replica.load / self.engines[m.variant].cfg.max_num_seqs)

    def pick(self, members: list[_Member], now: float) -> _Member | None:
        return self.choose([m for m in members if m.ready_at_s <= now and m.gone_s > now])


def replay_mix(
    engines: Sequence[VariantEngine],
    counts: Sequence[int],
    trace: Trace,
    slo: Slo,
    routing: SimRouting,
    stockout: Stockout | None = None,
    drain_limit_s: float = 3600.0,
) -> MixedRun:
    """Replay ``trace`` on ``counts[i]`` ready replicas of ``engines[i]`` (module docstring)."""
    recs = [Recorder() for _ in engines]
    members = [
        _Member(i, Replica(e.cfg, recs[i], 0.0), 0.0, 0.0)
        for i, e in enumerate(engines)
        for _ in range(counts[i])
    ]
    router = Router(engines, routing)
    by_name = {e.name: i for i, e in enumerate(engines)}
    rejected = 0
    pending: list[SimRequest] = []
    stocked_out = stockout is None
    end_t = trace.duration_s
    routed = [0 for _ in engines]

    def advance(t: float) -> None:
        for m in members:
            if m.ready_at_s <= t:
                m.replica.clock = max(m.replica.clock, m.ready_at_s)
                m.replica.run_until(t)

    def route(req: SimRequest, now: float) -> None:
        nonlocal rejected
        m = router.pick(members, now)
        if m is None:
            pending.append(req)
            return
        if req.input_tokens + req.output_tokens > engines[m.variant].max_model_len:
            rejected += 1
            return
        routed[m.variant] += 1
        m.replica.add(req, now)

    for r in trace.requests:
        now = r.arrival_s
        if not stocked_out and stockout is not None and now >= stockout.at_s:
            _apply_stockout(stockout, members, engines, recs, by_name)
            stocked_out = True
        advance(now)
        if pending:
            waiting, pending[:] = list(pending), []
            for req in waiting:
                route(req, now)
        route(
            SimRequest(now, max(r.input_tokens, 1), max(r.output_tokens, 1), r.prefix_blocks),
            now,
        )
    advance(end_t)
    for m in members:  # no more arrivals: serve what is in flight, up to the drain limit
        if m.ready_at_s <= end_t + drain_limit_s:
            m.replica.clock = max(m.replica.clock, m.ready_at_s)
            m.replica.run_until(end_t + drain_limit_s)
    unfinished = sum(m.replica.load for m in members) + len(pending)
    return _summary(engines, members, recs, routed, trace, slo, routing, rejected, unfinished)


def _apply_stockout(
    s: Stockout,
    members: list[_Member],
    engines: Sequence[VariantEngine],
    recs: list[Recorder],
    by_name: dict[str, int],
) -> None:
    lost = [m for m in members if engines[m.variant].name == s.variant and m.gone_s == math.inf]
    for m in sorted(lost, key=lambda m: m.replica.load)[: s.lost]:
        m.gone_s = s.at_s
    for name, n in s.replacements.items():
        i = by_name[name]
        for _ in range(n):
            ready = s.at_s + s.cold_start_s
            members.append(_Member(i, Replica(engines[i].cfg, recs[i], ready), ready, s.at_s))


def _summary(
    engines: Sequence[VariantEngine],
    members: list[_Member],
    recs: list[Recorder],
    routed: list[int],
    trace: Trace,
    slo: Slo,
    routing: SimRouting,
    rejected: int,
    unfinished: int,
) -> MixedRun:
    end_t = trace.duration_s
    outcomes = [o for rec in recs for o in rec.outcomes]
    total = len(trace.requests)
    met = sum(1 for o in outcomes if _meets(o, slo))
    gpu_hours, cost = 0.0, 0.0
    priced = all(e.gpu_hour_price is not None for e in engines)
    for m in members:
        e = engines[m.variant]
        held_s = max(0.0, min(m.gone_s, end_t) - m.asked_s)
        hours = held_s * e.gpus_per_replica / 3600.0
        gpu_hours += hours
        cost += hours * (e.gpu_hour_price or 0.0)
    counts = {e.name: 0 for e in engines}
    for m in members:
        if m.gone_s == math.inf:
            counts[engines[m.variant].name] += 1
    per_variant = [
        VariantOutcome(
            name=e.name,
            replicas=counts[e.name],
            requests=routed[i],
            attainment=(
                sum(1 for o in recs[i].outcomes if _meets(o, slo)) / routed[i] if routed[i] else 1.0
            ),
        )
        for i, e in enumerate(engines)
    ]
    ttfts = [o.ttft_s for o in outcomes]
    tpots = [o.tpot_s for o in outcomes if o.output_tokens > 1]
    hours = end_t / 3600.0
    return MixedRun(
        counts=counts,
        routing=routing,
        requests=total,
        rejected=rejected,
        unfinished=unfinished,
        slo_attainment=met / total if total else 1.0,
        ttft_p99_s=percentile(ttfts, 0.99) if ttfts else 0.0,
        tpot_p99_s=percentile(tpots, 0.99) if tpots else 0.0,
        gpu_hours=gpu_hours,
        cost=cost if priced else None,
        cost_per_hour=cost / hours if priced and hours > 0 else None,
        per_variant=per_variant,
    )
