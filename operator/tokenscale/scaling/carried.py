"""PURE: what one replica is observed to carry — the capacity the live need divides the demand
by, measured where the fleet is loaded enough to tell, the planner's where it is not.

The planner's per-replica rate is a model (its prefill queue, its decode roofline); the
fleet's own figures say what a replica carries now. At an occupancy ``u`` (how full a replica
is against its limits) it carries ``rate ÷ n`` requests per second, so at its limits

    measured = (arrival rate ÷ n) ÷ u,
    u = max(B ÷ the SLO batch, B × (prompt + output ÷ 2) ÷ KV pool ÷ kvHighWatermark)

with ``B`` the window's batch per replica by Little's law (generated tokens per second per
replica × the exact TPOT mean), so the occupancy and the rate come from the same rate window
(the running and KV gauges are one instant: in a burst they read the burst against the
window's rate — the ``code`` shape asked for 8 replicas at an occupancy of 1.17 from the
running gauge); the SLO batch is the live plan's ``max_concurrency_per_replica``, the KV a
prompt and half its answer per sequence against the plan's pool. It is used only
when ``u ≥ LOADED_SHARE`` — a nearly idle fleet's ratio extrapolates noise — and held within
``MEASURED_BOUNDS`` × the planner's (one window's mismatch between the rate window and the
gauges, at a step, is no reason to ask for a third or three times the fleet). Otherwise the
planner's rate stands, and with ``spec.scaling.policy.measuredCapacity: false`` it stands
always (the measure is still shown). Both figures, the occupancy and which was used are in
``status.decision.capacity``.

What it assumes: KV usage and the batch are proportional to the request rate at a fixed
token mix (Little's law with a steady request time). Near the limits the request time grows
(the TPOT rises with the batch), so the extrapolation from ``u = 0.5`` is at most ×2 and
slightly optimistic; the pressure signals still guard the SLO.
"""

import math
from dataclasses import dataclass, replace
from typing import Literal

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.scaling import ScalingPolicy
from tokenscale.planning import Plan
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


def planner_basis(live: Plan, launch: Plan) -> str:
    """Where the planner's per-replica rate comes from, for the reason: the live plan's
    operating batch, what binds it, and the batch the SLOs allow (live, the knee is lifted
    wherever an SLO is set: ``planning.Conditions.knee == "slo"``), beside the launch plan's
    rate at its own operating batch (the forecast's, usually the knee)."""
    lim = live.concurrency_limits
    if lim.slo is None:
        within = f"the knee {lim.knee:,.0f} (no SLO set: the knee is the only latency limit)"
    else:
        within = f"the SLO batch {lim.slo:,.3g} (the knee lifted live)"
    text = f"at batch {live.operating_batch:,.3g}, {live.binding_constraint}-bound, within {within}"
    if launch is not live and launch.rps_per_replica > 0:
        text += (
            f"; the launch plan rates {launch.rps_per_replica:.3g} at its batch "
            f"{launch.operating_batch:,.3g} (knee {launch.concurrency_limits.knee:,.0f})"
        )
    return text


def window_batch(snap: Snapshot) -> float | None:
    """Sequences decoding per reporting replica over the rate window, by Little's law:
    generated tokens per second per replica × the exact TPOT mean (the running gauge is one
    instant: in a burst it reads the burst against the window's rate)."""
    n = snap.replicas_reporting
    if n <= 0 or snap.generation_tps is None or snap.tpot_mean_s is None:
        return None
    return snap.generation_tps / n * snap.tpot_mean_s


def carried(
    snap: Snapshot,
    policy: ScalingPolicy,
    planner_rps_per_replica: float,
    slo_batch: float,
    kv_capacity_tokens: float | None = None,
    basis: str = "",
) -> Carried:
    """The rate one replica carries (module docstring); ``basis``: where the planner's rate
    comes from (:func:`planner_basis`), said in the reason whenever the planner's rate is used."""
    planner = planner_rps_per_replica
    at = f" {basis}" if basis else ""
    n = snap.replicas_reporting
    rate = snap.arrival_rps
    batch = window_batch(snap)
    if n <= 0 or rate is None or rate <= 0 or planner <= 0:
        return Carried(
            planner,
            "planner",
            planner,
            None,
            None,
            f"planner {planner:.3g} RPS/replica{at}: no traffic to measure",
        )
    per = rate / n
    if batch is None:
        return Carried(
            planner,
            "planner",
            planner,
            per,
            None,
            f"planner {planner:.3g} RPS/replica{at}: no token rate and TPOT mean",
        )
    shares = []
    if slo_batch > 0:
        shares.append(batch / slo_batch)
    prompt, output = snap.mean_input_tokens, snap.mean_output_tokens
    if kv_capacity_tokens and prompt is not None and output is not None:
        # the KV the window's batch holds: a prompt and half its answer per sequence
        held = batch * (prompt + output / 2.0) / kv_capacity_tokens
        shares.append(held / policy.kv_high_watermark)
    u = max(shares, default=0.0)
    if u < LOADED_SHARE:
        return Carried(
            planner,
            "planner",
            planner,
            per,
            u,
            f"planner {planner:.3g} RPS/replica{at}: occupancy {u:.2f} < {LOADED_SHARE:g}, "
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
        f"{u:.2f} (planner {planner:.3g}{at})",
    )


def replicas_for(demand_rps: float, carry: Carried, spec: InferenceServiceSpec) -> int:
    """``ceil(demand ÷ the carried rate × redundancy factor) + spareReplicas``, at least 1 for
    any demand."""
    r = spec.scaling.redundancy
    need = max(0.0, demand_rps) / carry.rps_per_replica
    return max(1 if demand_rps > 0 else 0, math.ceil(need * r.factor - 1e-9) + r.spare_replicas)


def unused(carry: Carried) -> Carried:
    """``carry`` with the planner's rate used (``measuredCapacity: false``), the measure kept
    in the reason."""
    return replace(
        carry,
        rps_per_replica=carry.planner_rps_per_replica,
        source="planner",
        reason=f"planner {carry.planner_rps_per_replica:.3g} RPS/replica (measuredCapacity "
        f"false; {carry.reason})",
    )
