"""The replica decision and :func:`decide_plan_only`, used when there is no metrics source
(live metrics go through ``scaling/engine.py``'s ``decide``, which returns the same type).

With no metrics the replicas follow the forecast plan: ``plan.sized.total`` is already
``ceil(max(throughput, concurrency, KV) × redundancy) + spares`` within
``[minReplicas, maxReplicas]``, or the ``scaling.replicas`` pin.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tokenscale.planning.result import Plan
from tokenscale.scaling.carried import Carried
from tokenscale.scaling.cause import Cause
from tokenscale.scaling.dispersion import Dispersion
from tokenscale.scaling.forecast import Outlook
from tokenscale.scaling.state import ScalingState


class Signal(BaseModel):
    """One pressure signal and the replicas it recommends."""

    model_config = ConfigDict(frozen=True)

    name: str
    value: float | None
    high: float
    low: float
    level: Literal["high", "normal", "low", "missing"]
    replicas: int
    reason: str
    over_slo_low: float | None = None
    """A latency signal read from its buckets: the least share of requests over the SLO."""
    over_slo_high: float | None = None
    """… and the most (requests in the SLO's own bucket may be on either side)."""
    error_budget: float | None = None
    """``1 − spec.scaling.targetAttainment``: the share over the SLO a latency signal allows."""
    tokens: float | None = None
    """The work behind the value in tokens: ``queue_s``, the prompt tokens waiting to prefill;
    ``kv_usage``, the KV tokens held on the fullest engine."""
    tokens_per_s: float | None = None
    """``queue_s``: the prefill rate of one engine the waiting tokens are divided by."""
    capacity_tokens: float | None = None
    """``kv_usage``: one engine's KV pool in tokens (the plan's)."""
    basis: str | None = None
    """Where the figures come from, in words (observed or forecast prompts, the planner)."""


class Decision(BaseModel):
    """How many replicas to run and why: a typed ``cause`` and its ``why`` (the numbers),
    from which status, events and metrics render their words; ``reason`` is the whole
    sentence for status (``"scale up 2→3: kv_usage 0.95 ≥ 0.9 on 2 reporting"``)."""

    model_config = ConfigDict(frozen=True)

    replicas: int
    reason: str
    cause: Cause
    why: str
    """The cause's numbers, without the verb and counts (events prefix their own from→to)."""
    source: Literal["plan", "pin", "metrics", "hold"]
    signals: list[Signal] = Field(default_factory=list)
    diagnosis: list[str] = Field(default_factory=list)
    model_replicas: int | None = None
    calibration: float = 1.0
    prefill_calibration: float = 1.0
    metrics_available: bool = False
    metrics_reason: str = "no metrics source"
    outlook: Outlook | None = None
    """The forecast one lead time ahead and the burst headroom (None when blind or pinned)."""
    capacity: Carried | None = None
    """The per-replica rate the need was divided by: measured or the planner's
    (``scaling/carried.py``; None when blind, pinned or the plan cannot serve)."""
    dispersion: Dispersion | None = None
    """The arrivals' index of dispersion and the room it asked for (None when blind or
    pinned)."""
    state: ScalingState = Field(default_factory=ScalingState)


def pinned_decision(pin: int, metrics_available: bool, state: ScalingState) -> Decision:
    """``spec.scaling.replicas`` set, for one pool or P/D roles alike: the pin, metrics
    reported and not acted on."""
    why = f"pinned by spec.scaling.replicas={pin}"
    return Decision(
        replicas=pin,
        source="pin",
        reason=why,
        cause=Cause.PINNED,
        why=why,
        metrics_available=metrics_available,
        metrics_reason="pinned: metrics are reported, not acted on",
        state=state.model_copy(update={"decided_replicas": pin}),
    )


def decide_plan_only(plan: Plan, pinned: int | None) -> Decision:
    if pinned is not None:
        why = f"pinned by spec.scaling.replicas={pinned}"
        return Decision(replicas=pinned, reason=why, why=why, cause=Cause.PINNED, source="pin")
    r = plan.sized
    why = (
        f"{plan.binding_constraint} needs {r.needed:.2f} replicas "
        f"(throughput {r.throughput:.2f}, concurrency {r.concurrency:.2f}, KV {r.kv:.2f}); "
        f"with redundancy {r.with_redundancy}, within bounds {r.total}"
    )
    return Decision(
        replicas=r.total, reason=f"plan: {why}", why=why, cause=Cause.PLAN, source="plan"
    )
