"""``spec.scaling.maxReplicasForSheddable``: a sheddable backlog alone adds replicas only up to
a cap.

With classes, the endpoint picker's flow control serves higher priorities first, so while the
pool can carry the guaranteed classes their requests do not wait in its queue; requests of a
negative priority (the sheddable classes' InferenceObjectives) wait there first. When the
queue holds requests and every one of them is sheddable (``gateway_queued_sheddable`` equals
``gateway_queued``), more replicas would be bought for traffic nobody was promised: the
engine's count is held to ``max(current, forecast plan, maxReplicasForSheddable)``. A
guaranteed request in the queue, or a queue that could not be read, lifts the cap (the
guaranteed classes come first; a cap never acts on missing data).

What cannot be read: vLLM's per-request ``priority`` is not a label of its metrics, so the
engines' own waiting requests, KV usage and latency are the whole service's; the cap reads
the gateway's queue alone.
"""

from dataclasses import dataclass

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.scaling.snapshot import Snapshot


@dataclass(frozen=True)
class SheddableCap:
    replicas: int
    why: str


def sheddable_cap(
    spec: InferenceServiceSpec, snap: Snapshot, current: int, floor: int
) -> SheddableCap | None:
    """The cap in force, or None (no cap set, nothing queued, a guaranteed request queued,
    or the queue unread)."""
    limit = spec.scaling.max_replicas_for_sheddable
    queued, shed = snap.gateway_queued, snap.gateway_queued_sheddable
    if limit is None or queued is None or shed is None or queued <= 0:
        return None
    if shed < queued:  # a guaranteed request waits too: it comes first
        return None
    cap = max(current, floor, limit)
    return SheddableCap(
        cap,
        f"only sheddable requests wait at the gateway ({shed:g} queued): held to "
        f"{cap} (spec.scaling.maxReplicasForSheddable={limit}, the plan {floor})",
    )
