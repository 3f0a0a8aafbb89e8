"""PURE: what one replica is observed to carry — the capacity the live need divides the demand
by, measured where the fleet is loaded enough to tell, the planner's where it is not.

The planner's per-replica rate is a model (its prefill queue, its decode roofline); the
fleet's own figures say what a replica carries now. At an occupancy ``u`` (how full a replica
is against its limits) it carries ``rate ÷ n`` requests per second, so at its limits

    measured = (arrival rate ÷ n) ÷ u,     u = max(mean KV usage ÷ kvHighWatermark,
                                               running per replica ÷ the SLO batch)

(KV and the batch grow with the rate by Little's law; the SLO batch is the live plan's
``max_concurrency_per_replica``, the KV target the spec's high watermark). It is used only
when ``u ≥ LOADED_SHARE`` — a nearly idle fleet's ratio extrapolates noise — and held within
``MEASURED_BOUNDS`` × the planner's (one window's mismatch between the rate window and the
gauges, at a step, is no reason to ask for a third or three times the fleet). Otherwise the
planner's rate stands. Both figures, the occupancy and which was used are in
``status.decision.capacity``.

What it assumes: KV usage and the batch are proportional to the request rate at a fixed
token mix (Little's law with a steady request time). Near the limits the request time grows
(the TPOT rises with the batch), so the extrapolation from ``u = 0.5`` is at most ×2 and
slightly optimistic; the pressure signals still guard the SLO.
"""

import math
from dataclasses import dataclass
from typing import Literal

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.scaling import ScalingPolicy
from tokenscale.scaling.snapshot import Snapshot

LOADED_SHARE = 0.5
"""Occupancy at or above which the fleet's own rate is taken as its measure."""
MEASURED_BOUNDS = (1.0 / 3.0, 3.0)
"""The measured rate is held within these multiples of the planner's."""


@dataclass(frozen=True)
class Carried:
    """The per-replica rate the need is divided by, and where it came from."""

    rps_per_replica: float
    source: Literal["measured", "planner"]
    planner_rps_per_replica: float
    observed_rps_per_replica: float | None
    occupancy: float | None
    reason: str


def carried(
    snap: Snapshot,
    policy: ScalingPolicy,
    planner_rps_per_replica: float,
    slo_batch: float,
) -> Carried:
    """The rate one replica carries (module docstring)."""
    planner = planner_rps_per_replica
    n = snap.replicas_reporting
    rate = snap.arrival_rps
    kv = snap.kv_usage_mean if snap.kv_usage_mean is not None else snap.kv_usage_max
    if n <= 0 or rate is None or rate <= 0 or planner <= 0:
        return Carried(planner, "planner", planner, None, None, "planner: no traffic to measure")
    per = rate / n
    shares = []
    if kv is not None:
        shares.append(kv / policy.kv_high_watermark)
    if snap.running is not None and slo_batch > 0:
        shares.append(snap.running / n / slo_batch)
    u = max(shares, default=0.0)
    if u < LOADED_SHARE:
        return Carried(
            planner,
            "planner",
            planner,
            per,
            u,
            f"planner {planner:.3g} RPS/replica: occupancy {u:.2f} < {LOADED_SHARE:g}, "
            "too light to measure",
        )
    lo, hi = MEASURED_BOUNDS
    measured = min(max(per / u, lo * planner), hi * planner)
    return Carried(
        measured,
        "measured",
        planner,
        per,
        u,
        f"measured {measured:.3g} RPS/replica: {per:.3g} RPS per replica at occupancy "
        f"{u:.2f} (planner {planner:.3g})",
    )


def replicas_for(demand_rps: float, carry: Carried, spec: InferenceServiceSpec) -> int:
    """``ceil(demand ÷ the carried rate × redundancy factor) + spareReplicas``, at least 1 for
    any demand."""
    r = spec.scaling.redundancy
    need = max(0.0, demand_rps) / carry.rps_per_replica
    return max(1 if demand_rps > 0 else 0, math.ceil(need * r.factor - 1e-9) + r.spare_replicas)
