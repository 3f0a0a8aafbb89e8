"""PURE: one decision per observation — the stepper the operator and the simulator share.

``step(previous state, observation, now) → (decision, new state)``, with the timing rules:

- The engine runs only on an observation **newer** than the one the state last decided on
  (``ScalingState.observed_at_s``). Re-stepping on the same observation (a Deployment event
  between two metric reads, a retry) returns no new decision and the state unchanged: the
  caller applies the decision it stored.
- The engine's ``interval_s`` is the real time between this observation and the previous one
  decided on (the caller's configured interval for a first decision), so smoothing, the
  backlog's "seen at the previous observation" and the forecast horizon run on real time.
- The engine decides **as of its observation**: on a new observation its ``now`` is the
  observation's time, not the caller's (a reconcile runs a moment after the read), so its
  clocks (the rate smoother, the pressure, low and scale times) advance by the time between
  observations, as in the simulator, whatever the caller's latency (in the compressed-time
  playground, ``speed`` times that latency). An observation already decided on, re-decided
  without a stored decision, is judged at ``now_s`` (its age counts against staleness).
- A spec that changed since (a pin, lowered bounds) re-bounds the stored count without
  re-running the engine: cause ``Pinned`` or ``Bounds``.
- ``spec.scaling.schedule``: the engine and the re-bounding see the bounds in force at
  ``now_s`` (``scaling/schedule.py``), so a window opening or closing between two observations
  re-bounds the stored count at once.
- A prefill/decode service (:meth:`Stepper.step_roles`): the same rules with one memory per
  role (``scaling/roles.py``); the observation carries each role's snapshot
  (``Snapshot.roles``) and its time is the decode memory's ``observed_at_s`` (both roles are
  decided on every observation, together).
- ``minReplicas: 0`` (``scaling/zero.py``): at zero the engine is not run (no engine reports);
  the demand in front of the engines holds the count at zero or wakes it. Above zero the
  engine decides, a queue in front of blind engines may add replicas, and the idle window may
  then take the count to zero.
"""

from dataclasses import dataclass

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning import Plan
from tokenscale.scaling.cause import Cause
from tokenscale.scaling.decision import Decision
from tokenscale.scaling.engine import EngineInput, decide
from tokenscale.scaling.forecast import MAX_GAP_S
from tokenscale.scaling.policy import bounded
from tokenscale.scaling.roles import ROLES, RolesDecision, decide_roles
from tokenscale.scaling.schedule import open_window, scheduled_spec
from tokenscale.scaling.snapshot import Snapshot
from tokenscale.scaling.state import ScalingState
from tokenscale.scaling.zero import at_zero, idle_window, is_at_zero, queued_while_blind

SAME_OBSERVATION_S = 1e-3
"""Observation times closer than this are one observation (status keeps milliseconds)."""


@dataclass(frozen=True)
class Observation:
    """One read of the metrics: when, and what it found (None: nothing for this service)."""

    at_s: float
    snapshot: Snapshot | None


@dataclass(frozen=True)
class Step:
    """``decision`` None: the observation was already decided on and the spec allows the
    stored count; the caller keeps the decision it stored. ``state`` is the memory after."""

    decision: Decision | None
    state: ScalingState
    engine_ran: bool = False
    """True when the engine decided on the observation (False: stored or re-bounded)."""


@dataclass(frozen=True)
class RolesStep:
    """:meth:`Stepper.step_roles`'s answer: ``decision`` None: the observation was decided on
    and the spec allows both stored counts (the caller keeps what it stored)."""

    decision: RolesDecision | None
    states: dict[str, ScalingState]
    engine_ran: bool = False


@dataclass(frozen=True)
class Stepper:
    """The engine's clock and configuration for one service."""

    spec: InferenceServiceSpec
    forecast: Plan
    interval_s: float
    """The configured time between observations (``--interval``; the simulator's
    ``decision_interval_s``): the engine's interval for a first decision."""
    stale_after_s: float = 120.0

    def is_new(self, state: ScalingState, observation: Observation | None) -> bool:
        if observation is None:
            return False
        last = state.observed_at_s
        return last is None or observation.at_s > last + SAME_OBSERVATION_S

    def elapsed_s(self, state: ScalingState, observation: Observation) -> float:
        """Seconds since the observation last decided on (the configured interval for the
        first, or after a gap long enough to restart the smoothers)."""
        last = state.observed_at_s
        if last is None or observation.at_s - last > MAX_GAP_S:
            return self.interval_s
        return observation.at_s - last

    def step(
        self,
        state: ScalingState,
        observation: Observation | None,
        now_s: float,
        lead_time_s: float | None = None,
        stored: bool = True,
    ) -> Step:
        """Decide on ``observation`` if it is new (or ``stored`` is False: the caller has no
        decision to re-apply); else re-bound the stored decision to today's spec."""
        spec = scheduled_spec(self.spec, now_s)
        if not self.is_new(state, observation) and stored:
            return Step(self._rebounded(state, spec, now_s), state)
        snapshot = None if observation is None else observation.snapshot
        interval = self.interval_s if observation is None else self.elapsed_s(state, observation)
        at = now_s
        if observation is not None and self.is_new(state, observation):
            at = observation.at_s
            spec = scheduled_spec(self.spec, at)
        if is_at_zero(spec, state):
            d = at_zero(spec, self.forecast, snapshot, state, at)
        else:
            d = decide(
                EngineInput(
                    spec=spec,
                    forecast=self.forecast,
                    snapshot=snapshot,
                    state=state,
                    now_s=at,
                    interval_s=interval,
                    stale_after_s=self.stale_after_s,
                    lead_time_s=lead_time_s,
                )
            )
            d = queued_while_blind(spec, self.forecast, snapshot, d, at)
            d = idle_window(spec, snapshot, state, d, at)
        after = d.state.model_copy(
            update={
                "observed_at_s": state.observed_at_s if observation is None else observation.at_s,
                "lead_time_s": lead_time_s,
            }
        )
        d = d.model_copy(update={"state": after})
        return Step(d, after, engine_ran=True)

    def _rebounded(
        self, state: ScalingState, spec: InferenceServiceSpec, now_s: float
    ) -> Decision | None:
        s = spec.scaling
        held = state.decided_replicas
        if s.replicas is not None and held != s.replicas:
            why = f"pinned by spec.scaling.replicas={s.replicas}"
            return Decision(
                replicas=s.replicas,
                source="pin",
                reason=why,
                cause=Cause.PINNED,
                why=why,
                state=state.model_copy(update={"decided_replicas": s.replicas}),
            )
        if s.replicas is None and held is not None and bounded(held, spec) != held:
            to = bounded(held, spec)
            window = open_window(self.spec, now_s)
            source = "spec.scaling" if window is None else window.label
            why = f"{source} bounds [{s.min_replicas}, {s.max_replicas}] in force"
            return Decision(
                replicas=to,
                source="hold",
                reason=f"{'scale up' if to > held else 'scale down'} {held}→{to}: {why}",
                cause=Cause.BOUNDS,
                why=why,
                state=state.model_copy(update={"decided_replicas": to}),
            )
        return None

    def step_roles(
        self,
        states: dict[str, ScalingState],
        observation: Observation | None,
        now_s: float,
        lead_time_s: float | None = None,
        stored: bool = True,
    ) -> RolesStep:
        """Both roles of a prefill/decode service on ``observation`` if it is new (or
        ``stored`` is False); else each stored count re-bounded to today's spec (a role whose
        count the spec still allows keeps its stored decision: ``decision`` None when both
        do)."""
        spec = scheduled_spec(self.spec, now_s)
        clock = states["decode"]
        if not self.is_new(clock, observation) and stored:
            rebounded = {role: self._rebounded(states[role], spec, now_s) for role in ROLES}
            if all(d is None for d in rebounded.values()):
                return RolesStep(None, dict(states))
            kept = {
                role: d
                if d is not None
                else Decision(
                    replicas=states[role].decided_replicas or 0,
                    source="hold",
                    reason="stored decision",
                    cause=Cause.STEADY,
                    why="stored decision",
                    state=states[role],
                )
                for role, d in rebounded.items()
            }
            return RolesStep(
                RolesDecision(
                    prefill=kept["prefill"],
                    decode=kept["decode"],
                    ratio_planned=None,
                    coordination="re-bounded to the spec",
                ),
                {role: d.state for role, d in kept.items()},
            )
        snapshot = None if observation is None else observation.snapshot
        interval = self.interval_s if observation is None else self.elapsed_s(clock, observation)
        snaps = {role: None if snapshot is None else snapshot.roles.get(role) for role in ROLES}
        d = decide_roles(
            spec, self.forecast, snaps, states, now_s, interval, lead_time_s, self.stale_after_s
        )
        at = clock.observed_at_s if observation is None else observation.at_s
        after = {
            role: d.of(role).state.model_copy(
                update={"observed_at_s": at, "lead_time_s": lead_time_s}
            )
            for role in ROLES
        }
        d = d.model_copy(
            update={role: d.of(role).model_copy(update={"state": after[role]}) for role in ROLES}
        )
        return RolesStep(d, after, engine_ran=True)
