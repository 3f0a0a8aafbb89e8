"""``status``: what the operator reports. Typed so the CRD carries its schema."""

from typing import Literal

from pydantic import Field

from tokenscale.api.base import ApiModel

ConditionType = Literal["Ready", "PlanFeasible", "DeploymentAvailable", "MetricsAvailable"]
CONDITION_TYPES: tuple[ConditionType, ...] = (
    "Ready",
    "PlanFeasible",
    "DeploymentAvailable",
    "MetricsAvailable",
)


class Condition(ApiModel):
    """A Kubernetes-style condition."""

    type: str = Field(description="Ready, PlanFeasible, DeploymentAvailable, MetricsAvailable.")
    status: Literal["True", "False", "Unknown"] = Field(description="True, False or Unknown.")
    reason: str = Field(description="CamelCase reason.")
    message: str = Field(default="", description="Human-readable detail with the numbers.")
    last_transition_time: str = Field(description="RFC 3339 time the status last changed.")
    observed_generation: int | None = Field(default=None, description="Spec generation seen.")


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
    gpus_total: int = Field(description="replicas × TP.")
    cost_per_million_output_tokens: float | None = Field(
        default=None, description="At the operating point; null without a price."
    )
    cost_per_hour: float | None = Field(default=None, description="Whole fleet.")
    reasons: list[str] = Field(default_factory=list, description="Why it is infeasible.")
    warnings: list[str] = Field(default_factory=list, description="What to look at.")


class InferenceServiceStatus(ApiModel):
    """Observed state, written by the operator."""

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
    plan: PlanSummary | None = Field(default=None, description="The current plan.")
    last_scale_time: str | None = Field(default=None, description="When replicas last changed.")
