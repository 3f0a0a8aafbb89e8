"""What one simulated run reports. ``SimResult.model_dump(mode="json")`` is ``-o json``."""

from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from tokenscale.scaling.decision import Decision
from tokenscale.scaling.snapshot import Snapshot


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class TimelinePoint(_Frozen):
    t_s: float
    arrival_rps: float = Field(description="Arrivals per second since the previous point")
    replicas_target: int
    replicas_ready: int
    replicas_starting: int
    waiting: int = Field(description="Requests queued in engines and the gateway (truth)")
    kv_usage_max: float = Field(description="Fullest engine's KV usage (truth)")
    ttft_p99_s: float | None = Field(description="What Prometheus reported over the window")
    tpot_p99_s: float | None
    reason: str = Field(default="", description="The policy's reason for this decision")
    why: str = Field(default="", description="Its numbers alone (what the plot annotates)")
    dispersion_index: float | None = Field(
        default=None,
        description="The arrivals' index of dispersion the policy saw (scaling/dispersion.py)",
    )
    dispersion_room: float | None = Field(
        default=None, description="The room it asked for (1: Poisson sizing)"
    )


class Explanation(_Frozen):
    """The tokenscale decision at one moment, with what it saw (``simulate --explain``)."""

    t_s: float
    replicas_ready: int
    replicas_starting: int
    snapshot: Snapshot | None
    decision: Decision


class FrontierPoint(_Frozen):
    """One fixed fleet of the static frontier (``simulation/frontier.py``)."""

    replicas: int
    gpu_hours: float
    slo_attainment: float = Field(
        description="Replayed; with complete false, an upper bound (the replay stopped once "
        "its misses showed it below this)"
    )
    complete: bool = Field(description="False: the replay stopped early (see slo_attainment)")


class Frontier(_Frozen):
    """Every fixed fleet from 1 replica to best static beside one autoscaled run, and the
    verdict: dominated by a fixed fleet (≥ its attainment at ≤ its GPU-hours, or the target
    met at fewer GPU-hours) or on the frontier."""

    target_attainment: float
    best_static_replicas: int
    points: list[FrontierPoint]
    dominated_by: int | None = Field(
        description="The smallest fixed fleet that dominates the run (None: on the frontier)"
    )
    verdict: str = Field(description="'on the frontier' or 'dominated by a fixed fleet of N'")


class ClassSimResult(_Frozen):
    """One priority of ``spec.workload.classes`` in a replay (classes sharing a priority are
    one row: nothing in a request tells them apart but its priority)."""

    classes: str = Field(description="The class names at this priority, joined")
    priority: int
    requests: int
    completed: int
    shed: int = Field(description="Dropped by the gateway while the fleet was saturated")
    slo_attainment: float | None = Field(
        description="Share of its requests meeting its own SLO (null: sheddable, none promised)"
    )
    ttft_p99_s: float = Field(description="Arrival to first token: the wait included")
    e2e_p99_s: float
    gpu_hours: float = Field(description="The run's GPU-hours split by served tokens")


class SimResult(_Frozen):
    policy: str
    trace: str
    mismatch: float
    cold_start_s: float
    duration_s: float
    requests: int
    completed: int
    rejected: int = Field(description="Longer than the max model len: vLLM answers 400")
    unfinished: int = Field(description="Still in flight when the drain limit ended the run")
    slo_attainment: float = Field(description="Share of all requests meeting TTFT and TPOT SLOs")
    ttft_p50_s: float
    ttft_p95_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p95_s: float
    tpot_p99_s: float
    e2e_p50_s: float
    e2e_p95_s: float
    e2e_p99_s: float
    gpu_hours: float = Field(description="GPUs held (starting, ready, draining) over the trace")
    oracle_gpu_hours: float = Field(
        description="The yardstick: the replay-verified oracle's GPU-hours when the run "
        "repaired it (oracle_repair_rounds > 0: simulate and the autoscaling suite), else the "
        "per-bin formula's"
    )
    oracle_formula_gpu_hours: float | None = Field(
        default=None, description="The per-bin formula's GPU-hours, before any repair"
    )
    lead_time_oracle_gpu_hours: float | None = Field(
        default=None,
        description="The lead-time oracle's GPU-hours at this run's cold start: the oracle's "
        "per-minute need, each added replica asked for (and paid) one cold start before the "
        "minute it serves",
    )
    oracle_attainment: float | None = Field(
        default=None,
        description="The oracle's replayed SLO attainment (the yardstick is verified, not assumed)",
    )
    lead_time_oracle_attainment: float | None = Field(
        default=None,
        description="The lead-time oracle's replayed SLO attainment at this cold start, where "
        "the run replayed it",
    )
    target_attainment: float = Field(
        default=0.99,
        description="spec.scaling.targetAttainment: what the yardsticks are judged against",
    )
    frontier: Frontier | None = Field(
        default=None,
        description="tokenscale's run beside every fixed fleet up to best static, with the "
        "verdict (simulate prints it for tokenscale)",
    )
    best_static_gpu_hours: float | None = Field(
        default=None,
        description="Best static's GPU-hours, where the same run computed it (--policy all)",
    )
    gpu_hours_vs_oracle: float
    cost: float | None
    currency: str
    scale_events: int
    scale_ups: int
    scale_downs: int
    preemptions: int
    replicas_max: int
    replicas_mean: float = Field(description="Replicas holding GPUs, averaged over the trace")
    sustainable_rps_per_replica: float = Field(
        description="One simulated replica's highest rate meeting the SLOs at P99 (the oracle's)"
    )
    planner_rps_per_replica: float
    static_replicas: int | None = Field(
        default=None,
        description="best-static: the smallest fixed count meeting spec.scaling.targetAttainment",
    )
    timeline: list[TimelinePoint] = Field(default_factory=list)
    arrived_at_zero: int = Field(
        default=0,
        description="Requests that arrived with no replica asked for (minReplicas 0): held "
        "at the gateway until a woken replica was Ready",
    )
    shed: int = Field(
        default=0, description="Sheddable requests the gateway dropped (the fleet saturated)"
    )
    classes: list[ClassSimResult] = Field(
        default_factory=list, description="Per priority of spec.workload.classes (empty: none)"
    )
    wake_ttft_max_s: float | None = Field(
        default=None,
        description="The longest TTFT of those requests: the cost of waking from zero (about "
        "one cold start plus the time to the next decision)",
    )
    explanation: Explanation | None = Field(
        default=None, description="--explain: the decision at the asked moment"
    )


@dataclass(frozen=True)
class PoolRun:
    """One pool of a replayed fleet (a variant of a mix, the prefill or the decode pool)."""

    name: str
    gpu_hours: float
    """GPUs held (starting, ready, draining) over the trace's span."""
    replicas_max: int
    """The most replicas asked for at once."""
    replicas_end: int
    """Replicas asked for when the trace ended."""
    requests: int
    """Requests routed to it."""
    attainment: float
    """Of those, the share meeting the SLOs it answers for (1.0 when none came)."""


@dataclass(frozen=True)
class PoolsPoint:
    """One decision: the replicas asked for, ready and pending per pool, and why."""

    t_s: float
    asked: dict[str, int]
    ready: dict[str, int]
    pending: dict[str, int]
    reason: str
    """Why (prefill/decode pools: what the coordination rule did)."""
    reasons: dict[str, str] = field(default_factory=dict)
    """Each pool's own reason, where each pool decides (prefill/decode)."""
    calibration: dict[str, float] = field(default_factory=dict)
    """Each pool's engine calibration at this decision, where each pool keeps one."""


@dataclass(frozen=True)
class FleetRun:
    """What one replay of a fleet of several pools measured (a GPU mix; prefill and decode
    pools), autoscaled or pinned (a fixed fleet is a pinned policy)."""

    policy: str
    routing: str
    requests: int
    rejected: int
    unfinished: int
    """Still in flight when the drain limit ended the run (-1: a probe that gave up)."""
    slo_attainment: float
    """Share of all requests (rejected and unfinished included) meeting TTFT and TPOT SLOs."""
    ttft_p99_s: float
    tpot_p99_s: float
    gpu_hours: float
    cost: float | None
    """GPU-hours × each pool's price (None when a pool used has no price)."""
    duration_s: float
    pools: list[PoolRun]
    scale_events: int
    served: int = 0
    """Requests answered (the record of the pools the answers come from)."""
    meets_slo: bool | None = None
    """Prefill/decode pools: whether the P99s (after a 20 % warm-up) met the SLOs."""
    marked: list[tuple[float, str, str]] = field(default_factory=list)
    """(when, variant, reason) of each exhausted mark (tokenscale on a mix only)."""
    timeline: list[PoolsPoint] = field(default_factory=list)

    @property
    def gpu_hours_by_pool(self) -> dict[str, float]:
        return {p.name: p.gpu_hours for p in self.pools}

    @property
    def replicas_max(self) -> dict[str, int]:
        return {p.name: p.replicas_max for p in self.pools}

    @property
    def counts(self) -> dict[str, int]:
        """Replicas asked for per pool when the trace ended."""
        return {p.name: p.replicas_end for p in self.pools}

    @property
    def cost_per_hour(self) -> float | None:
        hours = self.duration_s / 3600.0
        return None if self.cost is None or hours <= 0 else self.cost / hours
