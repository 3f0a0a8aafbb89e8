"""The one simulator loop: a trace replayed on a :class:`~tokenscale.simulation.fleet.Fleet`.

Events, in time order: arrivals, Prometheus scrapes every ``scrape_interval_s``, decisions
every ``decision_interval_s`` from ``first_decision_s``, and the fleet's own events (a started
replica becoming ready, a stocked-out one placed, a KV hand-off landing, an injected fault).
Engines run their scheduler steps between events. What an arrival, a scrape and a decision do
is the caller's (:class:`Hooks`): one pool, a GPU mix and prefill/decode pools differ there,
not in the loop.

**The end-of-run rule** (one for every shape and policy): decisions stop at the trace's end
(``end_s``, its duration); requests still in flight are then served to completion, up to
``drain_limit_s``, for their latencies, while GPU-seconds count over the trace's span only
(what the fleet held after the end is no policy's doing).
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from tokenscale.simulation.fleet import Fleet
from tokenscale.simulation.trace import TraceRequest


class Hooks(Protocol):
    def admit(self, r: TraceRequest, t: float) -> None:
        """One arrival at ``t``: route it (or reject it)."""
        ...

    def scrape(self, t: float) -> None:
        """Prometheus scrapes the fleet at ``t``."""
        ...

    def decide(self, t: float) -> bool:
        """One decision at ``t``; True stops the replay here (a probe that gave up)."""
        ...


@dataclass(frozen=True)
class Clock:
    """When scrapes and decisions fall, and how long the drain may run."""

    scrape_interval_s: float = 15.0
    decision_interval_s: float = 15.0
    first_decision_s: float | None = None
    """The first decision (then one every ``decision_interval_s``); None: one interval in."""
    drain_limit_s: float = 1800.0


@dataclass(frozen=True)
class LoopEnd:
    gpu_seconds_by_pool: list[float]
    """Each pool's GPU-seconds over the trace's span (or up to where the replay gave up)."""
    gave_up: bool
    end_s: float
    """When the replay stopped (after the drain)."""


def replay(
    fleet: Fleet,
    arrivals: Sequence[TraceRequest],
    end_s: float,
    hooks: Hooks,
    clock: Clock,
) -> LoopEnd:
    """Replay ``arrivals`` (in time order) on ``fleet`` until ``end_s``, then drain (module
    docstring)."""
    i = 0
    t_scrape = 0.0
    t_decide = (
        clock.decision_interval_s if clock.first_decision_s is None else clock.first_decision_s
    )
    t = 0.0
    while True:
        t = min(
            arrivals[i].arrival_s if i < len(arrivals) else math.inf,
            fleet.next_event_s(),
            t_scrape,
            t_decide,
            end_s,
        )
        fleet.advance(t)
        while i < len(arrivals) and arrivals[i].arrival_s <= t:
            hooks.admit(arrivals[i], t)
            i += 1
        if t >= t_scrape:
            hooks.scrape(t)
            t_scrape += clock.scrape_interval_s
        if t >= t_decide:
            t_decide += clock.decision_interval_s
            if hooks.decide(t):
                return LoopEnd(list(fleet.gpu_seconds_by_pool), True, t)
        if t >= end_s:
            break
    gpu_seconds = list(fleet.gpu_seconds_by_pool)
    drain_end = end_s + clock.drain_limit_s
    while fleet.in_flight() and t < drain_end:
        t = min(fleet.next_event_s(), drain_end)
        fleet.advance(t)
    return LoopEnd(gpu_seconds, False, t)
