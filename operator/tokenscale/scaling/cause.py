"""PURE: why a decision moved or held the replica count, as a value, not a sentence.

Every :class:`~tokenscale.scaling.decision.Decision` carries one :class:`Cause` and a
``why`` (the numbers behind it). Status, events, the operator's metrics and
``simulate --explain`` render their words from these two; nothing parses a reason string.
"""

from enum import StrEnum


class Cause(StrEnum):
    """What decided the count (the value is written to ``status.decision.cause``)."""

    PINNED = "Pinned"
    """``spec.scaling.replicas`` is set: autoscaling is off."""
    PLAN = "Plan"
    """No metrics source: the forecast plan's count."""
    BLIND = "Blind"
    """Metrics missing or stale: hold the last decision (never below the plan, never down)."""
    PRESSURE = "Pressure"
    """A signal at or above its high watermark asked for more replicas."""
    MODEL_NEED = "ModelNeed"
    """The re-planned model (or its forecast one lead time ahead) needs more replicas."""
    PRESSURE_NOT_SUSTAINED = "PressureNotSustained"
    """Pressure seen, but not yet for ``scaleUpStabilizationSeconds``: hold."""
    AT_LIMIT = "AtLimit"
    """More wanted, but at ``maxReplicas`` or the step limit: hold."""
    SCALE_DOWN = "ScaleDown"
    """Every signal low for the window and the model needs fewer: one step down."""
    PEAK_GUARD = "PeakGuard"
    """Low now, but the recent peak load would not fit at the smaller count: hold."""
    BURST_FLOOR = "BurstFloor"
    """Low now, but a burst needed this many replicas within ``burstMemorySeconds``: hold."""
    LOW_NOT_SUSTAINED = "LowNotSustained"
    """Every signal low, the window not yet passed: hold."""
    STEADY = "Steady"
    """Signals within their watermarks: hold."""
    BOUNDS = "Bounds"
    """The spec's ``minReplicas``/``maxReplicas`` changed: the stored count re-bounded."""
    RATIO = "Ratio"
    """Prefill/decode: raised to keep the pools' ratio in its band (``scaling/roles.py``)."""
    SCALE_TO_ZERO = "ScaleToZero"
    """minReplicas 0: idle for ``scaleToZero.idleSeconds`` with the activation source at 0."""
    WAKE = "Wake"
    """At zero replicas, demand in front of the engines: replicas for the queued work."""
    AT_ZERO = "AtZero"
    """At zero replicas and nothing waiting in front of the engines: hold at zero."""
    SHEDDABLE_CAP = "SheddableCap"
    """Only sheddable requests wait at the gateway: held at ``maxReplicasForSheddable``."""

    @property
    def moves(self) -> bool:
        """A cause that can change the count (the others hold it)."""
        return self in (
            Cause.PRESSURE,
            Cause.MODEL_NEED,
            Cause.SCALE_DOWN,
            Cause.BOUNDS,
            Cause.RATIO,
            Cause.SCALE_TO_ZERO,
            Cause.WAKE,
        )

    @property
    def words(self) -> str:
        """What the cause means, for people (``simulate --explain``, logs)."""
        return _WORDS[self]


_WORDS = {
    Cause.PINNED: "pinned by the spec",
    Cause.PLAN: "the forecast plan, no metrics",
    Cause.BLIND: "holding, metrics unavailable",
    Cause.PRESSURE: "scaling up on pressure",
    Cause.MODEL_NEED: "scaling up to the model's need",
    Cause.PRESSURE_NOT_SUSTAINED: "holding, pressure not yet sustained",
    Cause.AT_LIMIT: "holding at maxReplicas or the step limit",
    Cause.SCALE_DOWN: "scaling down one step",
    Cause.PEAK_GUARD: "holding, the recent peak would not fit fewer",
    Cause.BURST_FLOOR: "holding, a recent burst needed this many",
    Cause.LOW_NOT_SUSTAINED: "holding, low not yet for the whole window",
    Cause.STEADY: "holding, signals within watermarks",
    Cause.BOUNDS: "re-bounded to the spec's minReplicas/maxReplicas",
    Cause.RATIO: "raised to keep the prefill:decode ratio in its band",
    Cause.SCALE_TO_ZERO: "scaling to zero, idle for the whole window",
    Cause.WAKE: "waking from zero, requests waiting in front of the engines",
    Cause.AT_ZERO: "holding at zero, nothing waiting",
    Cause.SHEDDABLE_CAP: "holding, only sheddable requests wait (maxReplicasForSheddable)",
}
