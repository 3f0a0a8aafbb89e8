"""``spec.scaling``: bounds, redundancy and an optional pin."""

from typing import Literal, Self

from pydantic import ConfigDict, Field, field_validator, model_validator

from tokenscale.api.base import MAX_REPLICAS, MAX_SECONDS, ApiModel
from tokenscale.api.cron import parse_cron

MAX_SCHEDULE_WINDOWS = 32
DEFAULT_BURST_MEMORY_SECONDS = 0
"""spec.scaling.burstMemorySeconds' default (chosen on the dev suite: docs/performance.md)."""
DEFAULT_MEASURED_CAPACITY = False
"""spec.scaling.policy.measuredCapacity's default (chosen on the dev suite: docs/performance.md)."""
MAX_WINDOW_SECONDS = 7 * 86_400


class Redundancy(ApiModel):
    """Headroom over the computed need: ``ceil(need × factor) + spareReplicas`` (N+k)."""

    factor: float = Field(
        default=1.0, ge=1.0, le=100.0, description="Multiplier on the computed need."
    )
    spare_replicas: int = Field(
        default=0, ge=0, le=MAX_REPLICAS, description="Extra replicas for N+k."
    )


WorkloadSource = Literal["max", "observed", "forecast"]


class ScalingPolicy(ApiModel):
    """How live metrics move the replica count: fast up, careful down, never blind."""

    kv_high_watermark: float = Field(
        default=0.90, gt=0, le=1, description="KV usage at or above this scales up."
    )
    kv_low_watermark: float = Field(
        default=0.60, ge=0, lt=1, description="KV usage below this counts as low."
    )
    waiting_per_replica_high: float = Field(
        default=2.0,
        gt=0,
        le=1e6,
        description="Waiting requests per replica at or above this scale up.",
    )
    waiting_per_replica_low: float = Field(
        default=0.5,
        ge=0,
        le=1e6,
        description="Waiting requests per replica below this count as low.",
    )
    latency_low_ratio: float = Field(
        default=0.7, gt=0, le=1, description="TTFT/TPOT P99 below this share of the SLO is low."
    )
    max_scale_up_step: int = Field(
        default=4, ge=1, le=MAX_REPLICAS, description="Most replicas added at once."
    )
    max_scale_down_step: int = Field(
        default=1, ge=1, le=MAX_REPLICAS, description="Most replicas removed at once."
    )
    scale_up_stabilization_seconds: int = Field(
        default=0,
        ge=0,
        le=int(MAX_SECONDS),
        description="Pressure must persist this long before scaling up.",
    )
    scale_down_stabilization_seconds: int = Field(
        default=300,
        ge=0,
        le=int(MAX_SECONDS),
        description="Every signal must stay low this long before scaling down.",
    )
    scale_down_headroom: float = Field(
        default=0.9,
        gt=0,
        le=1,
        description="A step down must keep the recent peak load within this share of the high "
        "watermarks at the smaller count.",
    )
    workload_source: WorkloadSource = Field(
        default="max",
        description="Re-plan with max(forecast, observed) workload, only observed, or forecast.",
    )
    calibrate: bool = Field(
        default=True, description="Adjust efficiencies from observed vs predicted TPOT (bounded)."
    )
    measured_capacity: bool = Field(
        default=DEFAULT_MEASURED_CAPACITY,
        description="Divide the live need by what a replica is observed to carry (arrivals "
        "per replica ÷ the window batch's occupancy of the SLO batch or the KV pool, at "
        "occupancy ≥ 0.5) instead of the planner's rate; status.decision.capacity shows both "
        "either way. Off by default: on the dev suite it changed only azure-conv, for the "
        "worse (docs/performance.md).",
    )
    dispersion_sizing: bool = Field(
        default=False,
        description="Size the model's need for the arrivals' index of dispersion (15-s counts "
        "over 30 min) instead of Poisson arrivals: up to ×2 for bursty traffic, ×1 for Poisson. "
        "Off by default: it raised attainment on bursty shapes only after their first cold "
        "start, at ~27 % more GPU-hours (docs/performance.md).",
    )

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.kv_low_watermark >= self.kv_high_watermark:
            raise ValueError(
                f"kvLowWatermark={self.kv_low_watermark} must be below "
                f"kvHighWatermark={self.kv_high_watermark}"
            )
        if self.waiting_per_replica_low >= self.waiting_per_replica_high:
            raise ValueError(
                f"waitingPerReplicaLow={self.waiting_per_replica_low} must be below "
                f"waitingPerReplicaHigh={self.waiting_per_replica_high}"
            )
        return self


class ScheduleWindow(ApiModel):
    """Replica bounds for a recurring window of time (traffic with a known daily shape)."""

    # the API server keeps a window's unknown keys (a ``timeZone``, a misspelt bound) instead
    # of pruning them unseen, so that the operator names them (InvalidSpec) rather than run
    # the window by its cron in UTC as if nothing had been written
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-preserve-unknown-fields": True})

    name: str | None = Field(
        default=None, max_length=63, description="A label for events and status."
    )
    cron: str = Field(
        max_length=100,
        description="When the window opens: five-field cron (minute hour day-of-month month "
        "day-of-week), UTC, e.g. '0 8 * * 1-5' for 08:00 on weekdays.",
    )
    duration_seconds: int = Field(
        ge=60, le=MAX_WINDOW_SECONDS, description="How long the window stays open."
    )
    min_replicas: int | None = Field(
        default=None,
        ge=0,
        le=MAX_REPLICAS,
        description="minReplicas while the window is open (unset: spec.scaling.minReplicas).",
    )
    max_replicas: int | None = Field(
        default=None,
        ge=1,
        le=MAX_REPLICAS,
        description="maxReplicas while the window is open (unset: spec.scaling.maxReplicas).",
    )

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        parse_cron(value)
        return value


Actuation = Literal["direct", "advisory", "keda"]


class KedaTrigger(ApiModel):
    """Where KEDA reads ``tokenscale_replicas_desired`` (``spec.scaling.actuation: keda``)."""

    server_address: str = Field(
        min_length=1,
        max_length=2048,
        pattern=r"^https?://\S+$",
        description="The Prometheus URL KEDA queries: one that scrapes the operator's metrics.",
    )
    polling_interval_seconds: int = Field(
        default=15, ge=1, le=3600, description="How often KEDA reads the desired count."
    )


DEFAULT_IDLE_SECONDS = 600


class ScaleToZero(ApiModel):
    """When a service with ``minReplicas: 0`` gives up its last replica."""

    idle_seconds: int = Field(
        default=DEFAULT_IDLE_SECONDS,
        ge=0,
        le=int(MAX_SECONDS),
        description="With minReplicas 0: idle this long (engines report, no request finished, "
        "none running or waiting, and the activation source reads 0) goes to 0 replicas. "
        "Missing metrics never count as idle.",
    )


class Activation(ApiModel):
    """Demand seen in front of the engines: what wakes a service at zero replicas."""

    query: str | None = Field(
        default=None,
        min_length=1,
        max_length=4096,
        description="A PromQL query whose value (summed over its series) is the requests "
        "waiting for this service in front of the engines, e.g. the KEDA HTTP add-on's "
        "pending requests. Above 0 at zero replicas: scale up at once.",
    )


MIN_TARGET_ATTAINMENT = 0.5
MAX_TARGET_ATTAINMENT = 0.9999
"""An error budget below 1 in 10,000 requests is more than vLLM's latency buckets can tell
apart from a handful of outliers; below 1 in 2 the SLO's percentile means nothing."""


class Scaling(ApiModel):
    """Replica bounds and policy."""

    target_attainment: float = Field(
        default=0.99,
        ge=MIN_TARGET_ATTAINMENT,
        le=MAX_TARGET_ATTAINMENT,
        description="The share of requests that must meet the SLOs (TTFT and TPOT): what the "
        "policy aims at (a latency signal acts only when more than 1 − this share of requests "
        "is surely over its SLO, or the load signals confirm it), what the simulator's "
        "yardsticks are judged against (the replay-verified oracles, best static) and what "
        "status reports (each latency signal's errorBudget in status.decision.signals).",
    )

    burst_memory_seconds: int = Field(
        default=DEFAULT_BURST_MEMORY_SECONDS,
        ge=0,
        le=int(MAX_SECONDS),
        description="A service that has needed N replicas (a scale-up decided N) within this "
        "many seconds keeps N standing for the burst's recurrence: scale-down stops there "
        "until the memory expires (a recurrence renews it). 0: no memory.",
    )
    min_replicas: int = Field(
        default=1, ge=0, le=MAX_REPLICAS, description="Never fewer replicas than this."
    )
    max_replicas: int = Field(
        default=64, ge=1, le=MAX_REPLICAS, description="Never more replicas than this."
    )
    max_replicas_for_sheddable: int | None = Field(
        default=None,
        ge=1,
        le=MAX_REPLICAS,
        description="With spec.workload.classes: while only sheddable requests wait in the "
        "endpoint picker's queue, scale up to at most this many replicas (never below the "
        "forecast plan's count); absent: sheddable backlog scales like any other. Needs "
        "spec.gateway.inferencePool (the queue's priority label).",
    )
    redundancy: Redundancy = Field(default_factory=Redundancy, description="Headroom.")
    replicas: int | None = Field(
        default=None,
        ge=0,
        le=MAX_REPLICAS,
        description="Pin the replica count; autoscaling is off when set.",
    )
    policy: ScalingPolicy = Field(
        default_factory=ScalingPolicy, description="How live metrics move the replica count."
    )
    schedule: list[ScheduleWindow] = Field(
        default_factory=list,
        max_length=MAX_SCHEDULE_WINDOWS,
        description="Recurring windows with their own minReplicas/maxReplicas; while one is "
        "open its bounds replace these (the first open window in list order wins).",
    )
    actuation: Actuation = Field(
        default="direct",
        description="Who writes the replicas: direct (tokenscale), advisory (nobody: status, "
        "metric and Recommended events only) or keda (a rendered KEDA ScaledObject).",
    )
    keda: KedaTrigger | None = Field(
        default=None, description="The KEDA trigger's Prometheus (required with actuation keda)."
    )
    scale_to_zero: ScaleToZero = Field(
        default_factory=ScaleToZero,
        description="With minReplicas 0: how long idle before the last replica goes.",
    )
    activation: Activation | None = Field(
        default=None,
        description="What wakes a service at zero replicas besides the InferencePool's "
        "queue (spec.gateway.inferencePool): a PromQL query of requests waiting.",
    )

    @property
    def may_reach_zero(self) -> bool:
        """minReplicas 0, here or in a schedule window, with no pin."""
        if self.replicas is not None:
            return False
        return self.min_replicas == 0 or any(w.min_replicas == 0 for w in self.schedule)

    @model_validator(mode="after")
    def _bounds(self) -> Self:
        if self.actuation == "keda" and self.keda is None:
            raise ValueError(
                "actuation keda needs spec.scaling.keda.serverAddress: the Prometheus URL KEDA "
                "reads tokenscale_replicas_desired from (one that scrapes the operator)"
            )
        if self.min_replicas > self.max_replicas:
            raise ValueError(
                f"minReplicas={self.min_replicas} exceeds maxReplicas={self.max_replicas}"
            )
        for i, w in enumerate(self.schedule):
            lo = self.min_replicas if w.min_replicas is None else w.min_replicas
            hi = self.max_replicas if w.max_replicas is None else w.max_replicas
            if lo > hi:
                raise ValueError(
                    f"schedule[{i}] ({w.cron!r}): minReplicas={lo} exceeds maxReplicas={hi}; "
                    "set the window's minReplicas at most its maxReplicas"
                )
        if self.replicas is not None and self.replicas > self.max_replicas:
            raise ValueError(
                f"the pin replicas={self.replicas} exceeds maxReplicas={self.max_replicas}; "
                "raise maxReplicas or pin at most that many"
            )
        return self
