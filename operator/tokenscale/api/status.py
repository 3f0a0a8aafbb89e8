"""``status``: what the operator reports. Typed so the CRD carries its schema."""

from typing import Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from tokenscale.api.base import ApiModel


class Condition(ApiModel):
    """A Kubernetes-style condition."""

    type: str = Field(
        description="Ready, PlanFeasible, DeploymentAvailable, MetricsAvailable, ProductionReady."
    )
    status: Literal["True", "False", "Unknown"] = Field(description="True, False or Unknown.")
    reason: str = Field(description="CamelCase reason.")
    message: str = Field(default="", description="Human-readable detail with the numbers.")
    last_transition_time: str = Field(description="RFC 3339 time the status last changed.")
    observed_generation: int | None = Field(default=None, description="Spec generation seen.")


class PoolSummary(ApiModel):
    """One pool the plan runs (``tokenscale plan -o json``'s ``pools[]`` in brief)."""

    name: str = Field(description="serve, the variant's name, prefill or decode.")
    role: str = Field(description="serve, prefill or decode.")
    gpu: str = Field(description="The GPU one replica runs on.")
    gpus_per_replica: int = Field(description="TP × PP × DP.")
    replicas: int = Field(description="Planned replicas of this pool.")
    gpus: int = Field(description="replicas × gpusPerReplica.")
    ttft_p99_estimate_seconds: float | None = Field(
        default=None, description="At this pool's share of the load (none for decode)."
    )
    tpot_p99_estimate_seconds: float | None = Field(
        default=None, description="At this pool's share of the load (none for prefill)."
    )
    binding_constraint: str = Field(description="throughput, concurrency, kv or none.")


class LengthClassStatus(ApiModel):
    """One length class (``spec.serving.lengthClasses``): the InferenceService that runs it."""

    name: str = Field(description="The class's name.")
    service: str = Field(description="Its InferenceService (and Service): <service>-<class>.")
    replicas: int = Field(description="Its desired replicas, as its own status says.")
    ready_replicas: int = Field(description="Its ready replicas, as its own status says.")
    ready: bool = Field(description="Its Ready condition is True.")


class PlanSummary(ApiModel):
    """The plan in brief; `tokenscale plan` prints the whole of it."""

    feasible: bool = Field(description="The plan meets the SLOs and fits the GPUs.")
    tensor_parallel_size: int = Field(description="GPUs per replica.")
    replicas: int = Field(description="Replicas after redundancy and bounds.")
    binding_constraint: str = Field(description="throughput, concurrency, kv or none.")
    throughput_replicas: float = Field(description="Replicas needed for output tokens/s.")
    concurrency_replicas: float = Field(description="Replicas needed for in-flight requests.")
    kv_replicas: float = Field(description="Replicas needed for KV cache memory.")
    kv_capacity_tokens_per_replica: float = Field(description="KV pool in tokens.")
    max_concurrency_per_replica: float = Field(description="Sequences meeting the SLOs.")
    max_model_len: int = Field(description="--max-model-len.")
    ttft_p99_estimate_seconds: float = Field(description="Estimated TTFT P99.")
    tpot_estimate_seconds: float = Field(description="Estimated TPOT.")
    ttft_p99_slo_seconds: float | None = Field(default=None, description="TTFT P99 target.")
    tpot_p99_slo_seconds: float | None = Field(default=None, description="TPOT P99 target.")
    output_tps_per_replica: float = Field(description="Output tokens/s per replica.")
    gpus_total: int = Field(
        description="GPUs the planned replicas hold: replicas × TP × PP × DP (a replica "
        "spanning nodes counts every node's GPUs; both pools when disaggregated)."
    )
    cost_per_million_output_tokens: float | None = Field(
        default=None, description="At the operating point; null without a price."
    )
    cost_per_hour: float | None = Field(default=None, description="Whole fleet.")
    reasons: list[str] = Field(default_factory=list, description="Why it is infeasible.")
    warnings: list[str] = Field(default_factory=list, description="What to look at.")
    sources: dict[str, str] = Field(
        default_factory=dict, description="Numbers taken from a bench profile, and which step."
    )
    speculative: str | None = Field(
        default=None,
        description="Speculative decoding: on or off, the acceptance rate planned with (the "
        "measured one once vLLM reports it) and why.",
    )
    lora: str | None = Field(
        default=None,
        description="What spec.lora's adapters cost (KV pool, throughput, swaps) and the "
        "maxLoras rendered, with why.",
    )
    pools: list[PoolSummary] = Field(
        default_factory=list,
        description="The pools planned: one, one per GPU variant, or prefill and decode.",
    )
    coordination: str | None = Field(
        default=None, description="The rule between the pools: none, mix or disaggregated."
    )
    classes: list[str] = Field(
        default_factory=list,
        description="spec.workload.classes as planned: the binding class first, then one line "
        "per class (its SLO estimates on the fleet, served fraction, showback); planned, not "
        "measured attainment.",
    )


class LiveStatus(ApiModel):
    """The last metrics snapshot (from Prometheus), summed or maxed over replicas."""

    at: str = Field(description="When it was read (RFC 3339).")
    replicas_reporting: int = Field(description="vLLM engines with fresh samples.")
    waiting: float | None = Field(default=None, description="Waiting requests, all replicas.")
    running: float | None = Field(default=None, description="Running requests, all replicas.")
    kv_usage: float | None = Field(default=None, description="KV cache usage, max of replicas.")
    kv_usage_mean: float | None = Field(default=None, description="KV usage, mean of replicas.")
    kv_blocks_total: float | None = Field(default=None, description="KV blocks, all replicas.")
    kv_blocks_free: float | None = Field(default=None, description="Free KV blocks.")
    ttft_p50_seconds: float | None = Field(default=None, description="Live TTFT P50.")
    ttft_p99_seconds: float | None = Field(default=None, description="Live TTFT P99.")
    tpot_p99_seconds: float | None = Field(default=None, description="Live per-request TPOT P99.")
    itl_p99_seconds: float | None = Field(default=None, description="Live inter-token P99.")
    e2e_p99_seconds: float | None = Field(default=None, description="Live E2E P99.")
    queue_p99_seconds: float | None = Field(default=None, description="Live queue time P99.")
    observed_rps: float | None = Field(
        default=None,
        description="Requests reaching their first token per s (finished requests per s where "
        "the TTFT histogram is missing): the arrival rate the engine plans for.",
    )
    prompt_tps: float | None = Field(default=None, description="Prompt tokens per s.")
    generation_tps: float | None = Field(default=None, description="Generated tokens per s.")
    output_tps_per_replica: float | None = Field(default=None, description="Per replica.")
    prefix_cache_hit_rate: float | None = Field(default=None, description="Prefix-cache hits.")
    preemptions_per_second: float | None = Field(default=None, description="Preemptions per s.")
    spec_decode_acceptance_rate: float | None = Field(
        default=None, description="Speculative decoding: accepted ÷ drafted tokens, measured."
    )
    sample_age_seconds: float | None = Field(default=None, description="Newest sample's age.")
    gateway_queued: float | None = Field(
        default=None,
        description="Requests held by the endpoint picker's flow control for the InferencePool.",
    )
    pool_saturation: float | None = Field(
        default=None, description="The endpoint picker's saturation of the pool (1: holding)."
    )
    activation_demand: float | None = Field(
        default=None, description="spec.scaling.activation.query's value."
    )


class SignalStatus(ApiModel):
    """One pressure signal: its value, watermarks, level and the replicas it asks for."""

    name: str = Field(
        description="kv_usage, queue_s (the seconds the waiting prompts take to prefill; "
        "waiting_per_replica without a TTFT SLO), gateway_queue_per_replica, pool_saturation, "
        "ttft_p99_s, tpot_p99_s, lora_slot_wait (the share of LoRA engines waiting for an "
        "adapter slot; never asks for replicas itself)."
    )
    value: float | None = Field(default=None, description="Observed value.")
    high: float = Field(description="At or above: scale up.")
    low: float = Field(description="Below: counts as low.")
    level: str = Field(description="high, normal, low or missing.")
    replicas: int = Field(description="Replicas this signal recommends.")
    over_slo_low: float | None = Field(
        default=None,
        description="A latency signal: the least share of the window's requests over its SLO, "
        "from the histogram's buckets (requests in the SLO's own bucket counted as met).",
    )
    over_slo_high: float | None = Field(
        default=None,
        description="The most share over the SLO (requests in the SLO's own bucket counted "
        "as missed).",
    )
    error_budget: float | None = Field(
        default=None,
        description="1 − spec.scaling.targetAttainment: a latency signal is high only when "
        "overSloLow exceeds it, or a load signal confirms a possible breach.",
    )
    tokens: float | None = Field(
        default=None,
        ge=0,
        description="The work behind the value in tokens: queue_s, the prompt tokens waiting "
        "to prefill; kv_usage, the KV tokens held on the fullest engine.",
    )
    tokens_per_second: float | None = Field(
        default=None,
        ge=0,
        description="queue_s: one engine's prefill rate the waiting tokens are divided by.",
    )
    capacity_tokens: float | None = Field(
        default=None, ge=0, description="kv_usage: one engine's KV pool in tokens."
    )
    basis: str | None = Field(
        default=None,
        max_length=400,
        description="Where the figures come from (observed or forecast prompts, the planner).",
    )


class ForecastStatus(ApiModel):
    """What the traffic says one lead time ahead, and the headroom its bursts ask for."""

    observed_rps: float = Field(description="Request rate over the rate window.")
    expected_rps: float = Field(description="Expected rate one horizon ahead (rising trend).")
    horizon_seconds: float = Field(
        description="Lead time plus one decision interval plus half the rate window (the "
        "window's centre is that old)."
    )
    lead_time_seconds: float = Field(description="Pod creation to Ready (median, recent pods).")
    lead_time_measured: bool = Field(description="False: the default, no pod has started yet.")
    burst_headroom: float = Field(description="1 + dispersion of the rate ÷ its level, ≤ 1.5.")
    replicas: int | None = Field(default=None, description="Replicas the forecast asks for.")


class CapacityStatus(ApiModel):
    """What one replica carries: the rate the live need divides the demand by."""

    rps_per_replica: float = Field(description="The rate used, requests per second.")
    source: str = Field(
        description="measured (the fleet's rate per replica ÷ its occupancy, when the "
        "occupancy is at least 0.5) or planner (the re-planned model's)."
    )
    planner_rps_per_replica: float = Field(description="The re-planned model's rate.")
    observed_rps_per_replica: float | None = Field(
        default=None, description="Arrivals per reporting replica over the rate window."
    )
    occupancy: float | None = Field(
        default=None,
        description="max(mean KV usage ÷ kvHighWatermark, running per replica ÷ the SLO batch).",
    )
    reason: str = Field(default="", max_length=400, description="The figures in words.")


class DecisionStatus(ApiModel):
    """The last replica decision and why."""

    replicas: int = Field(description="Decided replicas.")
    source: str = Field(description="plan, pin, metrics or hold.")
    reason: str = Field(description="Why.")
    cause: str | None = Field(
        default=None,
        description="What moved or held the count, one word (scaling/cause.py's Cause).",
    )
    observed_at: str | None = Field(
        default=None,
        description="RFC 3339 time of the observation (the metrics read) this decision was made "
        "on; event-driven reconciles re-apply it, only a newer observation re-decides.",
    )
    model_replicas: int | None = Field(default=None, description="The re-planned model's need.")
    calibration: float | None = Field(
        default=None, description="Decode calibration: predicted ÷ observed TPOT."
    )
    prefill_calibration: float | None = Field(
        default=None, description="Prefill calibration: predicted ÷ observed prefill phase."
    )
    slo_headroom: float | None = Field(
        default=None,
        description="Standing headroom learned from SLO breaches (× the model; 1 = none).",
    )
    signals: list[SignalStatus] = Field(default_factory=list, description="Each signal.")
    forecast: ForecastStatus | None = Field(
        default=None, description="The forecast, lead time and burst headroom behind it."
    )
    capacity: CapacityStatus | None = Field(
        default=None,
        description="What one replica carries, measured or the planner's, and which was used.",
    )


class RateForecast(ApiModel):
    """The arrival-rate smoother's memory (``scaling/forecast.py``): Holt's level and trend and
    the dispersion around them, as of ``at_s``."""

    level_rps: float = Field(alias="levelRps", description="Smoothed request rate.")
    trend_rps_per_s: float = Field(default=0.0, alias="trendRpsPerSecond", description="Its trend.")
    variance: float = Field(
        default=0.0,
        description="Its dispersion (RPS²): half the smoothed square of the change in the "
        "one-step prediction error between successive observations.",
    )
    last_error_rps: float | None = Field(
        default=None,
        alias="lastErrorRps",
        description="The last one-step prediction error (observed − predicted rate); absent "
        "until two observations have been smoothed.",
    )
    last_rps: float | None = Field(
        default=None,
        alias="lastRps",
        description="The rate last observed: the trend follows its changes (absent: not yet "
        "observed in this run of the smoother).",
    )
    at_s: float = Field(alias="atSeconds", description="When it was updated (unix seconds).")
    since_s: float | None = Field(
        default=None,
        alias="sinceSeconds",
        description="The first observation of this run of the smoother (unix seconds): until "
        "one rate window has passed since, the rate is read over a window that is still "
        "filling, and no trend is learned from it. Absent: long enough ago.",
    )


class ScalingState(ApiModel):
    """What the decision engine remembers between observations (unix seconds for times).

    The one type of the engine's memory: the engine (``scaling/``) reads and returns it, the
    operator writes it to ``status.scaling`` and reads it back (validated and bounded by
    ``scaling/memory.py`` first: the status is writable by anyone with the status RBAC)."""

    decided_replicas: SkipJsonSchema[int | None] = Field(
        default=None,
        exclude=True,
        description="The engine's last decision; written once, as the status' top-level "
        "``decidedReplicas``, and read back from there.",
    )
    observed_at_s: float | None = Field(
        default=None,
        alias="observedAtSeconds",
        description="Time of the observation the last decision was made on; the engine "
        "advances only on a newer one.",
    )
    low_since_s: float | None = Field(
        default=None, alias="lowSinceSeconds", description="All signals low since."
    )
    peak_load: float = Field(
        default=0.0,
        alias="peakLoadReplicas",
        description="Recent peak of the fleet's load in replicas at the high watermarks "
        "(max(value / high) × replicas reporting), decaying with a half-life of two "
        "scale-down windows.",
    )
    peak_at_s: float | None = Field(
        default=None, alias="peakAtSeconds", description="When it was updated."
    )
    pressure_since_s: float | None = Field(
        default=None, alias="pressureSinceSeconds", description="Pressure since."
    )
    last_scale_s: float | None = Field(
        default=None, alias="lastScaleSeconds", description="Last replica change decided."
    )
    calibration: float = Field(
        default=1.0, description="Decode: predicted ÷ observed TPOT (smoothed, bounded)."
    )
    prefill_calibration: float = Field(
        default=1.0,
        description="Prefill: predicted ÷ observed prefill phase (TTFT − queue; smoothed).",
    )
    rate: RateForecast | None = Field(
        default=None, description="The arrival-rate smoother behind the forecast."
    )
    lead_time_s: float | None = Field(
        default=None,
        alias="leadTimeSeconds",
        description="Measured pod creation → Ready time the last decision used (median of "
        "recent pods; absent until one has started).",
    )
    slo_headroom: float = Field(
        default=1.0, description="Standing headroom learned from SLO breaches (≥ 1, × the model)."
    )
    slo_headroom_raised_s: float | None = Field(
        default=None, alias="sloHeadroomRaisedSeconds", description="When a breach last raised it."
    )
    burst_floor_replicas: int | None = Field(
        default=None,
        alias="burstFloorReplicas",
        description="The most replicas a scale-up decided within spec.scaling."
        "burstMemorySeconds: scale-down stops there until the memory expires.",
    )
    burst_floor_at_s: float | None = Field(
        default=None,
        alias="burstFloorAtSeconds",
        description="When that count was last needed (a recurrence renews it).",
    )
    backlog_at_s: float | None = Field(
        default=None,
        alias="backlogAtSeconds",
        description="The last decision that saw the queue over its high mark.",
    )
    idle_since_s: float | None = Field(
        default=None,
        alias="idleSinceSeconds",
        description="minReplicas 0: idle (engines report no traffic, the activation source "
        "reads 0) since; the last replica goes after spec.scaling.scaleToZero.idleSeconds.",
    )


class VariantStatus(ApiModel):
    """One GPU variant of a service with ``spec.hardware.variants``."""

    name: str = Field(description="The variant's name.")
    replicas: int = Field(description="Replicas asked of this variant.")
    exhausted: bool = Field(
        default=False, description="Its pods could not be placed: it takes no more for now."
    )
    unplaced: int = Field(default=0, description="Replicas that could not be placed.")
    exhausted_since: str | None = Field(
        default=None, description="RFC 3339 time it was marked exhausted (retried later)."
    )
    reason: str | None = Field(default=None, description="Why it is exhausted, with numbers.")


class RoleStatus(ApiModel):
    """One pool of a prefill/decode service: its count, its decision and its memory."""

    replicas: int = Field(description="Decided replicas of this role (its workload's count).")
    planned_replicas: int = Field(description="The forecast plan's count for this role.")
    ready_replicas: int = Field(default=0, description="Ready pods (groups) of this role.")
    decision: DecisionStatus | None = Field(
        default=None, description="This role's last decision and why (its own signals)."
    )
    scaling: ScalingState | None = Field(
        default=None,
        description="This role's engine memory; its decided count is ``replicas`` above.",
    )


class RolesStatus(ApiModel):
    """Prefill/decode disaggregation: each role scaled on its own signals, and the ratio rule
    between them (``scaling/roles.py``)."""

    prefill: RoleStatus = Field(description="The prefill pool.")
    decode: RoleStatus = Field(description="The decode pool.")
    ratio: float = Field(description="Decided prefill ÷ decode replicas.")
    planned_ratio: float | None = Field(default=None, description="The plan's prefill ÷ decode.")
    coordination: str = Field(
        default="", description="What the ratio rule did this decision, in numbers."
    )


class InferenceServiceStatus(ApiModel):
    """Observed state, written whole by the operator on every change (a part that no longer
    applies is absent: ``live`` without fresh metrics, ``decision`` for an infeasible spec).
    ``decidedReplicas``, ``scaling`` and ``lastScaleTime`` are the engine's memory: they are
    kept while the spec is infeasible so that nothing is forgotten when it is fixed."""

    observed_generation: int | None = Field(default=None, description="Spec generation acted on.")
    replicas: int | None = Field(default=None, description="Desired replicas (scale subresource).")
    ready_replicas: int | None = Field(default=None, description="Ready vLLM pods.")
    available_replicas: int | None = Field(default=None, description="Available vLLM pods.")
    selector: str | None = Field(default=None, description="Pod label selector (scale).")
    decided_replicas: int | None = Field(
        default=None, description="The operator's own last decision (held when blind)."
    )
    tensor_parallel_size: int | None = Field(default=None, description="GPUs per replica.")
    conditions: list[Condition] = Field(default_factory=list, description="Conditions.")
    variants: list[VariantStatus] = Field(
        default_factory=list, description="spec.hardware.variants: each variant's replicas."
    )
    roles: RolesStatus | None = Field(
        default=None,
        description="spec.serving.disaggregation: each role's replicas, decision and memory "
        "(``replicas`` is then prefill + decode).",
    )
    plan: PlanSummary | None = Field(default=None, description="The current plan.")
    length_classes: list[LengthClassStatus] = Field(
        default_factory=list,
        description="spec.serving.lengthClasses: each class's InferenceService, as it reports.",
    )
    last_scale_time: str | None = Field(default=None, description="When replicas last changed.")
    live: LiveStatus | None = Field(default=None, description="Live metrics snapshot.")
    decision: DecisionStatus | None = Field(default=None, description="The last decision.")
    diagnosis: list[str] = Field(default_factory=list, description="What limits the service.")
    scaling: ScalingState | None = Field(default=None, description="Engine memory.")
    ttft_p99: str | None = Field(
        default=None,
        description="TTFT P99 for people, with its unit and origin: the live value when "
        "metrics exist ('840ms live'), else the plan's estimate ('1.05s estimate').",
    )
