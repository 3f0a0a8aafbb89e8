"""The plan: every number the planner computed, with the inputs and assumptions behind it.

``Plan.model_dump(mode="json")`` is the documented ``tokenscale plan -o json`` contract
(README, "The plan JSON"). Keys are only ever added, never renamed or removed, within v1alpha1.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ConstraintName = Literal["throughput", "concurrency", "kv", "none"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MemoryBreakdown(_Frozen):
    """Per GPU, bytes."""

    gpu_total_bytes: float
    usable_bytes: float = Field(description="gpuMemoryUtilization × total")
    weights_bytes: float = Field(description="weight_bytes / TP")
    activation_bytes: float
    cuda_graph_bytes: float
    nccl_bytes: float
    runtime_bytes: float
    kv_pool_bytes: float = Field(description="usable − everything above (negative: no fit)")


class ConcurrencyLimits(_Frozen):
    """Sequences one replica can run at once, by what limits them."""

    max_num_seqs: int
    slo: float | None = Field(description="Largest batch meeting the TTFT/TPOT/E2E SLOs")
    knee: float = Field(description="Batch past which throughput rises slower than TPOT")
    kv_mean_context: float = Field(description="KV pool × target ÷ KV of a mean request")
    kv_p99_context: float = Field(description="KV pool ÷ KV of a P99 request")


class Replicas(_Frozen):
    """Replica needs per constraint (unrounded) and the final count."""

    throughput: float
    concurrency: float
    kv: float
    needed: float = Field(description="max(throughput, concurrency, kv)")
    with_redundancy: int = Field(description="ceil(needed × factor) + spareReplicas")
    total: int = Field(description="with_redundancy within [minReplicas, maxReplicas], or the pin")


class Constraint(_Frozen):
    """One sizing constraint explained with its inputs."""

    name: ConstraintName
    replicas: float
    formula: str


class SloCheck(_Frozen):
    name: str
    target_s: float
    estimate_s: float
    met: bool


class TpCandidate(_Frozen):
    """One parallel layout tried by ``tensorParallelSize: auto``: TP × PP (× DP with EP)."""

    tensor_parallel_size: int
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    expert_parallel: bool = False
    nodes_per_replica: int = 1
    feasible: bool
    replicas: int
    gpus: int
    cost_per_million_output_tokens: float | None
    reason: str


class Plan(_Frozen):
    """The capacity plan for one InferenceService."""

    name: str
    model: str
    model_source: str
    gpu: str
    weight_dtype: str
    checkpoint_weight_dtype: str | None = Field(
        description="The checkpoint's stored precision, when known (catalog or hfConfig)"
    )
    kv_cache_dtype: str

    params: float
    active_params: float
    weight_bytes: float = Field(description="Whole model: params × bytes per param")
    kv_bytes_per_token: float = Field(description="Whole model, all layers")
    kv_bytes_per_token_per_gpu: float
    tensor_parallel_size: int
    pipeline_parallel_size: int = Field(
        default=1, description="Pipeline stages (--pipeline-parallel-size), one per node or less"
    )
    data_parallel_size: int = Field(
        default=1,
        description="Data-parallel attention ranks inside one replica (--data-parallel-size)",
    )
    expert_parallel: bool = Field(
        default=False, description="MoE experts sharded over TP × DP (--enable-expert-parallel)"
    )
    gpus_per_replica: int = Field(
        default=0, description="TP × PP × DP: the GPUs one replica (one vLLM server) holds"
    )
    nodes_per_replica: int = Field(
        default=1, description="Nodes one replica spans; > 1 renders a LeaderWorkerSet group"
    )
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int

    memory_per_gpu: MemoryBreakdown
    kv_capacity_tokens_per_replica: float
    kv_capacity_blocks_per_replica: int
    kv_bytes_per_request_mean: float
    kv_bytes_per_request_p99: float
    max_concurrency_per_replica: float = Field(
        description="Most sequences in flight that meet the SLOs: min(maxNumSeqs, SLO batch)"
    )
    concurrency_limits: ConcurrencyLimits

    design_rps: float
    input_tps: float = Field(description="design RPS × mean input tokens")
    output_tps: float = Field(description="design RPS × mean output tokens")
    concurrency: float = Field(description="Little's law: design RPS × mean request time")
    mean_request_s: float

    operating_batch: float = Field(
        description="Batch for throughput: min(knee, SLO batch, maxNumSeqs)"
    )
    ttft_p99_estimate_s: float
    tpot_estimate_s: float
    e2e_p99_estimate_s: float
    prefill_p99_s: float = Field(description="Prefill alone of a P99 prompt on an idle replica")
    decode_step_s: float
    slo_checks: list[SloCheck]

    output_tps_per_replica: float
    input_tps_per_replica: float
    rps_per_replica: float

    replicas: Replicas
    constraints: list[Constraint]
    binding_constraint: ConstraintName

    gpus_total: int
    gpu_hours_per_million_output_tokens: float | None
    cost_per_hour: float | None = Field(description="Whole fleet at replicas.total")
    cost_per_million_output_tokens: float | None
    cost_per_million_input_tokens: float | None
    cost_per_million_tokens: float | None = Field(description="Blended input + output")
    cost_per_request: float | None
    currency: str

    feasible: bool
    infeasible_reasons: list[str]
    warnings: list[str]
    assumptions: dict[str, float | str | None]
    tp_candidates: list[TpCandidate]
    sources: dict[str, str] = Field(
        default_factory=dict,
        description="Where a number came from when not the model (a bench profile)",
    )

    @model_validator(mode="before")
    @classmethod
    def _single_node_defaults(cls, data: Any) -> Any:
        """A plan built without a layout is one node, TP GPUs (the pre-multi-node shape)."""
        if isinstance(data, dict) and not data.get("gpus_per_replica"):
            layout = (
                int(data.get("tensor_parallel_size", 1))
                * int(data.get("pipeline_parallel_size", 1))
                * int(data.get("data_parallel_size", 1))
            )
            data = {**data, "gpus_per_replica": layout}
        return data

    @property
    def multi_node(self) -> bool:
        return self.nodes_per_replica > 1
