"""The plan: every number the planner computed, with the inputs and assumptions behind it.

``Plan.model_dump(mode="json")`` is the documented ``tokenscale plan -o json`` contract
(docs/planner.md, "The plan JSON"). Keys are only ever added, never renamed or removed, within
v1alpha1.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

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


class SpeculativeEstimate(_Frozen):
    """Speculative decoding at this plan's operating batch, against the same plan without it."""

    enabled: bool = Field(description="Rendered into --speculative-config")
    reason: str = Field(description="Why on or off, in numbers")
    method: str
    num_speculative_tokens: int
    acceptance_rate: float = Field(description="The rate assumed (accepted / drafted tokens)")
    tokens_per_step: float = Field(description="(1 − α^(k+1)) / (1 − α) per target step")
    tpot_s: float = Field(description="Mean TPOT with speculation at the load's batch")
    tpot_without_s: float = Field(description="Mean TPOT without it, same batch")
    throughput_ratio: float = Field(
        description="Output tokens/s with ÷ without speculation at the operating batch"
    )
    operating_batch: float = Field(description="The capacity batch (throughput_ratio's)")
    load_batch: float = Field(description="The batch a replica carries at the load (tpot_s's)")
    break_even_batch: int = Field(
        description="Largest batch at which speculation still emits at least as many tokens/s"
    )
    break_even_rps_per_replica: float = Field(
        description="Requests/s a replica completes (without speculation) at that batch"
    )
    draft_weight_bytes_per_gpu: float
    draft_kv_bytes_per_token_per_gpu: float
    source: str = Field(description="How the proposer was sized")


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
    replicas: int | None = Field(description="Within the bounds; null when nothing can serve")
    gpus: int | None
    replicas_needed: int | None = Field(
        default=None, description="Before minReplicas/maxReplicas: what the layout needs"
    )
    gpus_needed: int | None = Field(
        default=None, description="replicas_needed × GPUs per replica: what auto layout compares"
    )
    cost_per_million_output_tokens: float | None
    reason: str


class LoadEstimate(_Frozen):
    """Latency of one replica at the load the plan gives it (design RPS ÷ replicas)."""

    rps_per_replica: float
    batch: float = Field(description="Sequences decoding at that load (steady state)")
    prefill_utilization: float
    saturated: bool = Field(description="The load exceeds what a replica completes")
    ttft_mean_s: float
    ttft_p99_s: float
    tpot_mean_s: float
    tpot_p99_s: float
    e2e_mean_s: float
    e2e_p99_s: float


class CurveStep(_Frozen):
    """The model's prediction for a closed-loop load test at ``concurrency`` (the shape of a
    bench profile's step)."""

    concurrency: int
    ttft_mean_seconds: float
    ttft_p50_seconds: float
    ttft_p99_seconds: float
    tpot_mean_seconds: float
    tpot_p50_seconds: float
    tpot_p99_seconds: float
    itl_mean_seconds: float
    itl_p50_seconds: float
    itl_p99_seconds: float
    e2e_mean_seconds: float
    e2e_p50_seconds: float
    e2e_p99_seconds: float
    input_tps: float
    output_tps: float
    requests_per_second: float


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
        description="TP × PP × DP: the GPUs one replica (one vLLM server) holds"
    )
    nodes_per_replica: int = Field(
        default=1, description="Nodes one replica spans; > 1 renders a LeaderWorkerSet group"
    )
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    serving_knobs_reason: str = Field(
        default="", description="Why this chunk budget and sequence cap"
    )

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
    ttft_p99_estimate_s: float = Field(description="At the load each replica carries")
    tpot_estimate_s: float = Field(description="Mean TPOT at the load each replica carries")
    tpot_p99_estimate_s: float = Field(
        description="TPOT P99 at the load each replica carries (the SLO's percentile; a "
        "measured profile's P99 when one is given)",
    )
    e2e_p99_estimate_s: float = Field(description="At the load each replica carries")
    e2e_p99_at_capacity_s: float = Field(
        default=0.0,
        description="At the operating batch: the longest a request takes when a replica carries "
        "all its SLOs allow (does not depend on the replica count; sizes the drain)",
    )
    prefill_p99_s: float = Field(description="Prefill alone of a P99 prompt on an idle replica")
    decode_step_s: float
    slo_checks: list[SloCheck]
    at_load: LoadEstimate | None = Field(
        default=None, description="Latency at the load each replica carries"
    )

    output_tps_per_replica: float
    input_tps_per_replica: float
    rps_per_replica: float

    replicas: Replicas | None = Field(
        description="Null when this configuration cannot serve at all (see infeasible_reasons)"
    )
    constraints: list[Constraint]
    binding_constraint: ConstraintName

    gpus_total: int | None
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
    curve: list[CurveStep] = Field(
        default_factory=list,
        description="Predicted closed-loop load test at concurrency 1, 2, 4, … (the KV limit)",
    )
    speculative: SpeculativeEstimate | None = Field(
        default=None, description="Speculative decoding, when spec.serving.speculative is set"
    )

    @property
    def sized(self) -> Replicas:
        """The replica counts of a plan that has them; ``ValueError`` for one that cannot
        serve (callers act only on plans with counts)."""
        if self.replicas is None:
            raise ValueError(f"plan {self.name!r} has no replica count: it cannot serve")
        return self.replicas

    @property
    def replica_count(self) -> int:
        """``replicas.total``, or 0 when the plan has no count."""
        return self.replicas.total if self.replicas is not None else 0
