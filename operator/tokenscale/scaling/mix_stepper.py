"""PURE: one decision per observation for a GPU mix — the shared stepper, then the variants.

``step(previous state, observation, the variants' pods, now) → (decision, counts per variant,
new state)``, in the order the operator's reconcile runs the same functions:

1. **Stockouts** (``scaling/stockout.exhausted_variants``): the pods each variant could not
   place for longer than the grace mark it exhausted; a mark is kept for the retry period,
   then dropped (the variant is tried again).
2. **The total** (``scaling/stepper.Stepper.step``): the engine models the mix by its primary
   variant and turns its need into the fewest replicas whose split carries it
   (``scaling/variant_order.mix_total``); the one-step limits apply to the total.
3. **The split** (``scaling/quota.bound_by_quota`` with ``scaling/stockout.room_of``): the
   total spread from the plan's mix in the scale order — up on the cheapest capacity per RPS
   with room, down the dearest first — within each variant's ``maxReplicas``, an exhausted
   variant's placed count, and the GPU quota when one is given.

The operator runs step 1 in its observe phase (``controller/variants.stock_marks``), step 2 in
``controller/desire.decide`` and step 3 in ``controller/desire`` (``bound_seen``); the
simulator runs them through :class:`MixStepper`. The state is what status keeps: the engine's
memory and the exhausted marks.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tokenscale.planning.result import Plan
from tokenscale.scaling.decision import Decision
from tokenscale.scaling.quota import GpuQuota, QuotaBound, bound_by_quota
from tokenscale.scaling.state import ScalingState
from tokenscale.scaling.stepper import Observation, Stepper
from tokenscale.scaling.stockout import (
    STOCKOUT_GRACE_S,
    STOCKOUT_RETRY_S,
    Exhausted,
    VariantPod,
    exhausted_variants,
    room_of,
)


@dataclass(frozen=True)
class MixState:
    """What a mix remembers between observations: the engine's memory and the marks."""

    scaling: ScalingState
    marks: Mapping[str, Exhausted] = field(default_factory=dict)


@dataclass(frozen=True)
class MixStep:
    decision: Decision | None
    """The stepper's (None: the observation was already decided on; the total is the stored
    one)."""
    total: int
    """Replicas the stepper decided for the whole mix."""
    bound: QuotaBound
    """The split: ``bound.counts`` per variant (always set for a mix), ``bound.replicas``
    their sum, ``bound.limited`` why fewer than ``total`` (no room, the quota)."""
    state: MixState

    @property
    def counts(self) -> dict[str, int]:
        return dict(self.bound.counts or {})


@dataclass(frozen=True)
class MixStepper:
    """The shared :class:`Stepper` of a mix plan (``stepper.forecast.mix`` set), with the
    stockout rule's grace and retry periods."""

    stepper: Stepper
    grace_s: float = STOCKOUT_GRACE_S
    retry_s: float = STOCKOUT_RETRY_S

    @property
    def plan(self) -> Plan:
        return self.stepper.forecast

    def initial(self) -> MixState:
        """The memory before the first observation: the plan's total decided, nothing marked."""
        return MixState(ScalingState(decided_replicas=self.plan.sized.total))

    def step(
        self,
        state: MixState,
        observation: Observation | None,
        pods: Sequence[VariantPod],
        now_s: float,
        lead_time_s: float | None = None,
        quotas: Sequence[GpuQuota] = (),
        held: Mapping[str, int] | None = None,
    ) -> MixStep:
        """Marks from ``pods`` (each variant's, placed or unschedulable since when), the total
        from the stepper on ``observation``, the split within the room (module docstring).
        ``quotas``/``held``: the namespace's GPU quotas and the GPUs the service holds (none:
        no quota bounds it)."""
        if not self.plan.is_mix:
            raise ValueError("MixStepper needs a mix plan (spec.hardware.variants)")
        marks = exhausted_variants(pods, now_s, state.marks, self.grace_s, self.retry_s)
        s = self.stepper.step(state.scaling, observation, now_s, lead_time_s)
        decided = s.state.decided_replicas
        total = decided if decided is not None else self.plan.sized.total
        if s.decision is not None:
            total = s.decision.replicas
        bound = bound_by_quota(self.plan, total, quotas, held or {}, "", room_of(marks))
        return MixStep(s.decision, total, bound, MixState(s.state, marks))
