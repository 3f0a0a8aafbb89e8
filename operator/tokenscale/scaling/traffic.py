"""PURE: what the traffic itself says — idle is a fact, a missing series is blindness.

**Idle** (no traffic): engines report (their gauges are scraped), the request-rate counter
exists and did not move over the rate window, and nothing runs or waits. An idle vLLM still
exports its gauges and its counters; its latency histograms simply stop moving, so their
quantiles come back empty (Prometheus' NaN). That emptiness is a consequence of no traffic,
not a missing signal: the latency signals read as low and the model needs only the floor.

**Blind** is different: no engine reports, the counter has no series at all (``None``), or
the samples are stale — the engine then holds (``signals.blindness``).
"""

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.scaling.snapshot import Snapshot


def is_idle(snap: Snapshot) -> bool:
    """No request finished in the rate window, none is running or waiting, and none is held
    in front of the engines (where that is read)."""
    return (
        not snap.demand
        and snap.replicas_reporting > 0
        and snap.request_rate_rps is not None
        and snap.request_rate_rps <= 0.0
        and snap.running is not None
        and snap.running <= 0.0
        and snap.waiting is not None
        and snap.waiting <= 0.0
    )


def idle_floor(spec: InferenceServiceSpec) -> int:
    """Replicas an idle service keeps by the ordinary policy: ``minReplicas``, but at least
    one — with none left no engine would report. Zero is only reached through the idle window
    of ``scaling/zero.py``, which needs an activation source to read 0."""
    s = spec.scaling
    return min(max(s.min_replicas, 1), s.max_replicas)
