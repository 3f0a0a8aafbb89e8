"""PURE: the engine's memory read back from status is input from anyone who may write the
status subresource, so it is judged before it is used, and the decision it yields is bounded
by the workload that actually runs.

:func:`trusted` keeps each remembered value only while it is finite and within what the
spec and the engine could have written (a count within ``[minReplicas, maxReplicas]``, a
calibration within its bounds, a rate below ``MAX_RPS``, a time not after now); anything else
is reset to what a fresh service starts from, with a problem naming the field. When the
workload exists, its replica count — not the remembered decision — is where the engine starts
from. :func:`limited` then holds a decision within ``maxScaleUpStep`` / ``maxScaleDownStep``
of the workload's replicas, so no edited status can move the fleet faster than the policy.
"""

import math

from tokenscale.api.base import MAX_RPS, MAX_SECONDS
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.status import RateForecast
from tokenscale.scaling.headroom import MAX_SLO_HEADROOM
from tokenscale.scaling.need import CALIBRATION_BOUNDS
from tokenscale.scaling.signals import MAX_LOAD_RATIO
from tokenscale.scaling.state import ScalingState

MAX_LEAD_TIME_S = MAX_SECONDS


def _finite_within(value: float | None, lo: float, hi: float) -> bool:
    return value is None or (math.isfinite(value) and lo <= value <= hi)


def trusted(
    state: ScalingState,
    spec: InferenceServiceSpec,
    now_s: float,
    live_replicas: int | None,
) -> tuple[ScalingState, list[str]]:
    """``state`` with every value outside its bounds reset (see the module docstring), and
    what was reset, in the status' field names."""
    s = spec.scaling
    fresh = ScalingState()
    problems: list[str] = []
    update: dict[str, object] = {}

    def reset(field: str, alias: str, value: object, bound: str) -> None:
        update[field] = getattr(fresh, field)
        problems.append(f"status.scaling.{alias}={value!r} is outside {bound}: reset")

    oldest = now_s - MAX_SECONDS
    times = {
        "observed_at_s": "observedAtSeconds",
        "low_since_s": "lowSinceSeconds",
        "peak_at_s": "peakAtSeconds",
        "pressure_since_s": "pressureSinceSeconds",
        "last_scale_s": "lastScaleSeconds",
        "slo_headroom_raised_s": "sloHeadroomRaisedSeconds",
        "backlog_at_s": "backlogAtSeconds",
        "idle_since_s": "idleSinceSeconds",
        "burst_floor_at_s": "burstFloorAtSeconds",
    }
    for field, alias in times.items():
        value = getattr(state, field)
        if not _finite_within(value, oldest, now_s):
            reset(field, alias, value, "[now − 1 day, now]")
    lo, hi = CALIBRATION_BOUNDS
    for field, alias in (
        ("calibration", "calibration"),
        ("prefill_calibration", "prefillCalibration"),
    ):
        value = getattr(state, field)
        if not _finite_within(value, lo, hi):
            reset(field, alias, value, f"[{lo:g}, {hi:g}]")
    if not _finite_within(state.slo_headroom, 1.0, MAX_SLO_HEADROOM):
        reset("slo_headroom", "sloHeadroom", state.slo_headroom, f"[1, {MAX_SLO_HEADROOM:g}]")
    peak_max = MAX_LOAD_RATIO * max(s.max_replicas, 1)
    if not _finite_within(state.peak_load, 0.0, peak_max):
        reset("peak_load", "peakLoadReplicas", state.peak_load, f"[0, {peak_max:g}]")
    floor = state.burst_floor_replicas
    if floor is not None and not 0 <= floor <= s.max_replicas:
        reset("burst_floor_replicas", "burstFloorReplicas", floor, f"[0, {s.max_replicas}]")
    if not _finite_within(state.lead_time_s, 0.0, MAX_LEAD_TIME_S):
        reset("lead_time_s", "leadTimeSeconds", state.lead_time_s, f"[0, {MAX_LEAD_TIME_S:g}]")
    if state.rate is not None and not _rate_ok(state.rate, oldest, now_s):
        reset("rate", "rate", state.rate.model_dump(by_alias=True), f"[0, {MAX_RPS:g}] RPS")
    decided = state.decided_replicas
    if decided is not None and not s.min_replicas <= decided <= s.max_replicas:
        problems.append(
            f"status.decidedReplicas={decided} is outside [minReplicas {s.min_replicas}, "
            f"maxReplicas {s.max_replicas}]: reset"
        )
        update["decided_replicas"] = None
        decided = None
    if live_replicas is not None and decided != live_replicas:
        # the workload is what runs: the engine starts from it, not from a remembered count
        update["decided_replicas"] = min(max(live_replicas, s.min_replicas), s.max_replicas)
    return (state.model_copy(update=update) if update else state), problems


def _rate_ok(rate: RateForecast, oldest: float, now_s: float) -> bool:
    return (
        _finite_within(rate.level_rps, 0.0, MAX_RPS)
        and _finite_within(rate.trend_rps_per_s, -MAX_RPS, MAX_RPS)
        and _finite_within(rate.variance, 0.0, MAX_RPS * MAX_RPS)
        and _finite_within(rate.last_error_rps, -2 * MAX_RPS, 2 * MAX_RPS)
        and _finite_within(rate.at_s, oldest, now_s)
        and _finite_within(rate.since_s, oldest, rate.at_s)
    )


def limited(replicas: int, live_replicas: int | None, spec: InferenceServiceSpec) -> int:
    """``replicas`` within one step of the workload's (``maxScaleUpStep`` up,
    ``maxScaleDownStep`` down), then within ``[minReplicas, maxReplicas]`` (the bounds win:
    a workload outside them is brought back at once)."""
    s = spec.scaling
    if live_replicas is not None:
        p = s.policy
        replicas = min(
            max(replicas, live_replicas - p.max_scale_down_step),
            live_replicas + p.max_scale_up_step,
        )
    return min(max(replicas, s.min_replicas), s.max_replicas)
