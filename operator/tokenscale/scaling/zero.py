"""PURE: to zero and back (``spec.scaling.minReplicas: 0``), one step of the shared stepper.

- **To zero** (:func:`idle_window`, after the engine decided on an observation): the engines
  report idle (``scaling/traffic.py``: no request finished, none running or waiting — a fact,
  never a missing series) *and* the activation source was read and is 0, at every
  observation for ``spec.scaling.scaleToZero.idleSeconds``: the count goes to 0 at once, from
  any count. A blind observation (no snapshot, core signals missing, stale samples), traffic,
  or an activation source that could not be read restarts the window.
- **At zero** (:func:`at_zero`) no engine reports, so the engine is not run: the wake-up signal
  comes from in front of the engines (:attr:`Snapshot.demand`: the endpoint picker's queue for
  the pool and ``spec.scaling.activation.query``). Demand above 0: the replicas the forecast
  plan's per-replica concurrency needs for the queued requests (:func:`wake_replicas`), at
  least 1, at most ``maxScaleUpStep`` and ``maxReplicas``, at once. Demand 0: hold at zero.
  Demand not read: hold at zero and say why (nothing is known to wait; an unreadable activation
  source wakes nothing).
- **While no engine reports** (woken replicas still loading, or the engines' series missing)
  the engine holds blind; demand read in front of the engines that needs more than the held
  count (:func:`queued_while_blind`) still adds replicas, at most ``maxScaleUpStep`` at a time:
  a queue at the gateway is a fact even when the engines say nothing. Never down.
"""

import math

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning import Plan
from tokenscale.scaling.cause import Cause
from tokenscale.scaling.decision import Decision
from tokenscale.scaling.snapshot import Snapshot
from tokenscale.scaling.state import ScalingState
from tokenscale.scaling.traffic import is_idle


def may_scale_to_zero(spec: InferenceServiceSpec) -> bool:
    """``minReplicas`` 0 in force (``spec`` is the scheduled one) and no pin."""
    s = spec.scaling
    return s.replicas is None and s.min_replicas == 0


def is_at_zero(spec: InferenceServiceSpec, state: ScalingState) -> bool:
    """The last decision was 0 and the bounds in force still allow it."""
    return may_scale_to_zero(spec) and state.decided_replicas == 0


def wake_replicas(spec: InferenceServiceSpec, forecast: Plan, demand: float) -> int:
    """Replicas for ``demand`` queued requests: ``ceil(demand / the plan's in-flight
    requests per replica)``, at least 1, at most ``maxScaleUpStep`` and ``maxReplicas``."""
    s = spec.scaling
    per_replica = forecast.max_concurrency_per_replica
    want = math.ceil(demand / per_replica - 1e-9) if per_replica > 0 else 1
    return max(1, min(want, s.policy.max_scale_up_step, s.max_replicas))


DEMAND_PROBLEMS = ("gateway_queued:", "activation query")
"""How the problems of a demand read begin (``metrics/demand.py``): the endpoint picker's
queue, ``spec.scaling.activation.query``."""


def demand_problems(snap: Snapshot) -> list[str]:
    """Why the demand in front of the engines was not read: its own problems first (at zero no
    engine reports, so the engines' missing series say nothing about it)."""
    own = [p for p in snap.problems if p.startswith(DEMAND_PROBLEMS)]
    return own + [p for p in snap.problems if not p.startswith(DEMAND_PROBLEMS)]


def _sources(snap: Snapshot) -> str:
    parts = []
    if snap.gateway_queued is not None:
        parts.append(f"gateway queue {snap.gateway_queued:g}")
    if snap.activation_demand is not None:
        parts.append(f"activation query {snap.activation_demand:g}")
    return ", ".join(parts)


def at_zero(
    spec: InferenceServiceSpec,
    forecast: Plan,
    snap: Snapshot | None,
    state: ScalingState,
    now_s: float,
) -> Decision:
    """The decision at zero replicas (see the module docstring)."""
    demand = None if snap is None else snap.demand
    memory = {"low_since_s": None, "pressure_since_s": None, "idle_since_s": None}
    if snap is None or demand is None:
        problems = "; ".join(demand_problems(snap)[:3]) if snap is not None else ""
        unread = problems or "no snapshot from the metrics source"
        why = (
            f"at zero replicas and the activation source was not read ({unread}): holding 0; "
            "nothing is known to wait"
        )
        return Decision(
            replicas=0,
            source="hold",
            reason=f"hold 0: {why}",
            cause=Cause.BLIND,
            why=why,
            metrics_available=False,
            metrics_reason=f"activation source unread: {unread}",
            state=state.model_copy(update={**memory, "decided_replicas": 0}),
        )
    if demand > 0:
        n = wake_replicas(spec, forecast, demand)
        why = (
            f"{demand:g} requests waiting in front of the engines ({_sources(snap)}); "
            f"{n} replicas for them at {forecast.max_concurrency_per_replica:g} in flight each "
            "(the plan's)"
        )
        return Decision(
            replicas=n,
            source="metrics",
            reason=f"scale up 0→{n}: {why}",
            cause=Cause.WAKE,
            why=why,
            model_replicas=n,
            metrics_available=True,
            metrics_reason="ok",
            state=state.model_copy(update={**memory, "decided_replicas": n, "last_scale_s": now_s}),
        )
    why = f"nothing waiting in front of the engines ({_sources(snap)})"
    return Decision(
        replicas=0,
        source="metrics",
        reason=f"hold 0: {why}",
        cause=Cause.AT_ZERO,
        why=why,
        model_replicas=0,
        metrics_available=True,
        metrics_reason="ok",
        state=state.model_copy(update={**memory, "decided_replicas": 0}),
    )


def idle_window(
    spec: InferenceServiceSpec,
    snap: Snapshot | None,
    state: ScalingState,
    decision: Decision,
    now_s: float,
) -> Decision:
    """``decision`` (the engine's, on this observation) with the idle clock advanced, or 0
    replicas once the service has been idle for the whole window (see the module docstring).
    ``state`` is the memory before the engine ran."""
    if not may_scale_to_zero(spec):
        if decision.state.idle_since_s is None:
            return decision
        return decision.model_copy(
            update={"state": decision.state.model_copy(update={"idle_since_s": None})}
        )
    idle = (
        snap is not None
        and decision.metrics_available
        and is_idle(snap)
        and snap.demand is not None
        and snap.demand <= 0
    )
    if not idle:
        after = decision.state.model_copy(update={"idle_since_s": None})
        return decision.model_copy(update={"state": after})
    assert snap is not None
    since = state.idle_since_s if state.idle_since_s is not None else now_s
    window = spec.scaling.scale_to_zero.idle_seconds
    waited = now_s - since
    if waited < window or decision.replicas == 0:
        after = decision.state.model_copy(update={"idle_since_s": since})
        return decision.model_copy(update={"state": after})
    current = state.decided_replicas if state.decided_replicas is not None else decision.replicas
    why = (
        f"idle for {waited:.0f} s (≥ scaleToZero.idleSeconds {window} s): "
        f"{snap.replicas_reporting} engines report no traffic and {_sources(snap)}"
    )
    after = decision.state.model_copy(
        update={
            "decided_replicas": 0,
            "idle_since_s": since,
            "low_since_s": None,
            "pressure_since_s": None,
            "last_scale_s": now_s,
        }
    )
    return decision.model_copy(
        update={
            "replicas": 0,
            "source": "metrics",
            "reason": f"scale down {current}→0: {why}",
            "cause": Cause.SCALE_TO_ZERO,
            "why": why,
            "model_replicas": 0,
            "state": after,
        }
    )


def queued_while_blind(
    spec: InferenceServiceSpec,
    forecast: Plan,
    snap: Snapshot | None,
    decision: Decision,
    now_s: float,
) -> Decision:
    """``decision`` (a blind hold), raised to the replicas the demand in front of the engines
    needs when that is more (see the module docstring); unchanged otherwise."""
    demand = None if snap is None else snap.demand
    if decision.cause is not Cause.BLIND or snap is None or demand is None or demand <= 0:
        return decision
    s = spec.scaling
    held = decision.replicas
    per_replica = forecast.max_concurrency_per_replica
    want = math.ceil(demand / per_replica - 1e-9) if per_replica > 0 else held + 1
    target = min(max(want, held), held + s.policy.max_scale_up_step, s.max_replicas)
    if target <= held:
        return decision
    why = (
        f"{demand:g} requests waiting in front of the engines ({_sources(snap)}) while no "
        f"engine reports ({decision.metrics_reason}): {target} replicas at "
        f"{per_replica:g} in flight each (the plan's)"
    )
    return decision.model_copy(
        update={
            "replicas": target,
            "source": "metrics",
            "reason": f"scale up {held}→{target}: {why}",
            "cause": Cause.WAKE,
            "why": why,
            "model_replicas": want,
            "state": decision.state.model_copy(
                update={"decided_replicas": target, "last_scale_s": now_s}
            ),
        }
    )
