"""A fleet of several GPU variants whose counts change, with Kubernetes-like pod lifecycle.

Each replica is its own simulated engine with its variant's timing model, KV pool and flags
(``simulation/mixed.py``'s :class:`~tokenscale.simulation.mixed.VariantEngine`), routed by
the same :class:`~tokenscale.simulation.mixed.Router` (round-robin: a plain Service;
least-loaded: a load-aware gateway). A replica is:

- **pending**: asked for while its variant is stocked out (:class:`GpuStockout`): the
  scheduler cannot place it, so it holds no GPU and serves nothing; it reports as
  unschedulable since its creation. When the stockout ends it is placed and starts.
- **starting**: placed; holds its GPUs, serves after ``cold_start_s``.
- **ready**: receives requests.
- **draining**: taken away; receives nothing, finishes what it holds, then releases its GPUs.

Per variant, a lower count removes pending replicas first (newest first), then starting ones
(newest first), then drains the least-loaded ready ones — the order a ReplicaSet deletes pods
in (unscheduled, then not ready, then ready). Replicas placed before a stockout keep running.
GPU-seconds (and cost, at each variant's price) accumulate for every placed replica (starting,
ready or draining). A request longer than the serving replica's max model len is rejected.
"""

import math
import statistics
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from tokenscale.scaling.stockout import VariantPod
from tokenscale.simulation.fleet import LEAD_TIME_SAMPLES, launch_lead_times
from tokenscale.simulation.mixed import Router, SimRouting, VariantEngine
from tokenscale.simulation.observe import Scrape, scrape
from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import Replica, SimRequest

Phase = Literal["pending", "starting", "ready", "draining"]


@dataclass(frozen=True)
class GpuStockout:
    """From ``from_s`` until ``until_s`` no new replica of ``variant`` can be placed."""

    variant: str
    from_s: float
    until_s: float = math.inf

    def covers(self, t: float) -> bool:
        return self.from_s <= t < self.until_s


@dataclass(eq=False)
class MixPod:
    variant: int
    replica: Replica
    phase: Phase
    created_s: float
    ready_at_s: float
    """When it serves (infinity while pending)."""
    pending_since_s: float | None = None


class MixedFleet:
    def __init__(
        self,
        engines: Sequence[VariantEngine],
        rec: Recorder,
        routing: SimRouting,
        cold_start_s: float,
        initial: Mapping[str, int],
        stockouts: Sequence[GpuStockout] = (),
        now: float = 0.0,
    ) -> None:
        names = {e.name for e in engines}
        unknown = [s.variant for s in stockouts if s.variant not in names]
        if unknown:
            raise ValueError(
                f"stockout of {', '.join(unknown)}: no such variant; the variants are "
                + ", ".join(sorted(names))
            )
        self.engines = list(engines)
        self.rec = rec
        self.router = Router(self.engines, routing)
        self.cold_start_s = cold_start_s
        self.stockouts = tuple(stockouts)
        self.pods: list[MixPod] = [
            MixPod(i, Replica(e.cfg, rec, now), "ready", now, now)
            for i, e in enumerate(self.engines)
            for _ in range(initial.get(e.name, 0))
        ]
        self.held: deque[SimRequest] = deque()
        self.gpu_seconds = [0.0 for _ in self.engines]
        self.rejected = 0
        self.routed = [0 for _ in self.engines]
        self.lead_times_s: deque[float] = deque(
            launch_lead_times(len(self.pods), cold_start_s), maxlen=LEAD_TIME_SAMPLES
        )
        self._t = now

    # -- counts ---------------------------------------------------------------------------------
    def asked(self) -> dict[str, int]:
        """Replicas asked for per variant (pending + starting + ready)."""
        out = {e.name: 0 for e in self.engines}
        for p in self.pods:
            if p.phase != "draining":
                out[self.engines[p.variant].name] += 1
        return out

    def in_phase(self, phase: Phase) -> dict[str, int]:
        out = {e.name: 0 for e in self.engines}
        for p in self.pods:
            if p.phase == phase:
                out[self.engines[p.variant].name] += 1
        return out

    def variant_pods(self) -> list[VariantPod]:
        """The pods as the operator reads them: placed, or unschedulable since their creation;
        draining (terminating) pods left out."""
        return [
            VariantPod(self.engines[p.variant].name, p.pending_since_s, "0 nodes have the GPU")
            for p in self.pods
            if p.phase != "draining"
        ]

    def lead_time_s(self) -> float | None:
        """Median creation→Ready time of the last replicas started (None: none yet)."""
        return statistics.median(self.lead_times_s) if self.lead_times_s else None

    def placeable(self, variant: int, t: float) -> bool:
        name = self.engines[variant].name
        return not any(s.variant == name and s.covers(t) for s in self.stockouts)

    def next_event_s(self) -> float:
        """When a starting replica serves or a pending one can be placed (infinity: never)."""
        out = math.inf
        for p in self.pods:
            if p.phase == "starting":
                out = min(out, p.ready_at_s)
            elif p.phase == "pending":
                name = self.engines[p.variant].name
                ends = [
                    s.until_s for s in self.stockouts if s.variant == name and s.until_s > self._t
                ]
                out = min(out, min(ends, default=math.inf))
        return out

    # -- time -----------------------------------------------------------------------------------
    def advance(self, t: float) -> None:
        """Run every engine up to ``t``; place pending replicas whose stockout ended; promote
        started ones; release drained ones; route held requests."""
        if t < self._t:
            return
        for p in self.pods:
            if p.phase != "pending":
                self.gpu_seconds[p.variant] += self.engines[p.variant].gpus_per_replica * (
                    t - self._t
                )
        self._t = t
        for p in self.pods:
            if p.phase == "pending" and self.placeable(p.variant, t):
                p.phase, p.pending_since_s, p.ready_at_s = "starting", None, t + self.cold_start_s
            if p.phase == "starting":
                if p.ready_at_s <= t:
                    p.phase = "ready"
                    self.lead_times_s.append(p.ready_at_s - p.created_s)
                    p.replica.clock = max(p.replica.clock, p.ready_at_s)
            elif p.phase != "pending":
                p.replica.run_until(t)
        self.pods = [p for p in self.pods if not (p.phase == "draining" and p.replica.idle)]
        while self.held and any(p.phase == "ready" for p in self.pods):
            self.route(self.held.popleft(), t)

    def route(self, req: SimRequest, now: float) -> None:
        chosen = self.router.choose([p for p in self.pods if p.phase == "ready"])
        if chosen is None:
            self.held.append(req)
            return
        if req.input_tokens + req.output_tokens > self.engines[chosen.variant].max_model_len:
            self.rejected += 1
            return
        self.routed[chosen.variant] += 1
        chosen.replica.add(req, now)

    # -- scaling --------------------------------------------------------------------------------
    def set_counts(self, counts: Mapping[str, int], now: float) -> int:
        """Ask for ``counts[variant]`` replicas of each variant (module docstring); returns
        how many replicas were added and taken away in all."""
        moved = 0
        for i, e in enumerate(self.engines):
            mine = [p for p in self.pods if p.variant == i and p.phase != "draining"]
            delta = max(0, counts.get(e.name, 0)) - len(mine)
            moved += abs(delta)
            for _ in range(delta):
                if self.placeable(i, now):
                    pod = MixPod(i, Replica(e.cfg, self.rec, now), "starting", now, now)
                    pod.ready_at_s = now + self.cold_start_s
                else:
                    pod = MixPod(i, Replica(e.cfg, self.rec, now), "pending", now, math.inf, now)
                self.pods.append(pod)
            remove = max(0, -delta)
            for phase in ("pending", "starting"):
                gone = sorted((p for p in mine if p.phase == phase), key=lambda p: -p.created_s)
                for p in gone[:remove]:
                    self.pods.remove(p)
                    remove -= 1
            ready = sorted((p for p in mine if p.phase == "ready"), key=lambda p: p.replica.load)
            for p in ready[:remove]:
                p.phase = "draining"
        return moved

    # -- metrics --------------------------------------------------------------------------------
    def scrape(self, now: float) -> Scrape:
        """Every serving engine's gauges (ready and draining: their pods answer scrapes) and
        the fleet's counters. The KV blocks per engine are the mean over those engines (the
        snapshot's block totals feed the diagnosis text only)."""
        serving = [p for p in self.pods if p.phase in ("ready", "draining")]
        engines = [
            (len(p.replica.waiting), len(p.replica.running), p.replica.kv_usage) for p in serving
        ]
        blocks = (
            round(sum(self.engines[p.variant].cfg.kv_blocks for p in serving) / len(serving))
            if serving
            else 0
        )
        return scrape(now, engines, blocks, self.rec, len(self.held))

    def in_flight(self) -> int:
        return len(self.held) + sum(p.replica.load for p in self.pods)
