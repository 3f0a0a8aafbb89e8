"""Fault drills (the knowledge map's §21 "故障压测"): what each fault does to the simulated
fleet, injected through the trace (extra arrivals) or the fleet (engine events).

- ``replica-loss``: the busiest ready replica dies. Its waiting and running requests are lost
  and their clients retry them ``RETRY_DELAY_S`` later (latency still counts from the first
  arrival); the Deployment replaces the pod, which serves after the cold start.
- ``cache-flush``: every engine's prefix cache is emptied (a restart of the cache, not of the
  engine): the next prompts prefill in full.
- ``traffic-x2``: from the moment on, every arrival comes twice (a copy halfway to the next
  arrival): the arrival rate doubles instantly, the token mix unchanged.
- ``retry-storm``: for ``STORM_WINDOW_S`` every request fails upstream and its client retries
  with back-off (``STORM_BACKOFF_S``): each arrival brings ``len(STORM_BACKOFF_S)`` copies
  ``1, 1+2, 1+2+4`` seconds later, all of which the engines serve.
- ``long-burst``: ``BURST_PER_REPLICA`` prompts per planned replica at the max context
  (``--max-model-len`` less ``BURST_OUTPUT_TOKENS``) arrive within ``BURST_SPREAD_S``.

Pure: time is simulated; nothing here reads a clock.
"""

import heapq
import itertools
from dataclasses import dataclass, replace
from typing import Literal, get_args

from tokenscale.simulation.fleet import Fleet, PoolEngine
from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import ReplicaConfig, SimRequest
from tokenscale.simulation.trace import Trace, TraceRequest

FaultKind = Literal["replica-loss", "cache-flush", "traffic-x2", "retry-storm", "long-burst"]
FAULT_KINDS: tuple[str, ...] = get_args(FaultKind)
#: Faults the fleet applies at their moment; the others reshape the trace.
FLEET_FAULTS = ("replica-loss", "cache-flush")

RETRY_DELAY_S = 1.0
STORM_WINDOW_S = 60.0
STORM_BACKOFF_S = (1.0, 2.0, 4.0)
BURST_PER_REPLICA = 2
BURST_SPREAD_S = 10.0
BURST_OUTPUT_TOKENS = 256


@dataclass(frozen=True)
class Fault:
    kind: FaultKind
    at_s: float


def moment_seconds(text: str) -> float | None:
    """``MM:SS``, ``HH:MM:SS`` or plain seconds → seconds into the trace; None when it is none
    of them (minutes and seconds after the first field must be below 60: 1:99 is a typo, not
    2:39). The one reading of a moment for every flag that takes one."""
    try:
        parts = [float(p) for p in text.split(":")]
    except ValueError:
        return None
    if (
        not parts
        or len(parts) > 3
        or any(not 0 <= p < float("inf") for p in parts)
        or any(p >= 60 for p in parts[1:])
    ):
        return None
    seconds = 0.0
    for p in parts:
        seconds = seconds * 60 + p
    return seconds


def parse_fault(text: str) -> Fault:
    """``KIND@MM:SS`` (or ``@HH:MM:SS``, ``@SECONDS``); ``ValueError`` naming what is allowed."""
    kind, sep, moment = text.partition("@")
    if not sep or kind not in FAULT_KINDS:
        raise ValueError(
            f"--fault {text!r}: use KIND@MM:SS with KIND one of {', '.join(FAULT_KINDS)}"
        )
    seconds = moment_seconds(moment)
    if seconds is None:
        raise ValueError(
            f"--fault {text!r}: the moment must be MM:SS, HH:MM:SS (minutes and seconds below "
            "60) or seconds"
        )
    return Fault(kind, seconds)  # type: ignore[arg-type]  # checked against FAULT_KINDS


def _doubled(requests: list[TraceRequest], at_s: float) -> list[TraceRequest]:
    out = list(requests)
    nexts = [r.arrival_s for r in requests[1:]]
    for r, nxt in zip(requests, [*nexts, requests[-1].arrival_s if requests else 0.0], strict=True):
        if r.arrival_s >= at_s:
            out.append(replace(r, arrival_s=r.arrival_s + (nxt - r.arrival_s) / 2.0))
    return out


def _storm(requests: list[TraceRequest], at_s: float) -> list[TraceRequest]:
    out = list(requests)
    for r in requests:
        if not at_s <= r.arrival_s < at_s + STORM_WINDOW_S:
            continue
        delay = 0.0
        for backoff in STORM_BACKOFF_S:
            delay += backoff
            out.append(replace(r, arrival_s=r.arrival_s + delay))
    return out


def _burst(
    requests: list[TraceRequest], at_s: float, max_model_len: int, replicas: int
) -> list[TraceRequest]:
    n = BURST_PER_REPLICA * max(replicas, 1)
    output = min(BURST_OUTPUT_TOKENS, max(max_model_len // 2, 1))
    prompt = max(max_model_len - output, 1)
    return [
        *requests,
        *(TraceRequest(at_s + BURST_SPREAD_S * k / n, prompt, output) for k in range(n)),
    ]


def faulted_trace(
    trace: Trace, faults: tuple[Fault, ...], max_model_len: int, replicas: int
) -> Trace:
    """``trace`` with the arrivals the trace-level faults add, in arrival order."""
    requests = list(trace.requests)
    for f in faults:
        if f.kind == "traffic-x2":
            requests = _doubled(requests, f.at_s)
        elif f.kind == "retry-storm":
            requests = _storm(requests, f.at_s)
        elif f.kind == "long-burst":
            requests = _burst(requests, f.at_s, max_model_len, replicas)
    requests.sort(key=lambda r: r.arrival_s)
    return Trace(tuple(requests), trace.source, trace.block_tokens)


class FaultyFleet(Fleet):
    """A :class:`Fleet` that applies replica losses and cache flushes at their moment and
    routes the lost requests' retries when they come back. ``events`` logs what happened."""

    def __init__(
        self,
        faults: tuple[Fault, ...],
        cfg: ReplicaConfig,
        rec: Recorder,
        gpus_per_replica: int,
        cold_start_s: float,
        initial_ready: int,
    ) -> None:
        super().__init__(
            [PoolEngine("serve", cfg, gpus_per_replica)], [rec], cold_start_s, [initial_ready]
        )
        self._faults = sorted((f for f in faults if f.kind in FLEET_FAULTS), key=lambda f: f.at_s)
        self._retries: list[tuple[float, int, SimRequest]] = []
        self._seq = itertools.count()
        self.events: list[tuple[float, str]] = []

    def _next_event_s(self) -> float:
        fault = self._faults[0].at_s if self._faults else float("inf")
        retry = self._retries[0][0] if self._retries else float("inf")
        return min(fault, retry)

    def next_event_s(self) -> float:
        return min(super().next_event_s(), self._next_event_s())

    def in_flight(self) -> int:
        return super().in_flight() + len(self._retries)

    def advance(self, t: float) -> None:
        while (e := self._next_event_s()) <= t:
            super().advance(e)
            if self._retries and self._retries[0][0] <= e:
                _, _, req = heapq.heappop(self._retries)
                self.route(req, e)
            else:
                self._apply(self._faults.pop(0), e)
        super().advance(t)

    def _apply(self, fault: Fault, now: float) -> None:
        if fault.kind == "cache-flush":
            for m in self.members:
                m.replica.flush_prefix_cache()
            self.events.append((now, "prefix caches flushed on every replica"))
            return
        ready = [m for m in self.members if m.phase == "ready"]
        if not ready:
            self.events.append((now, "no ready replica to kill"))
            return
        victim = max(ready, key=lambda m: m.replica.load)
        lost = [*victim.replica.waiting, *victim.replica.running]
        self.members.remove(victim)
        for r in lost:
            retry = SimRequest(
                r.arrival_s, r.input_tokens, r.output_tokens, r.prefix_blocks, priority=r.priority
            )
            heapq.heappush(self._retries, (now + RETRY_DELAY_S, next(self._seq), retry))
        # the Deployment's ReplicaSet replaces the pod: it holds GPUs and serves after a cold start
        self.members.append(self._new_member(0, now))
        self.events.append(
            (now, f"a replica died with {len(lost)} requests (retried {RETRY_DELAY_S:g} s later)")
        )


def make_fleet(
    faults: tuple[Fault, ...],
    cfg: ReplicaConfig,
    rec: Recorder,
    gpus_per_replica: int,
    cold_start_s: float,
    initial_ready: int,
) -> Fleet:
    """A plain :class:`Fleet`, or a :class:`FaultyFleet` when a fleet-level fault is asked."""
    if any(f.kind in FLEET_FAULTS for f in faults):
        return FaultyFleet(faults, cfg, rec, gpus_per_replica, cold_start_s, initial_ready)
    return Fleet.one_pool(cfg, rec, gpus_per_replica, cold_start_s, initial_ready)
