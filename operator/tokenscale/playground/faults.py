"""Fault drills in the playground (``tokenscale playground --fault KIND@MM:SS``): the kinds of
``tokenscale simulate --fault`` (``simulation/faults.py``), played on the live twins.

- ``traffic-x2``, ``retry-storm``, ``long-burst`` reshape the trace before it is replayed
  (``faulted_trace``, the simulator's own), so the load generator sends the extra arrivals.
- ``replica-loss``: at its moment the busiest ready pod's twin is killed (its open streams cut at
  once) and the pod deleted; the ReplicaSet creates a replacement, which serves after the cold
  start; the clients of the cut requests retry ``RETRY_DELAY_S`` later (``replay``'s
  ``retry_after_s``), their latency counted from the first arrival.
- ``cache-flush``: every twin's engine (the simulator's replica) empties its prefix cache.

This module applies the fleet faults at their moments; :mod:`.drills` reports on a run.
"""

import asyncio
from collections.abc import Callable, Sequence

from tokenscale.playground.engine import ModelClock
from tokenscale.playground.runner import PodRunner
from tokenscale.simulation.faults import FLEET_FAULTS, Fault

#: The reason of the timeline events a fault adds (beside the operator's ``Scaled`` events).
FAULT_EVENT = "Fault"


async def inject_fleet_faults(
    faults: Sequence[Fault],
    runner: PodRunner,
    clock: ModelClock,
    on_event: Callable[[float, str], None],
) -> None:
    """Apply the fleet faults (replica loss, cache flush) at their modelled moments."""
    for fault in sorted((f for f in faults if f.kind in FLEET_FAULTS), key=lambda f: f.at_s):
        delay = (fault.at_s - clock.now()) / clock.speed
        if delay > 0:
            await asyncio.sleep(delay)
        if fault.kind == "replica-loss":
            message = await runner.kill_busiest()
        else:
            message = runner.flush_prefix_caches()
        on_event(clock.now(), f"{fault.kind}: {message}")
