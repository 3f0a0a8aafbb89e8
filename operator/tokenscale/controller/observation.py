"""What one reconcile reads before it decides, as one typed value.

:func:`tokenscale.controller.reconcile.observe` fills an :class:`Observation` (the service and
its plan, the status as read, the workload as found, the metrics, the quota figures and the
variants' stock-out marks); :func:`tokenscale.controller.desire.desire` decides from it alone.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tokenscale.api.inference_service import InferenceService
from tokenscale.api.status import InferenceServiceStatus
from tokenscale.controller.quota import QuotaSeen
from tokenscale.controller.status import Observed
from tokenscale.controller.workload_ref import Found
from tokenscale.metrics.demand import Demand
from tokenscale.planning import Plan
from tokenscale.scaling import Snapshot
from tokenscale.scaling.stepper import Observation as EngineObservation
from tokenscale.scaling.stockout import Exhausted


@dataclass(frozen=True)
class MetricsView:
    """Live metrics for one service this cycle (None everywhere: no Prometheus configured)."""

    snapshot: Snapshot | None
    source_error: str | None
    now_s: float
    interval_s: float
    """The configured time between metrics reads (``--interval``)."""
    read_at_s: float | None = None
    """When the fleet read that produced ``snapshot`` ran (None: no read yet). The
    observation's time: the engine decides once per read."""
    stale_after_s: float = 120.0
    running_by_pod: Mapping[str, float] | None = None
    """Running requests per pod (None: unknown), to pick the pods a scale-down removes."""
    time_scale: float = 1.0
    """Engine seconds per wall second: ``now_s``, ``read_at_s`` and ``interval_s`` are on the
    engine's clock, and the pods' measured lead time (wall) is multiplied by this."""

    demand: Demand | None = None
    """Demand in front of the engines (``metrics/demand.py``; None: nothing to read)."""

    @property
    def observation(self) -> EngineObservation | None:
        if self.read_at_s is None:
            return None
        snapshot = self.snapshot
        if snapshot is None:
            why = self.source_error or "no vLLM series for this service in Prometheus"
            snapshot = Snapshot(at=self.read_at_s, replicas_reporting=0, problems=[why])
        if self.demand is not None:
            snapshot = snapshot.model_copy(
                update={
                    **self.demand.fields(),
                    "problems": [*snapshot.problems, *self.demand.problems],
                }
            )
        return EngineObservation(at_s=self.read_at_s, snapshot=snapshot)


@dataclass(frozen=True)
class Observation:
    """One InferenceService and the world around it, as read this reconcile."""

    name: str
    namespace: str
    uid: str
    generation: int | None
    now: str
    """The reconcile's time (RFC 3339), for conditions and the last scale time."""
    now_s: float
    """The same moment in epoch seconds, on the engine's clock with a metrics source: the
    moment ``spec.scaling.schedule`` is judged at."""
    service: InferenceService
    """The spec with ConfigMap references inlined and the measured acceptance applied."""
    plan: Plan
    status: InferenceServiceStatus
    """``status`` as read (typed; what could not be read is in ``status_problems``)."""
    status_problems: list[str]
    found: Found | None
    selector: str
    """The pods' label selector (the referenced workload's, or the rendered one's)."""
    """``spec.workloadRef``'s target as found (None: tokenscale renders the workload)."""
    lead_time_s: float | None
    """The pods' measured start-up time, on the engine's clock (None: none measured)."""
    workload_kind: str
    workload_now: dict[str, Any] | None
    """The workload (the referenced one, or the rendered one's name) as read."""
    was: Observed | None
    """The workload as the status reports it before anything is written (a mix: the variants'
    Deployments as one)."""
    live_replicas: int | None
    role_lives: Mapping[str, dict[str, Any] | None]
    """Each prefill/decode role's workload as read (empty: not disaggregated)."""
    live_by_role: Mapping[str, int | None]
    marks: Mapping[str, Exhausted]
    """The GPU variants exhausted now (empty: one GPU type)."""
    quota: QuotaSeen | None
    """The GPU quotas and what this service's pods hold (None: nothing bounds the decision)."""
    metrics: MetricsView | None
