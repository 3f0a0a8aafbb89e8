"""When a twin's cold start begins: the pod runner's time base (arithmetic only).

The playground runs the model at ``speed`` × real time, but the chain between the operator's
observation and the runner learning of the pod it asked for (the operator's read, decision and
write; the controller manager's Deployment → ReplicaSet → pod; the watch) runs at its real
pace. Counted on the wall clock, that chain's latency would count ``speed`` times over in
modelled time: a wall second is 20 modelled seconds at ×20, a whole decision interval, where in
a cluster (and in the simulator, which starts a replica at its decision) it is a second or less
against a cold start of minutes. So a pod's cold start begins at the modelled time of the
observation that asked for it plus that latency at its real length (one modelled second per
wall second), and the pod is Ready a cold start later. Times here are wall seconds on one
clock (the runner's ``time.monotonic()``).
"""

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Decided:
    """One decision of the operator as its status reported it."""

    observed_s: float
    """The observation it was made on (wall seconds)."""
    replicas: int


@dataclass(frozen=True)
class Write:
    """One change of the Deployment's ``spec.replicas``, as its watch event arrived."""

    at_s: float
    replicas: int
    previous_s: float | None = None
    """The previous change's arrival (None: the first change seen)."""


def asking_observation(decisions: Sequence[Decided], write: Write) -> float | None:
    """The observation of the decision ``write`` carried out: the latest one asking for the
    write's replicas, observed before the write arrived and after the previous write (a newer
    count always comes from a newer decision). None when there is none yet (the operator writes
    its status after the Deployment) or at all (a change made by hand)."""
    found: float | None = None
    for d in decisions:
        if d.replicas != write.replicas or d.observed_s > write.at_s:
            continue
        if write.previous_s is not None and d.observed_s <= write.previous_s:
            continue
        if found is None or d.observed_s > found:
            found = d.observed_s
    return found


def cold_start_begins(noticed_s: float, observed_s: float | None, speed: float) -> float:
    """When the modelled cold start of a pod noticed at ``noticed_s`` begins (wall seconds):
    the asking observation plus the latency since it divided by ``speed`` (so that it counts at
    its real length in modelled time); the noticing itself when no observation asked for the
    pod (a replacement the ReplicaSet made) or the observation is not before it."""
    if observed_s is None or observed_s > noticed_s:
        return noticed_s
    return observed_s + (noticed_s - observed_s) / speed
