"""The plan: every number the planner computed, with the inputs and assumptions behind it.

``Plan.model_dump(mode="json")`` is the documented ``tokenscale plan -o json`` contract
(docs/planner.md, "The plan JSON"). Keys are only ever added, never renamed or removed, within
v1alpha1.
"""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer

ConstraintName = Literal["throughput", "concurrency", "kv", "none"]

Whole = Annotated[float, PlainSerializer(round, return_type=int, when_used="json")]
"""A byte or item count: computed in floating point, written to JSON as a whole number."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MemoryBreakdown(_Frozen):
    """Per GPU, bytes."""

    gpu_total_bytes: Whole
    usable_bytes: Whole = Field(description="gpuMemoryUtilization × total")
    weights_bytes: Whole = Field(description="weight_bytes / TP")
    activation_bytes: Whole
    cuda_graph_bytes: Whole
    nccl_bytes: Whole
    runtime_bytes: Whole
    lora_bytes: Whole = Field(
        default=0.0, description="LoRA slots: maxLoras × maxLoraRank for every LoRA module"
    )
    kv_pool_bytes: Whole = Field(description="usable − everything above (negative: no fit)")


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
    draft_weight_bytes_per_gpu: Whole
    draft_kv_bytes_per_token_per_gpu: Whole
    source: str = Field(description="How the proposer was sized")


class LoraChoice(_Frozen):
    """One ``maxLoras`` the planner compared."""

    max_loras: int
    gpus: int | None = Field(description="GPUs the plan needs (null: infeasible)")
    rps_per_replica: float
    swaps_per_s_per_replica: float


class LoraEstimate(_Frozen):
    """What the adapters cost one replica at this plan's maxLoras (planning/lora.py)."""

    adapters: int
    max_lora_rank: int
    max_loras: int
    max_loras_reason: str = Field(description="Given, or why the planner recommends it")
    max_cpu_loras: int
    summary: str = Field(description="The cost in one line")
    mean_adapter_bytes: Whole = Field(description="Share-weighted adapter size, whole model")
    host_cache_bytes: Whole = Field(description="maxCpuLoras adapters in host memory (max)")
    slots_bytes_per_gpu: Whole = Field(description="Out of the KV pool")
    kv_pool_without_bytes: Whole = Field(description="The KV pool per GPU without LoRA")
    throughput_ratio: float = Field(
        description="Output tokens/s with ÷ without LoRA at the operating batch"
    )
    distinct_at_batch: float = Field(description="Distinct adapters in the operating batch")
    gpu_miss_fraction: float = Field(description="Requests whose adapter is not on the GPU")
    host_miss_fraction: float = Field(description="Requests whose adapter is not in host memory")
    swaps_per_s_per_replica: float = Field(description="Adapter loads onto the GPU per second")
    source_loads_per_s_per_replica: float = Field(description="Of them, read from the source")
    load_seconds_host: float
    load_seconds_source: float
    compared: list[LoraChoice] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


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


Routing = Literal["round-robin", "load-aware"]


class SingleVariant(_Frozen):
    """What one variant alone would need (its own plan, within its maxReplicas)."""

    feasible: bool
    replicas: int | None
    gpus: int | None
    cost_per_hour: float | None
    reason: str


class VariantShare(_Frozen):
    """One GPU variant's part of a mix plan."""

    name: str = Field(description="The variant's name (its workload's suffix)")
    gpu: str
    tensor_parallel_size: int
    gpus_per_replica: int
    resource_name: str = Field(
        default="nvidia.com/gpu", description="The extended resource its pods request"
    )
    replicas: int = Field(description="Replicas of this variant in the mix")
    gpus: int
    rps_share: float = Field(description="Fraction of the design load this variant carries")
    rps_per_replica: float = Field(description="Load one replica of this variant carries, RPS")
    capacity_rps_per_replica: float = Field(
        description="Most RPS one replica carries within the SLOs: min over the three "
        "constraints (0: cannot serve)"
    )
    binding_constraint: ConstraintName
    cost_per_hour: float | None = Field(description="This variant's replicas, per hour")
    gpu_hour_price: float | None
    max_replicas: int
    preference: int
    ttft_p99_at_share_s: float | None = Field(
        default=None, description="TTFT P99 estimate at the load one replica carries"
    )
    tpot_at_share_s: float | None = Field(
        default=None, description="Mean TPOT estimate at the load one replica carries"
    )
    single_variant: SingleVariant


class MixSummary(_Frozen):
    """How the mix was chosen: the routing assumed, the objective, the solver, why."""

    routing: Routing
    routing_reason: str
    objective: Literal["cost", "gpu-hours"]
    solver: str
    demand_rps: float = Field(description="Design RPS × redundancy factor")
    capacity_rps: float = Field(description="What the mix carries within the SLOs")
    primary: str = Field(
        description="The variant whose per-replica figures fill the plan's per-replica keys"
    )
    comparison: str = Field(description="The mix against each single-variant plan, one line")
    reasons: list[str]


class RolePool(_Frozen):
    """One role of a disaggregated service: its layout, engine flags, capacity and count."""

    role: Literal["prefill", "decode"]
    replicas: int = Field(description="Within minReplicas/maxReplicas (each role's own)")
    replicas_needed: float = Field(description="max(throughput, concurrency, kv), unrounded")
    replicas_with_redundancy: int = Field(description="ceil(needed × factor) + spareReplicas")
    tensor_parallel_size: int
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    expert_parallel: bool = False
    gpus_per_replica: int
    nodes_per_replica: int = 1
    rps_per_replica: float = Field(description="Requests (prompts or decodes) per second")
    operating_point: float = Field(
        description="Prefill: the utilization the TTFT SLO allows; decode: the batch"
    )
    limited_by: str = Field(description="What sets the operating point")
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_capacity_tokens_per_replica: Whole
    kv_capacity_blocks_per_replica: int = 0
    constraints: list[Constraint]
    binding_constraint: ConstraintName
    gpus: int = Field(description="replicas × gpus_per_replica")
    gpus_needed: int = Field(description="replicas_with_redundancy × gpus_per_replica")


class Disaggregation(_Frozen):
    """Prefill/decode disaggregation: the two pools, the KV transfer between them, and
    whether the service runs that way (``spec.serving.disaggregation``) and why."""

    mode: Literal["off", "on", "auto"]
    enabled: bool = Field(description="The service runs as two pools (on, or auto chose it)")
    reason: str = Field(description="Why, in numbers: GPUs needed each way, what limits each")
    feasible: bool
    infeasible_reasons: list[str] = Field(default_factory=list)
    prefill: RolePool | None
    decode: RolePool | None
    kv_transfer_s: float | None = Field(
        description="KV of a P99 prompt from a prefill to a decode worker, seconds"
    )
    kv_transfer_mean_s: float | None = Field(default=None, description="Of a mean prompt")
    fabric: str = Field(default="", description="The link the KV crosses, and its figure")
    kv_transfer_bytes_per_s: float | None = Field(
        default=None, description="Effective: per-GPU link × efficiency × lanes"
    )
    kv_transfer_latency_s: float | None = Field(default=None, description="Fixed, per transfer")
    ratio: float | None = Field(description="Prefill replicas ÷ decode replicas")
    gpus_needed: int | None = Field(description="Both pools before minReplicas/maxReplicas")
    gpus_total: int | None = Field(description="Both pools within the bounds")
    aggregated_gpus_needed: int | None = Field(description="The best aggregated plan's need")
    cost_per_hour: float | None
    ttft_p99_estimate_s: float | None = Field(
        description="Queue + prefill + KV transfer + first decode step, P99 prompt"
    )
    tpot_p99_estimate_s: float | None = Field(description="Decode steps only: no prefill stalls")
    tpot_estimate_s: float | None = Field(default=None, description="Mean TPOT at the decode batch")
    e2e_p99_estimate_s: float | None = None


PoolRole = Literal["serve", "prefill", "decode"]


class PoolVariant(_Frozen):
    """What one replica of a pool runs on: the GPU, the layout and the price."""

    gpu: str
    tensor_parallel_size: int
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    expert_parallel: bool = False
    nodes_per_replica: int = 1
    gpus_per_replica: int = Field(description="TP × PP × DP")
    gpu_hour_price: float | None = Field(description="Per GPU-hour; null without a price")


class Pool(_Frozen):
    """One pool of identical replicas the plan runs: a one-GPU service's only pool (``serve``),
    one variant of a GPU mix (``serve``), or one role of a prefill/decode pair."""

    name: str = Field(
        description="serve (one pool), the variant's name (a mix), prefill or decode (P/D)"
    )
    role: PoolRole
    variant: PoolVariant
    replicas: int
    load_rps: float = Field(
        description="Its share of the design load, RPS (each P/D role carries all of it: "
        "prefill the prompts, decode the answers)"
    )
    rps_per_replica: float = Field(description="load_rps ÷ replicas")
    capacity_rps_per_replica: float = Field(
        description="Most RPS one replica carries within the SLOs (0: cannot serve)"
    )
    ttft_p99_s: float | None = Field(
        description="TTFT P99 at rps_per_replica (null: a decode pool, or no replica runs)"
    )
    tpot_p99_s: float | None = Field(
        description="TPOT P99 at rps_per_replica (null: a prefill pool, or no replica runs)"
    )
    e2e_p99_s: float | None = Field(
        default=None, description="E2E P99 at rps_per_replica (P/D: the pair's, on decode)"
    )
    binding_constraint: ConstraintName
    gpus: int = Field(description="replicas × gpus_per_replica")
    cost_per_hour: float | None = Field(description="gpus × the GPU-hour price")


class NoCoordination(_Frozen):
    """One pool: nothing to coordinate."""

    rule: Literal["none"] = "none"
    reason: str = ""


class MixCoordination(_Frozen):
    """A GPU mix: one total, split over the variants in the scale order."""

    rule: Literal["mix"] = "mix"
    routing: Routing
    scale_order: list[str] = Field(
        description="Pool names, cheapest capacity first: scale up on the first with room, "
        "down from the last"
    )
    quota: str = Field(description="How a namespace's GPU ResourceQuota bounds the split")
    stockout: str = Field(description="What happens when a variant's pods cannot be placed")
    reason: str = ""


class DisaggregatedCoordination(_Frozen):
    """Prefill/decode: decode carries what prefill emits, the ratio kept within a band."""

    rule: Literal["disaggregated"] = "disaggregated"
    ratio: float | None = Field(description="Planned prefill replicas ÷ decode replicas")
    ratio_low: float | None = Field(description="The band's floor: ratio ÷ slack")
    ratio_high: float | None = Field(description="The band's ceiling: ratio × slack")
    ratio_slack: float = Field(description="How far (×/÷) the live ratio may move")
    reason: str = ""


class LengthCoordination(_Frozen):
    """Length classes: each request goes to the pool of the class its prompt length falls in;
    each pool is sized and scaled on its own."""

    rule: Literal["lengthClasses"] = "lengthClasses"
    bounds: list[str] = Field(description="Each class's prompt range, in order: short ≤ 2,048")
    routing: str = Field(description="What sends a request to its class's pool")
    reason: str = ""


Coordination = Annotated[
    NoCoordination | MixCoordination | DisaggregatedCoordination | LengthCoordination,
    Field(discriminator="rule"),
]


class LengthClassRow(_Frozen):
    """One length class: its traffic (and where each figure came from) and its pools."""

    name: str
    above_tokens: int = Field(description="Prompts longer than this")
    max_input_tokens: int | None = Field(description="Prompts up to this (null: no bound)")
    share: float = Field(description="Fraction of the requests")
    rps_mean: float
    rps_design: float
    input_tokens_mean: float
    input_tokens_p95: float | None
    input_tokens_p99: float | None
    output_tokens_mean: float
    output_tokens_p99: float | None
    sources: dict[str, str] = Field(description="share, inputTokens, outputTokens: stated or how")
    pools: list[str] = Field(description="The class's pools in plan.pools")
    replicas: int
    gpus: int
    cost_per_hour: float | None
    ttft_p99_s: float | None = Field(description="In its own pool, at the load it carries")
    ttft_p99_shared_s: float | None = Field(
        description="The class's own TTFT P99 on the one shared pool (the alternative): its "
        "prompts' prefill after the shared queue's wait (null: the shared plan has no one-pool "
        "load point, e.g. a mix)"
    )
    max_num_batched_tokens: int = Field(description="Its pool's chunk budget")
    feasible: bool


class LengthClassesSummary(_Frozen):
    """Length classes against one shared pool: what isolation costs and what it buys."""

    classes: list[LengthClassRow]
    shared_replicas: int | None = Field(description="One shared pool for all the requests")
    shared_gpus: int | None
    shared_cost_per_hour: float | None
    shared_ttft_p99_s: float | None = Field(description="The shared pool's TTFT P99, all prompts")
    shared_feasible: bool
    isolated_gpus: int | None
    isolated_cost_per_hour: float | None
    pays: bool = Field(
        description="Isolation pays: it meets the SLOs where the shared pool does not, or costs "
        "no more and gives the shortest class a lower TTFT P99"
    )
    verdict: str = Field(description="The comparison in numbers")
    assumptions: list[str]


class ClassShare(_Frozen):
    """One class of ``spec.workload.classes`` on the shared fleet: its SLO checked there, what
    it is served and what it costs (showback)."""

    name: str
    tier: Literal["critical", "standard", "sheddable"]
    priority: int = Field(description="The InferenceObjective priority (higher: served first)")
    guaranteed: bool = Field(description="critical/standard: sized for; sheddable: slack only")
    rps_mean: float
    rps_design: float = Field(description="Peak (capped by quota.maxRps)")
    input_tokens_mean: float
    output_tokens_mean: float
    slo_checks: list[SloCheck] = Field(
        description="The class's own SLO at the fleet's load (empty: sheddable, or no SLO)"
    )
    replicas_for_slo: int | None = Field(
        description="Replicas the class's own SLO needs on the shared pool at the guaranteed "
        "load (null: sheddable)"
    )
    binding: bool = Field(description="This class's SLO sets the fleet's size")
    served_fraction_at_peak: float = Field(
        description="Share of the class's peak the fleet carries at the guaranteed classes' peak"
    )
    served_fraction_at_mean: float = Field(
        description="Share of the class's peak the fleet carries at the guaranteed classes' mean"
    )
    replica_seconds_per_request: float = Field(
        description="Showback's unit: a request's prefill + decode time on a replica at the "
        "operating batch"
    )
    gpus: float = Field(description="GPU-hours per hour charged to the class (showback)")
    gpu_hours_per_day: float
    cost_per_hour: float | None
    cost_per_million_tokens: float | None = Field(
        description="cost_per_hour ÷ the input + output tokens it is served per hour, × 1M"
    )
    quota_max_rps: float | None = None
    quota_max_tokens_per_second: float | None = None


class ClassesSummary(_Frozen):
    """How the classes were sized: the binding class, the slack, the price of guaranteeing
    everything."""

    binding_class: str
    reason: str = Field(description="Which class's SLO binds at how many replicas, in words")
    guaranteed_rps_mean: float
    guaranteed_rps_design: float
    sheddable_rps_mean: float
    sheddable_rps_design: float
    sheddable_served_at_peak: float = Field(
        description="Fraction of the sheddable peak carried at the guaranteed classes' peak"
    )
    sheddable_served_at_mean: float = Field(
        description="Fraction of the sheddable peak carried at the guaranteed classes' mean"
    )
    guarantee_all_gpus: int | None = Field(
        description="GPUs if the sheddable classes were guaranteed too (at the binding SLO)"
    )
    guarantee_all_cost_per_hour: float | None
    extra_gpus_to_guarantee_all: int | None
    assumptions: list[str]


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

    params: Whole
    active_params: Whole
    weight_bytes: Whole = Field(description="Whole model: params × bytes per param")
    kv_bytes_per_token: Whole = Field(description="Whole model, all layers")
    kv_bytes_per_token_per_gpu: Whole
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
    kv_capacity_tokens_per_replica: Whole
    kv_capacity_blocks_per_replica: int
    kv_bytes_per_request_mean: Whole
    kv_bytes_per_request_p99: Whole
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
    lora: LoraEstimate | None = Field(
        default=None, description="LoRA adapters' cost, when spec.lora is set"
    )
    variants: list[VariantShare] = Field(
        default_factory=list,
        description="spec.hardware.variants: each variant's part of the mix (empty: one GPU type)",
    )
    mix: MixSummary | None = Field(
        default=None, description="How the mix was chosen (null: one GPU type)"
    )
    variant_plans: list["Plan"] = Field(
        default_factory=list,
        exclude=True,
        description="Each variant's own plan at the layout the mix runs, in variants order "
        "(not part of the JSON)",
    )
    disaggregation: Disaggregation | None = Field(
        default=None,
        description="Prefill/decode pools (spec.serving.disaggregation on or auto); when "
        "enabled, gpus_total and cost_per_hour are both pools'",
    )

    pools: list[Pool] = Field(
        default_factory=list,
        description="The pools the plan runs (one for one GPU type; one per variant of a mix; "
        "prefill and decode when disaggregated): gpus_total, cost_per_hour and the top-level "
        "latencies are their sums and maxima",
    )
    coordination: Coordination | None = Field(
        default=None,
        description="The rule between the pools: none, mix, disaggregated or lengthClasses",
    )
    classes: list[ClassShare] = Field(
        default_factory=list,
        description="spec.workload.classes on the shared fleet: each class's SLO, served "
        "fraction and showback (empty: no classes)",
    )
    classes_summary: ClassesSummary | None = Field(
        default=None, description="The binding class, the slack, the cost to guarantee all"
    )
    class_plans: list["Plan"] = Field(
        default_factory=list,
        exclude=True,
        description="Each length class's own plan, in spec.serving.lengthClasses order, and "
        "last the one shared pool's (not part of the JSON)",
    )
    length_classes: LengthClassesSummary | None = Field(
        default=None,
        description="spec.serving.lengthClasses: each class's traffic and pools, against one "
        "shared pool (null: no length classes; the plan's one-replica figures are then the "
        "shared pool's, the alternative)",
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

    # The fleet's shape is tested here and only here (one GPU type, a mix, prefill/decode):
    # callers ask these, never ``mix`` or ``disaggregation`` themselves. A mix whose spec
    # also sets ``spec.serving.disaggregation: on`` answers both.
    @property
    def is_mix(self) -> bool:
        """A GPU mix (``spec.hardware.variants``): one serve pool per variant."""
        return self.mix is not None

    @property
    def role_pools(self) -> tuple[RolePool, RolePool] | None:
        """The prefill and decode pools when the plan runs them (``spec.serving.disaggregation``
        on, or auto chose it); None when it does not."""
        d = self.disaggregation
        if d is None or not d.enabled or d.prefill is None or d.decode is None:
            return None
        return d.prefill, d.decode

    @property
    def length_split(self) -> "LengthClassesSummary | None":
        """The length classes when the plan runs one pool per class
        (``spec.serving.lengthClasses``); None when it does not."""
        return self.length_classes

    @property
    def is_disaggregated(self) -> bool:
        """The plan runs a prefill and a decode pool (:attr:`role_pools`)."""
        return self.role_pools is not None
