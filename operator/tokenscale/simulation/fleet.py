"""The one simulated fleet: pools of replicas with Kubernetes-like pod lifecycle.

A fleet holds one or more **pools** (:class:`PoolEngine`: one pool of one GPU type; a GPU
mix's variants; a prefill and a decode pool). Each replica is its own simulated engine with its
pool's timing model, KV pool and vLLM flags (``replica.py``). A replica is:

- **pending**: asked for while its pool's GPU type is stocked out (:class:`GpuStockout`): the
  scheduler cannot place it, so it holds no GPU and serves nothing; it reports as
  unschedulable since its creation. When the stockout ends it is placed and starts.
- **starting**: placed; holds its GPUs from the moment it is created and serves only after
  ``cold_start_s`` (image pull, weight load, CUDA graphs).
- **ready**: receives requests.
- **draining**: taken away; receives nothing, finishes what it holds, then releases its GPUs.

Routing (``routing``): ``least-loaded`` (a load-aware gateway) sends each arrival to the ready
replica with the fewest requests (waiting + running) relative to its pool's ``max_num_seqs``,
and on a tie to the engine that is free now, lowest index after that; ``round-robin`` (a plain
Service) to the ready replicas in turn. With none ready the gateway holds the request. A
request longer than the serving replica's max model len is rejected (vLLM answers 400).

Per pool, a lower count removes pending replicas first (newest first), then starting ones
(newest first), then drains the least-loaded ready ones — the order a ReplicaSet deletes pods
in (unscheduled, then not ready, then ready). GPU-seconds accumulate per pool for every placed
replica (starting, ready or draining). Each replica's creation→Ready time is recorded, as the
operator measures it from its pods (``lead_time_s``: the median of the last few); the launch
fleet counts too (:func:`launch_lead_times`).
"""

import heapq
import math
import statistics
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from tokenscale.scaling.stockout import VariantPod
from tokenscale.simulation.observe import Scrape, scrape
from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import Replica, ReplicaConfig, SimRequest

Phase = Literal["pending", "starting", "ready", "draining"]
SimRouting = Literal["round-robin", "least-loaded"]

LEAD_TIME_SAMPLES = 5


#: How long the gateway holds a sheddable request before dropping it (an assumption standing
#: for flow control's request TTL, which its deployment configures).
HOLD_TTL_S = 60.0


def launch_lead_times(replicas: int, cold_start_s: float) -> list[float]:
    """The lead times the launch fleet's pods show the operator from the first read: each
    took the cold start from creation to Ready before the trace began (none without a cold
    start: a replay with no cold start, such as the oracles', has nothing to measure)."""
    if cold_start_s <= 0:
        return []
    return [cold_start_s] * min(max(replicas, 0), LEAD_TIME_SAMPLES)


@dataclass(frozen=True)
class PoolEngine:
    """What one pool's replicas run, and what one replica costs."""

    name: str
    cfg: ReplicaConfig
    gpus_per_replica: int
    gpu_hour_price: float | None = None
    max_model_len: int | None = None
    """Longer requests are rejected (None: the caller judges them before routing)."""


@dataclass(frozen=True)
class Handoff:
    """Prefill/decode pools: every request a ``source`` replica finishes (its prefill, as a
    one-token request) moves, ``transfer_s(prompt tokens)`` later (the KV transfer), to the
    ``target`` pool's least-loaded ready replica, which admits it with the prompt's KV already
    computed (like a prefix-cache hit) and generates every output token, the first included."""

    source: int
    target: int
    transfer_s: Callable[[int], float]


@dataclass(frozen=True)
class GpuStockout:
    """From ``from_s`` until ``until_s`` no new replica of pool ``variant`` can be placed."""

    variant: str
    from_s: float
    until_s: float = math.inf

    def covers(self, t: float) -> bool:
        return self.from_s <= t < self.until_s


@dataclass(eq=False)
class Member:
    replica: Replica
    ready_at_s: float
    """When it serves (infinity while pending)."""
    phase: Phase
    created_s: float = 0.0
    pool: int = 0
    pending_since_s: float | None = None


class Fleet:
    def __init__(
        self,
        engines: Sequence[PoolEngine],
        recs: Sequence[Recorder],
        cold_start_s: float,
        initial: Sequence[int],
        routing: SimRouting = "least-loaded",
        stockouts: Sequence[GpuStockout] = (),
        now: float = 0.0,
        handoff: Handoff | None = None,
    ) -> None:
        names = {e.name for e in engines}
        unknown = [s.variant for s in stockouts if s.variant not in names]
        if unknown:
            raise ValueError(
                f"stockout of {', '.join(unknown)}: no such variant; the variants are "
                + ", ".join(sorted(names))
            )
        self.engines = list(engines)
        self.recs = list(recs)
        self.routing = routing
        self.cold_start_s = cold_start_s
        self.stockouts = tuple(stockouts)
        self.handoff = handoff
        self._handed: list[SimRequest] = []
        self._transit: list[tuple[float, int, SimRequest]] = []
        self._outputs: dict[int, int] = {}
        self._order = 0
        self.members: list[Member] = [
            Member(self._replica(i, now), now, "ready", now, i)
            for i in range(len(self.engines))
            for _ in range(initial[i])
        ]
        self.held: deque[tuple[SimRequest, int | None]] = deque()
        """Requests the gateway holds because no replica (of their pool) is ready."""
        self.sheddable: deque[SimRequest] = deque()
        """Sheddable requests flow control holds while the fleet is saturated (classes)."""
        self.hold_batch: float | None = None
        """The load per engine at which the gateway holds sheddable requests (None: never)."""
        self.shed: list[int] = []
        """The priority of each held sheddable request dropped after :data:`HOLD_TTL_S`."""
        self.gpu_seconds_by_pool = [0.0 for _ in self.engines]
        self.rejected = 0
        self.routed = [0 for _ in self.engines]
        self.target = sum(initial)
        """Replicas asked for at the last decision (all pools)."""
        self.lead_times_s: deque[float] = deque(
            launch_lead_times(len(self.members), cold_start_s), maxlen=LEAD_TIME_SAMPLES
        )
        self._turn = 0
        self._t = [now for _ in self.engines]

    @classmethod
    def one_pool(
        cls,
        cfg: ReplicaConfig,
        rec: Recorder,
        gpus_per_replica: int,
        cold_start_s: float,
        initial_ready: int,
    ) -> "Fleet":
        """One pool of one GPU type behind a least-loaded gateway."""
        return cls(
            [PoolEngine("serve", cfg, gpus_per_replica)], [rec], cold_start_s, [initial_ready]
        )

    # -- counts ---------------------------------------------------------------------------------
    @property
    def gpu_seconds(self) -> float:
        return sum(self.gpu_seconds_by_pool)

    @property
    def ready(self) -> list[Member]:
        return [m for m in self.members if m.phase == "ready"]

    @property
    def active(self) -> int:
        """Replicas asked for and not draining (pending + starting + ready)."""
        return sum(1 for m in self.members if m.phase != "draining")

    def count(self, phase: Phase, pool: int | None = None) -> int:
        return sum(1 for m in self.members if m.phase == phase and pool in (None, m.pool))

    def in_phase(self, phase: Phase) -> dict[str, int]:
        return {e.name: self.count(phase, i) for i, e in enumerate(self.engines)}

    def asked(self) -> dict[str, int]:
        """Replicas asked for per pool (pending + starting + ready)."""
        out = {e.name: 0 for e in self.engines}
        for m in self.members:
            if m.phase != "draining":
                out[self.engines[m.pool].name] += 1
        return out

    def variant_pods(self) -> list[VariantPod]:
        """The pods as the operator reads them: placed, or unschedulable since their creation;
        draining (terminating) pods left out."""
        return [
            VariantPod(self.engines[m.pool].name, m.pending_since_s, "0 nodes have the GPU")
            for m in self.members
            if m.phase != "draining"
        ]

    def lead_time_s(self) -> float | None:
        """Median creation→Ready time of the last replicas started (None: none yet)."""
        return statistics.median(self.lead_times_s) if self.lead_times_s else None

    def placeable(self, pool: int, t: float) -> bool:
        name = self.engines[pool].name
        return not any(s.variant == name and s.covers(t) for s in self.stockouts)

    def next_event_s(self) -> float:
        """When a starting replica serves or a pending one can be placed (infinity: never)."""
        out = math.inf
        for m in self.members:
            if m.phase == "starting":
                out = min(out, m.ready_at_s)
            elif m.phase == "pending":
                name = self.engines[m.pool].name
                ends = [
                    s.until_s
                    for s in self.stockouts
                    if s.variant == name and s.until_s > self._t[m.pool]
                ]
                out = min(out, min(ends, default=math.inf))
        return min(out, self._transit[0][0]) if self._transit else out

    # -- time -----------------------------------------------------------------------------------
    def advance(self, t: float) -> None:
        """Run every engine up to ``t``; place pending replicas whose stockout ended; promote
        started ones; release drained ones; route held requests; land KV hand-offs."""
        h = self.handoff
        if h is None:
            self._advance(t, range(len(self.engines)))
            return
        self._advance(t, [i for i in range(len(self.engines)) if i != h.target])
        for r in self._handed:
            self._order += 1
            landing = r.last_token_s + h.transfer_s(r.input_tokens)
            heapq.heappush(self._transit, (landing, self._order, r))
        self._handed.clear()
        while self._transit and self._transit[0][0] <= t:
            at, _, r = heapq.heappop(self._transit)
            self._advance(at, [h.target])
            out = self._outputs.pop(id(r))
            moved = SimRequest(r.arrival_s, r.input_tokens, out, remote_tokens=r.input_tokens)
            self.route(moved, at, h.target)
        self._advance(t, [h.target])

    def _advance(self, t: float, pools: Sequence[int]) -> None:
        pools = [i for i in pools if t >= self._t[i]]
        if not pools:  # the past: nothing to run
            return
        placed = [0 for _ in self.engines]
        for m in self.members:
            placed[m.pool] += m.phase != "pending"
        for i in pools:
            gpus = self.engines[i].gpus_per_replica
            self.gpu_seconds_by_pool[i] += placed[i] * gpus * (t - self._t[i])
            self._t[i] = t
        for m in self.members:
            if m.pool not in pools:
                continue
            if m.phase == "pending" and self.placeable(m.pool, t):
                m.phase, m.pending_since_s, m.ready_at_s = "starting", None, t + self.cold_start_s
            if m.phase == "starting":
                if m.ready_at_s <= t:
                    m.phase = "ready"
                    self.lead_times_s.append(m.ready_at_s - m.created_s)
                    m.replica.clock = max(m.replica.clock, m.ready_at_s)
            elif m.phase != "pending":
                m.replica.run_until(t)
        self.members = [
            m
            for m in self.members
            if not (m.phase == "draining" and m.pool in pools and m.replica.idle)
        ]
        if self.held and any(m.phase == "ready" for m in self.members):
            waiting = list(self.held)
            self.held.clear()
            for req, pool in waiting:
                self.route(req, t, pool)
        self._release(t)

    def admit_sheddable(self, req: SimRequest, now: float) -> None:
        """A sheddable request: held behind earlier held ones, or while every engine carries
        ``hold_batch``; else routed."""
        if self.hold_batch is not None and (self.sheddable or self.saturated(self.hold_batch)):
            self.sheddable.append(req)
            return
        self.route(req, now)

    def _release(self, t: float) -> None:
        """Drop held sheddable requests older than the TTL; route the others while there is
        room."""
        while self.sheddable and self.sheddable[0].arrival_s + HOLD_TTL_S < t:
            self.shed.append(self.sheddable.popleft().priority)
        batch = self.hold_batch
        while self.sheddable and batch is not None and not self.saturated(batch):
            self.route(self.sheddable.popleft(), t)

    def saturated(self, batch: float) -> bool:
        """Every ready engine holds at least ``batch`` requests (running and waiting)."""
        ready = self.ready
        return bool(ready) and all(m.replica.load >= batch for m in ready)

    def admit_prefill(self, req: SimRequest, output_tokens: int, now: float) -> None:
        """Prefill/decode pools: ``req`` (a one-token request) to the prefill pool; its
        ``output_tokens`` are generated by the decode pool after the hand-off."""
        if self.handoff is None:
            raise ValueError("admit_prefill needs a fleet with a hand-off")
        self._outputs[id(req)] = output_tokens
        self.route(req, now, self.handoff.source)

    def route(self, req: SimRequest, now: float, pool: int | None = None) -> None:
        """Send one request to a ready replica (of ``pool`` only, when given)."""
        ready = [m for m in self.members if m.phase == "ready" and pool in (None, m.pool)]
        chosen = self._choose(ready, now)
        if chosen is None:
            self.held.append((req, pool))
            return
        limit = self.engines[chosen.pool].max_model_len
        if limit is not None and req.input_tokens + req.output_tokens > limit:
            self.rejected += 1
            return
        self.routed[chosen.pool] += 1
        chosen.replica.add(req, now)

    def _choose(self, ready: list[Member], now: float) -> Member | None:
        if not ready:
            return None
        if self.routing == "round-robin":
            chosen = ready[self._turn % len(ready)]
            self._turn += 1
            return chosen
        best = ready[0]
        for m in ready[1:]:
            if self._prefers(best, m, now):
                best = m
        return best

    def _prefers(self, a: Member, b: Member, now: float) -> bool:
        """Whether the gateway prefers ``b`` to ``a``: fewer requests relative to its pool's
        sequences (compared exactly, by cross-multiplying), and on a tie the engine that is
        free now (a step still in flight at ``now`` keeps an engine busy although the requests
        it finishes have already left its queues)."""
        seqs_a = self.engines[a.pool].cfg.max_num_seqs
        seqs_b = self.engines[b.pool].cfg.max_num_seqs
        load_a, load_b = a.replica.load * seqs_b, b.replica.load * seqs_a
        if load_a != load_b:
            return load_b < load_a
        return a.replica.clock > now >= b.replica.clock

    # -- scaling --------------------------------------------------------------------------------
    def set_target(self, n: int, now: float) -> int:
        """One pool: ask for ``n`` replicas; returns the change in replicas asked for."""
        return self.set_counts({self.engines[0].name: n}, now)[0]

    def set_counts(self, counts: Mapping[str, int], now: float) -> list[int]:
        """Ask for ``counts[pool]`` replicas of each pool (none of a pool not named; module
        docstring); returns the change in replicas asked for, per pool."""
        deltas = []
        for i, e in enumerate(self.engines):
            mine = [m for m in self.members if m.pool == i and m.phase != "draining"]
            delta = max(0, counts.get(e.name, 0)) - len(mine)
            deltas.append(delta)
            for _ in range(delta):
                self.members.append(self._new_member(i, now))
            remove = max(0, -delta)
            for phase in ("pending", "starting"):
                gone = sorted((m for m in mine if m.phase == phase), key=lambda m: -m.created_s)
                for m in gone[:remove]:
                    self.members.remove(m)
                    remove -= 1
            ready = sorted((m for m in mine if m.phase == "ready"), key=lambda m: m.replica.load)
            for m in ready[:remove]:
                m.phase = "draining"
        self.target = self.active
        return deltas

    def _replica(self, pool: int, now: float) -> Replica:
        replica = Replica(self.engines[pool].cfg, self.recs[pool], now)
        if self.handoff is not None and pool == self.handoff.source:
            replica.finished = self._handed
        return replica

    def _new_member(self, pool: int, now: float) -> Member:
        replica = self._replica(pool, now)
        if self.placeable(pool, now):
            return Member(replica, now + self.cold_start_s, "starting", now, pool)
        return Member(replica, math.inf, "pending", now, pool, now)

    # -- metrics --------------------------------------------------------------------------------
    def scrape(self, now: float, pools: Sequence[int] | None = None) -> Scrape:
        """Every serving engine's gauges (ready and draining: their pods answer scrapes) of
        ``pools`` (all when None), and those pools' counters summed. The KV blocks per engine
        are the mean over those engines (the snapshot's block totals feed the diagnosis text
        only)."""
        chosen = range(len(self.engines)) if pools is None else pools
        serving = [m for m in self.members if m.phase in ("ready", "draining") and m.pool in chosen]
        engines = [
            (m.replica.waiting_reported, len(m.replica.running), m.replica.kv_usage)
            for m in serving
        ]
        blocks = (
            round(sum(self.engines[m.pool].cfg.kv_blocks for m in serving) / len(serving))
            if serving
            else self.engines[chosen[0]].cfg.kv_blocks
        )
        recs: list[Recorder] = []
        for i in chosen:  # pools sharing a recorder count once
            if all(r is not self.recs[i] for r in recs):
                recs.append(self.recs[i])
        held = sum(1 for _, p in self.held if p is None or p in chosen) + len(self.sheddable)
        lora = (
            [m.replica.lora_state() for m in serving]
            if any(self.engines[i].cfg.lora for i in chosen)
            else None
        )
        return scrape(now, engines, blocks, recs, held, len(self.sheddable), lora=lora)

    def in_flight(self) -> int:
        moving = len(self._handed) + len(self._transit)
        held = len(self.held) + len(self.sheddable)
        return held + moving + sum(m.replica.load for m in self.members)
