"""PURE: the policy — from the model's need, the signals and the memory, one transition of the
replica count with its typed cause.

- **Fast up**: a high signal or a model that needs more asks for
  ``max(model, every high signal's replicas)``, at most ``maxScaleUpStep`` above the current
  count, once pressure has lasted ``scaleUpStabilizationSeconds`` (a model that needs more
  moves at once). Pressure is measured on reporting (ready) replicas while the decision is
  compared with the replicas already asked for, so pods still loading count as supply.
- **Careful down**: only when every signal has stayed below its low watermark for the
  stabilisation window, the model asks for fewer, and the recent peak load would still fit
  under the high watermarks at the smaller count (``peak_load / target <
  scaleDownHeadroom``): ``maxScaleDownStep`` at a time, never below ``minReplicas`` or the
  model; the next step needs ``SCALE_DOWN_STEP_S`` more of low signals, not a whole window.
- **Memory of bursts**: never below the count a scale-up decided within
  ``burstMemorySeconds`` (``scaling/burst_memory.py``).
- Otherwise hold.
"""

from dataclasses import dataclass, field
from typing import Any

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.scaling.cause import Cause
from tokenscale.scaling.decision import Decision, Signal
from tokenscale.scaling.state import ScalingState

SCALE_DOWN_STEP_S = 120.0


@dataclass(frozen=True)
class Transition:
    """The count after this observation, why (typed), and what the memory keeps of it."""

    replicas: int
    cause: Cause
    why: str
    memory: dict[str, Any] = field(default_factory=dict)
    """Updates to the scaling state's clocks (``low_since_s``, ``pressure_since_s``,
    ``last_scale_s``)."""

    def reason(self, current: int) -> str:
        """The whole sentence for status: ``scale up 2→3: …``, ``hold 3: …``."""
        if self.replicas > current:
            return f"scale up {current}→{self.replicas}: {self.why}"
        if self.replicas < current:
            return f"scale down {current}→{self.replicas}: {self.why}"
        return f"hold {current}: {self.why}"


def bounded(replicas: int, spec: InferenceServiceSpec) -> int:
    s = spec.scaling
    return min(max(replicas, s.min_replicas), s.max_replicas)


def hold_blind(state: ScalingState, held: int, why: str, blind: str) -> Decision:
    """Hold ``held`` replicas on no usable metrics (``blind`` says why): never a step down
    blind; the pressure and low-load timers start again when the metrics come back."""
    return Decision(
        replicas=held,
        source="hold",
        reason=why,
        cause=Cause.BLIND,
        why=why,
        metrics_available=False,
        metrics_reason=blind,
        state=state.model_copy(
            update={"decided_replicas": held, "low_since_s": None, "pressure_since_s": None}
        ),
    )


def transition(
    spec: InferenceServiceSpec,
    state: ScalingState,
    current: int,
    model: int,
    binding: str,
    sigs: list[Signal],
    peak_load: float,
    now: float,
    floor: int | None = None,
) -> Transition:
    """One step of the policy (see the module docstring); ``floor``: the burst memory's
    standing count (``scaling/burst_memory.py``), below which no step down goes."""
    high = [s for s in sigs if s.level == "high"]
    all_low = bool(sigs) and all(s.level == "low" for s in sigs)
    if high or model > current:
        return _up(spec, state, current, model, binding, high, now)
    if all_low and model < current:
        return _down(spec, state, current, model, peak_load, now, floor)
    return Transition(
        current,
        Cause.STEADY,
        "signals within watermarks",
        {"low_since_s": None, "pressure_since_s": None},
    )


def _up(
    spec: InferenceServiceSpec,
    state: ScalingState,
    current: int,
    model: int,
    binding: str,
    high: list[Signal],
    now: float,
) -> Transition:
    """Pressure or the model's need above the current count: up, once sustained."""
    policy = spec.scaling.policy
    pressure_since = state.pressure_since_s if state.pressure_since_s is not None else now
    want = max([model, *(s.replicas for s in high)])
    if high and now - pressure_since < policy.scale_up_stabilization_seconds and model <= current:
        return Transition(
            current,
            Cause.PRESSURE_NOT_SUSTAINED,
            "pressure not yet sustained",
            {"pressure_since_s": pressure_since},
        )
    target = bounded(min(max(want, current), current + policy.max_scale_up_step), spec)
    why = ", ".join(s.reason for s in high) or f"model needs {model} ({binding})"
    clocks: dict[str, Any] = {
        "pressure_since_s": pressure_since if high else None,
        "low_since_s": None,
    }
    if target > current:
        cause = Cause.PRESSURE if high else Cause.MODEL_NEED
        return Transition(target, cause, why, {**clocks, "last_scale_s": now})
    return Transition(current, Cause.AT_LIMIT, f"at maxReplicas or step: {why}", clocks)


def _down(
    spec: InferenceServiceSpec,
    state: ScalingState,
    current: int,
    model: int,
    peak_load: float,
    now: float,
    floor: int | None = None,
) -> Transition:
    """Every signal low and the model's need below the current count: down, once the low
    has lasted the stabilisation window and the recent peak still fits, never below the burst
    memory's ``floor``."""
    policy = spec.scaling.policy
    low_since = state.low_since_s if state.low_since_s is not None else now
    waited = now - low_since
    window = policy.scale_down_stabilization_seconds
    clocks = {"low_since_s": low_since, "pressure_since_s": None}
    if waited >= window:
        target = bounded(max(current - policy.max_scale_down_step, model), spec)
        if floor is not None and target < floor:
            target = min(current, floor)
            if target >= current:
                return Transition(
                    current,
                    Cause.BURST_FLOOR,
                    f"every signal low for {waited:.0f} s, but a burst needed {floor} "
                    f"within burstMemorySeconds {spec.scaling.burst_memory_seconds}",
                    clocks,
                )
        projected = peak_load / max(target, 1)
        if target < current and projected >= policy.scale_down_headroom:
            return Transition(
                current,
                Cause.PEAK_GUARD,
                f"the recent peak load ({peak_load:.2f} replicas at the high watermarks) "
                f"would reach {projected:.2f} of them at {target} replicas "
                f"(headroom {policy.scale_down_headroom:g})",
                clocks,
            )
        if target < current:
            return Transition(
                target,
                Cause.SCALE_DOWN,
                f"every signal low for {waited:.0f} s (≥ {window} s) and the model needs {model}",
                {
                    "last_scale_s": now,
                    # the next step needs one more rate window of low signals, not a whole
                    # stabilisation window: the dip has already proven itself
                    "low_since_s": now - max(0.0, window - SCALE_DOWN_STEP_S),
                    "pressure_since_s": None,
                },
            )
    return Transition(
        current,
        Cause.LOW_NOT_SUSTAINED,
        f"all signals low for {waited:.0f} s of {window} s before scaling down",
        clocks,
    )
