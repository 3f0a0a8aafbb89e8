"""PURE decision engine: (spec, forecast plan, snapshot, state, now) → Decision.

Three parts, one module each, composed here:

- **The model's need** (``scaling/need.py``): re-plan with the observed workload and the
  calibrated engines, sized at the SLO batch; × the larger of the **SLO headroom** learned from
  breaches (``scaling/headroom.py``) and the room the **arrivals' dispersion** asks for
  (``scaling/dispersion.py``: 1 for Poisson arrivals); raised to the arrival rate expected one
  lead time ahead (``scaling/forecast.py``); an idle service needs only ``idle_floor``.
- **The signals** (``scaling/signals.py``): KV usage (with its tokens), the queue as the
  seconds its prompts take to prefill (``scaling/queue_work.py``: watermarks from the TTFT
  SLO), TTFT and TPOT P99 read as attainment, each with the replicas it asks for.
- **The policy** (``scaling/policy.py``): fast up, careful down, else hold — a transition with
  a typed :class:`~tokenscale.scaling.cause.Cause`; no step down below the count a scale-up
  decided within ``burstMemorySeconds`` (``scaling/burst_memory.py``).
- **The sheddable cap** (``scaling/sheddable.py``): with ``maxReplicasForSheddable``, a
  scale-up while only sheddable requests wait at the gateway stops at the cap.
- **Never blind**: no snapshot, missing core signals or stale samples → hold the operator's own
  last decision, never below the forecast plan (with ``minReplicas`` 0: the last decision
  alone), never down; ``metrics_available`` False.

The engine is a function of its input; ``scaling/stepper.py`` decides when it runs (once per
observation, with the real time since the last one).
"""

import dataclasses
import math

from pydantic import BaseModel, ConfigDict

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning import Conditions, Plan, Resolved, layout_of, perf_at, plan_at, resolve
from tokenscale.planning.planner import as_planned
from tokenscale.scaling.burst_memory import floor_in_force, remembered
from tokenscale.scaling.carried import Carried, carried, planner_basis, replicas_for, unused
from tokenscale.scaling.cause import Cause
from tokenscale.scaling.decision import Decision, pinned_decision
from tokenscale.scaling.diagnosis import diagnose
from tokenscale.scaling.dispersion import dispersion_of
from tokenscale.scaling.forecast import (
    DEFAULT_LEAD_TIME_S,
    Outlook,
    RateForecast,
    outlook,
    update,
)
from tokenscale.scaling.headroom import Backlog, backlog_of
from tokenscale.scaling.need import (
    CALIBRATION_BOUNDS,
    calibrate,
    calibrate_prefill,
    live_conditions,
    observed_workload,
    profile_calibration,
)
from tokenscale.scaling.policy import (
    SCALE_DOWN_STEP_S,
    Transition,
    bounded,
    hold_blind,
    transition,
)
from tokenscale.scaling.queue_work import QueueWork, queue_work
from tokenscale.scaling.sheddable import sheddable_cap
from tokenscale.scaling.signals import (
    LATENCY_SIGNALS,
    LOAD_SIGNALS,
    MAX_LATENCY_RATIO,
    MAX_LOAD_RATIO,
    blindness,
    peak_load,
    signals,
    slo_headroom,
)
from tokenscale.scaling.snapshot import Snapshot
from tokenscale.scaling.state import ScalingState
from tokenscale.scaling.traffic import idle_floor, is_idle
from tokenscale.scaling.variant_order import MixNeed, mix_total, primary_spec

__all__ = [
    "CALIBRATION_BOUNDS",
    "LATENCY_SIGNALS",
    "LOAD_SIGNALS",
    "MAX_LATENCY_RATIO",
    "MAX_LOAD_RATIO",
    "SCALE_DOWN_STEP_S",
    "EngineInput",
    "decide",
    "live_conditions",
    "observed_workload",
    "profile_calibration",
    "signals",
]


class EngineInput(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    spec: InferenceServiceSpec
    forecast: Plan
    snapshot: Snapshot | None
    state: ScalingState
    now_s: float
    interval_s: float
    """Seconds since the observation the last decision was made on (the configured decision
    interval for a first decision): the time smoothing, the backlog's "seen at the previous
    observation" and the forecast horizon run on. No default: the caller knows it."""
    stale_after_s: float = 120.0
    lead_time_s: float | None = None
    """Measured creation→Ready time of this service's pods; None until one has started."""


def decide(inp: EngineInput) -> Decision:
    """One decision (module docstring): pinned, held blind, or the model's need and the
    signals through the policy."""
    spec, forecast, state, now = inp.spec, inp.forecast, inp.state, inp.now_s
    policy = spec.scaling.policy
    floor = forecast.sized.total
    # the last decision, within today's bounds (maxReplicas may have been lowered since)
    current = bounded(state.decided_replicas if state.decided_replicas is not None else floor, spec)
    if spec.scaling.replicas is not None:
        return pinned_decision(spec.scaling.replicas, inp.snapshot is not None, state)
    snap = inp.snapshot
    blind = blindness(snap, now, inp.stale_after_s)
    if blind is not None:
        return _held_blind(inp, current, floor, blind)
    assert snap is not None
    dt = max(0.0, inp.interval_s)
    live = _live(inp, snap, dt)
    carry = _carry(inp, snap, live.plan)
    per_replica = None if carry is None else carry.rps_per_replica
    lead_s = DEFAULT_LEAD_TIME_S if inp.lead_time_s is None else max(0.0, inp.lead_time_s)
    work, backlog = _queue(inp, snap, live, per_replica, lead_s, dt)
    # the signals
    kv_tokens = float(forecast.kv_capacity_tokens_per_replica) or None
    sigs = signals(snap, spec, policy, backlog, work, kv_tokens)
    slo_room, raised_at = slo_headroom(state, sigs, now)
    # the arrivals' dispersion: room for the count they actually bring (1: Poisson, as planned)
    spread = dispersion_of(snap, policy.dispersion_sizing)
    room = max(slo_room, spread.room)
    binding: str = live.plan.binding_constraint
    if spread.room > slo_room:
        binding = f"{binding}; ×{spread.room:.2f}: {spread.reason}"
    model, binding, mixed = _model_need(inp, snap, live.plan, carry, room, binding)
    rate, look, model = _ahead(inp, snap, per_replica, room, dt, model)
    peak = peak_load(state, sigs, snap.replicas_reporting, now, policy)
    # the policy
    burst = floor_in_force(state, spec, now)
    step = transition(spec, state, current, model, binding, sigs, peak, now, burst)
    step = _sheddable_capped(step, spec, snap, current, floor)
    needed = step.replicas if step.cause in (Cause.PRESSURE, Cause.MODEL_NEED) else None
    new_state = state.model_copy(
        update={
            "calibration": live.factor,
            "prefill_calibration": live.prefill,
            "peak_load": peak,
            "peak_at_s": now,
            "rate": rate,
            "slo_headroom": slo_room,
            "slo_headroom_raised_s": raised_at,
            "backlog_at_s": now if backlog is not None and backlog.seen else None,
            **step.memory,
            **remembered(state, spec, now, needed),
            "decided_replicas": step.replicas,
        }
    )
    return Decision(
        replicas=step.replicas,
        source="metrics",
        reason=step.reason(current) + ("" if mixed is None else f"; the mix: {mixed.reason}"),
        cause=step.cause,
        why=step.why if mixed is None else f"{step.why}; the mix: {mixed.reason}",
        signals=sigs,
        diagnosis=diagnose(snap, spec.slo, policy),
        model_replicas=model,
        calibration=live.factor,
        prefill_calibration=live.prefill,
        metrics_available=True,
        metrics_reason="ok",
        outlook=look,
        capacity=carry,
        dispersion=spread,
        state=new_state,
    )


def _held_blind(inp: EngineInput, current: int, floor: int, blind: str) -> Decision:
    """No usable metrics: hold the last decision, never below the forecast floor, never down."""
    spec = inp.spec
    # minReplicas 0: the count follows demand (a wake-up asks for the queued work only),
    # so the forecast is no floor for it; it still never goes down blind
    floor_blind = floor if spec.scaling.min_replicas > 0 else current
    held = bounded(max(current, floor_blind), spec)
    why = (
        f"metrics unavailable ({blind}): holding {held} (last decision {current}, "
        f"forecast floor {floor_blind}); never scaling down blind"
    )
    return hold_blind(inp.state, held, why, blind)


@dataclasses.dataclass(frozen=True)
class _Live:
    """The model re-planned at the observed workload and the calibrated engines."""

    resolved: Resolved
    factor: float  #: the decode calibration
    prefill: float  #: the prefill calibration
    conditions: Conditions
    plan: Plan


def _live(inp: EngineInput, snap: Snapshot, dt: float) -> _Live:
    """The need's model: re-planned at the observed workload and calibration, timed as the
    fleet runs (speculation on exactly when the forecast turned it on); a GPU mix is modelled
    by its primary variant (whose per-replica figures the plan keeps)."""
    spec, forecast, state = inp.spec, inp.forecast, inp.state
    resolved = as_planned(resolve(primary_spec(spec, forecast), forecast.name), forecast)
    fresh = state.peak_at_s is None  # no decision on metrics yet: start from the profile
    start = profile_calibration(resolved, forecast) if fresh else state.calibration
    factor = calibrate(resolved, forecast, snap, start, dt)
    prefill_start = start if fresh else state.prefill_calibration
    prefill = calibrate_prefill(resolved, forecast, snap, prefill_start, dt)
    conditions = live_conditions(spec, snap, factor, prefill)
    live = plan_at(resolved, conditions, layout_of(forecast))
    return _Live(resolved, factor, prefill, conditions, live)


def _carry(inp: EngineInput, snap: Snapshot, live: Plan) -> Carried | None:
    """What a replica carries: the fleet's own measure when it is loaded enough to tell, else
    the live plan's rate at the batch the SLOs allow (the reason says which, and where the
    planner's rate comes from)."""
    policy, forecast = inp.spec.scaling.policy, inp.forecast
    carry = (
        carried(
            snap,
            policy,
            live.rps_per_replica,
            live.max_concurrency_per_replica,
            float(forecast.kv_capacity_tokens_per_replica),
            planner_basis(live, forecast),
        )
        if live.replicas is not None
        else None
    )
    if carry is not None and carry.source == "measured" and not policy.measured_capacity:
        carry = unused(carry)  # measured and shown, the planner's rate used
    return carry


def _queue(
    inp: EngineInput,
    snap: Snapshot,
    live: _Live,
    per_replica: float | None,
    lead_s: float,
    dt: float,
) -> tuple[QueueWork | None, Backlog | None]:
    """The queue in units of work (the seconds its prompts take to prefill, against the
    SLO's) and the backlog it is judged by."""
    spec, forecast, state, policy = inp.spec, inp.forecast, inp.state, inp.spec.scaling.policy
    perf = perf_at(
        live.resolved, live.conditions, layout_of(forecast), forecast.max_num_batched_tokens
    )
    work = queue_work(snap, spec, perf, policy.latency_low_ratio)
    backlog = backlog_of(
        snap,
        per_replica,
        policy.waiting_per_replica_high,
        lead_s,
        state.backlog_at_s,
        inp.now_s,
        dt,
    )
    if backlog is not None and work is not None:
        backlog = backlog.model_copy(update={"seen": work.over_high})
    return work, backlog


def _model_need(
    inp: EngineInput,
    snap: Snapshot,
    live: Plan,
    carry: Carried | None,
    room: float,
    binding: str,
) -> tuple[int, str, MixNeed | None]:
    """The model's need in replicas (× the room), what binds it, and a mix's split."""
    spec, forecast, policy = inp.spec, inp.forecast, inp.spec.scaling.policy
    base = live.replicas.with_redundancy if live.replicas is not None else forecast.sized.total
    if carry is not None and carry.source == "measured":
        # the demand the model re-planned for ÷ what a replica is observed to carry
        base = replicas_for(live.design_rps, carry, spec)
        binding = f"{binding}; {carry.reason}"
    model = bounded(math.ceil(base * room - 1e-9), spec)
    mixed: MixNeed | None = None
    if forecast.is_mix and live.replicas is not None:
        # the need in the primary's replicas, carried by the mix split in the scale order
        mixed = mix_total(forecast, base * room)
        model = bounded(mixed.total, spec)
    if is_idle(snap) and policy.workload_source != "forecast":
        model = idle_floor(spec)  # no traffic is a fact: the forecast is not a floor for it
    return model, binding, mixed


def _ahead(
    inp: EngineInput,
    snap: Snapshot,
    per_replica: float | None,
    room: float,
    dt: float,
    model: int,
) -> tuple[RateForecast | None, Outlook | None, int]:
    """The arrival rate's forecast, its outlook one lead time ahead, and the need raised to
    the load expected then."""
    spec, forecast, state = inp.spec, inp.forecast, inp.state
    rate = state.rate
    look: Outlook | None = None
    if snap.arrival_rps is not None:
        rate = update(state.rate, snap.arrival_rps, inp.now_s, snap.rate_window_s)
        look = outlook(
            rate,
            snap.arrival_rps,
            inp.lead_time_s,
            dt,
            None if per_replica is None else per_replica / room,
            snap.rate_window_s,
        )
        ahead = look.replicas
        if ahead is not None and forecast.is_mix:
            ahead = mix_total(forecast, ahead).total  # in the primary's replicas: as a mix
        if ahead is not None and ahead > model:
            model = bounded(ahead, spec)  # the load expected one lead time ahead
    return rate, look, model


def _sheddable_capped(
    step: Transition, spec: InferenceServiceSpec, snap: Snapshot, current: int, floor: int
) -> Transition:
    """A scale-up while only sheddable requests wait stops at ``maxReplicasForSheddable``."""
    cap = sheddable_cap(spec, snap, current, floor)
    if cap is not None and step.replicas > cap.replicas:
        held = cap.replicas <= current
        step = dataclasses.replace(
            step,
            replicas=cap.replicas,
            cause=Cause.SHEDDABLE_CAP if held else step.cause,
            why=cap.why if held else f"{step.why}; {cap.why}",
        )
    return step
