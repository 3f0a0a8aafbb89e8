"""PURE: the memory of bursts — a service that has needed N replicas within
``spec.scaling.burstMemorySeconds`` keeps N standing for the burst's recurrence.

A burst shorter than a cold start is met only by capacity that is already standing: replicas
asked for after it arrive after it has gone. The SLO headroom (``scaling/headroom.py``)
learns a multiplier from breaches; this remembers a count. Every decision that scales up (on
pressure or the model's need) records what it decided as the count the service **needed**:

    floor, at ← (N, now)          when N ≥ the floor in force (a recurrence renews it)
    floor     ← none              once ``now − at > burstMemorySeconds``

and the scale-down path never goes below the floor in force (cause ``BurstFloor``). The floor
is bounded by ``[minReplicas, maxReplicas]`` when it is applied, so a lowered maxReplicas
wins. It is one count, not a windowed history: a smaller need inside the window of a larger
one is not kept once the larger one expires; the next need sets it again.
``burstMemorySeconds: 0`` turns the memory off.
"""

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.scaling.state import ScalingState


def floor_in_force(state: ScalingState, spec: InferenceServiceSpec, now_s: float) -> int | None:
    """The standing floor at ``now_s`` within today's bounds (None: none, expired or off)."""
    window = spec.scaling.burst_memory_seconds
    floor, at = state.burst_floor_replicas, state.burst_floor_at_s
    if window <= 0 or floor is None or at is None or now_s - at > window:
        return None
    s = spec.scaling
    return min(max(floor, s.min_replicas), s.max_replicas)


def remembered(
    state: ScalingState,
    spec: InferenceServiceSpec,
    now_s: float,
    needed: int | None,
) -> dict[str, object]:
    """The state's floor after this decision: ``needed`` (a scale-up's count, None
    otherwise) renews or raises it; an expired floor is dropped."""
    if spec.scaling.burst_memory_seconds <= 0:
        return {"burst_floor_replicas": None, "burst_floor_at_s": None}
    current = floor_in_force(state, spec, now_s)
    if needed is not None and (current is None or needed >= current):
        return {"burst_floor_replicas": needed, "burst_floor_at_s": now_s}
    if current is None:
        return {"burst_floor_replicas": None, "burst_floor_at_s": None}
    return {}
