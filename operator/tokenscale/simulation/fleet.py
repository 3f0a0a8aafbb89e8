"""A fleet of simulated engines behind a load-aware gateway, with Kubernetes-like lifecycle.

- **Starting**: a replica asked for holds its GPUs from the moment it is created and serves
  only after ``cold_start_s`` (image pull, weight load, CUDA graphs).
- **Ready**: receives requests. The gateway sends each arrival to the ready engine with the
  fewest requests (waiting + running), lowest index on ties; with none ready it holds them.
- **Draining**: a replica taken away stops receiving requests, finishes what it holds, then
  releases its GPUs. Scale-down cancels starting replicas first (newest first), then drains
  the least loaded ready ones.

GPU-seconds accumulate for every replica that holds GPUs (starting, ready or draining).
Each replica's creation→Ready time is recorded, as the operator measures it from its pods
(``lead_time_s``: the median of the last few). The launch fleet counts too
(:func:`launch_lead_times`): on a cluster its pods were created one cold start before they
served, and the operator reads that from them before any scale-up, so the simulated operator
does as well (None only with no launch fleet and no replica started yet).
"""

import statistics
from collections import deque
from dataclasses import dataclass
from math import inf
from typing import Literal

from tokenscale.simulation.observe import Scrape, scrape
from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import Replica, ReplicaConfig, SimRequest

Phase = Literal["starting", "ready", "draining"]


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


@dataclass(eq=False)
class Member:
    replica: Replica
    ready_at_s: float
    phase: Phase
    created_s: float = 0.0


class Fleet:
    def __init__(
        self,
        cfg: ReplicaConfig,
        rec: Recorder,
        gpus_per_replica: int,
        cold_start_s: float,
        initial_ready: int,
        now: float = 0.0,
    ) -> None:
        self.cfg = cfg
        self.rec = rec
        self.gpus_per_replica = gpus_per_replica
        self.cold_start_s = cold_start_s
        self.members: list[Member] = [
            Member(Replica(cfg, rec, now), now, "ready") for _ in range(initial_ready)
        ]
        self.pending: deque[SimRequest] = deque()
        self.held: deque[SimRequest] = deque()
        """Sheddable requests flow control holds while the fleet is saturated (classes)."""
        self.hold_batch: float | None = None
        """The load per engine at which the gateway holds sheddable requests (None: never)."""
        self.shed: list[int] = []
        """The priority of each held request dropped after :data:`HOLD_TTL_S`."""
        self.gpu_seconds = 0.0
        self._t = now
        self.target = initial_ready
        self.lead_times_s: deque[float] = deque(
            launch_lead_times(initial_ready, cold_start_s), maxlen=LEAD_TIME_SAMPLES
        )

    # -- counts ---------------------------------------------------------------------------------
    @property
    def ready(self) -> list[Member]:
        return [m for m in self.members if m.phase == "ready"]

    @property
    def active(self) -> int:
        """Replicas asked for and not draining (starting + ready)."""
        return sum(1 for m in self.members if m.phase != "draining")

    def lead_time_s(self) -> float | None:
        """Median creation→Ready time of the last replicas started (None: none yet)."""
        return statistics.median(self.lead_times_s) if self.lead_times_s else None

    def next_ready_s(self) -> float:
        """When the next starting replica serves (infinity when none is starting)."""
        return min((m.ready_at_s for m in self.members if m.phase == "starting"), default=inf)

    # -- time -----------------------------------------------------------------------------------
    def advance(self, t: float) -> None:
        """Run every engine up to ``t``; promote started replicas; release drained ones."""
        if t < self._t:
            return
        self.gpu_seconds += len(self.members) * self.gpus_per_replica * (t - self._t)
        self._t = t
        for m in self.members:
            if m.phase == "starting":
                if m.ready_at_s <= t:
                    m.phase = "ready"
                    self.lead_times_s.append(m.ready_at_s - m.created_s)
                    m.replica.clock = max(m.replica.clock, m.ready_at_s)
            else:
                m.replica.run_until(t)
        self.members = [m for m in self.members if not (m.phase == "draining" and m.replica.idle)]
        while self.pending and any(m.phase == "ready" for m in self.members):
            self.route(self.pending.popleft(), t)
        self._release(t)

    def admit_sheddable(self, req: SimRequest, now: float) -> None:
        """A sheddable request: held behind earlier held ones, or while every engine carries
        ``hold_batch``; else routed."""
        if self.hold_batch is not None and (self.held or self.saturated(self.hold_batch)):
            self.held.append(req)
            return
        self.route(req, now)

    def _release(self, t: float) -> None:
        """Drop held requests older than the TTL; route the others while there is room."""
        while self.held and self.held[0].arrival_s + HOLD_TTL_S < t:
            self.shed.append(self.held.popleft().priority)
        batch = self.hold_batch
        while self.held and batch is not None and not self.saturated(batch):
            self.route(self.held.popleft(), t)

    def saturated(self, batch: float) -> bool:
        """Every ready engine holds at least ``batch`` requests (running and waiting)."""
        ready = [m for m in self.members if m.phase == "ready"]
        return bool(ready) and all(m.replica.load >= batch for m in ready)

    def route(self, req: SimRequest, now: float) -> None:
        best: Member | None = None
        for m in self.members:
            if m.phase == "ready" and (best is None or _busier(best.replica, m.replica, now)):
                best = m
        if best is None:
            self.pending.append(req)
            return
        best.replica.add(req, now)

    # -- scaling --------------------------------------------------------------------------------
    def set_target(self, n: int, now: float) -> int:
        """Ask for ``n`` replicas; returns the change in replicas asked for."""
        n = max(n, 0)
        delta = n - self.active
        self.target = n
        if delta > 0:
            for _ in range(delta):
                self.members.append(
                    Member(
                        Replica(self.cfg, self.rec, now), now + self.cold_start_s, "starting", now
                    )
                )
        elif delta < 0:
            remove = -delta
            starting = [m for m in self.members if m.phase == "starting"]
            for m in sorted(starting, key=lambda m: -m.ready_at_s)[:remove]:
                self.members.remove(m)
                remove -= 1
            for m in sorted(self.ready, key=lambda m: m.replica.load)[:remove]:
                m.phase = "draining"
        return delta

    # -- metrics --------------------------------------------------------------------------------
    def scrape(self, now: float) -> Scrape:
        answering = [m for m in self.members if m.phase != "starting"]
        engines = [
            (len(m.replica.waiting), len(m.replica.running), m.replica.kv_usage) for m in answering
        ]
        lora = [m.replica.lora_state() for m in answering] if self.cfg.lora else None
        held = len(self.pending) + len(self.held)
        return scrape(now, engines, self.cfg.kv_blocks, self.rec, held, len(self.held), lora=lora)

    def in_flight(self) -> int:
        return len(self.pending) + len(self.held) + sum(m.replica.load for m in self.members)


def _busier(a: Replica, b: Replica, now: float) -> bool:
    """Whether the router prefers ``b`` to ``a``: fewer requests waiting and running, and on a
    tie the engine that is free now (a step still in flight at ``now`` keeps an engine busy
    although the requests it finishes have already left its queues)."""
    if b.load != a.load:
        return b.load < a.load
    return a.clock > now >= b.clock
