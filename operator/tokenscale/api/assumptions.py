"""``spec.assumptions``: every efficiency and overhead the planner uses, each overridable.

Defaults and where they come from (see README "Accuracy"):
- ``decodeBandwidthEfficiency`` 0.80: published planners use 0.8–0.9 of HBM bandwidth for
  memory-bound kernels (inference-formulas.md); measured vLLM batch-1 decode on A100 reaches
  ≈77 % of the bandwidth roofline.
- ``prefillComputeEfficiency`` 0.55: prefill GEMMs reach ≤ 0.7 of peak (inference-formulas.md);
  attention and norms pull the whole-prefill figure lower.
- ``stepOverheadSeconds``: scheduler, sampling and launch cost per engine step.
"""

from pydantic import Field

from tokenscale.api.base import ApiModel


class Assumptions(ApiModel):
    """Efficiencies and overhead estimates; reported with every plan."""

    prefill_compute_efficiency: float = Field(
        default=0.55, gt=0, le=1, description="Achieved / peak FLOPS during prefill."
    )
    decode_bandwidth_efficiency: float = Field(
        default=0.80, gt=0, le=1, description="Achieved / peak HBM bandwidth during decode."
    )
    decode_compute_efficiency: float = Field(
        default=0.50, gt=0, le=1, description="Achieved / peak FLOPS during large-batch decode."
    )
    interconnect_efficiency: float = Field(
        default=0.70, gt=0, le=1, description="Achieved / peak GPU-GPU bandwidth (all-reduce)."
    )
    allreduce_latency_seconds: float = Field(
        default=8e-6, ge=0, description="Fixed latency of one tensor-parallel all-reduce."
    )
    inter_node_efficiency: float = Field(
        default=0.80,
        gt=0,
        le=1,
        description="Achieved / line-rate node-to-node bandwidth (pipeline hand-offs, expert "
        "all-to-alls); NCCL over InfiniBand reaches 80-90 % on large messages.",
    )
    inter_node_latency_seconds: float = Field(
        default=2.5e-5,
        ge=0,
        description="Fixed latency of one node-to-node transfer or all-to-all phase.",
    )
    step_overhead_seconds: float = Field(
        default=0.0008, ge=0, description="Per engine step: scheduling, sampling, launches."
    )
    runtime_overhead_gib: float = Field(
        default=1.0, ge=0, description="Per GPU: CUDA context and non-torch allocations."
    )
    cuda_graph_gib: float = Field(
        default=0.5, ge=0, description="Per GPU: CUDA-graph capture pools."
    )
    nccl_buffer_gib: float = Field(
        default=0.5, ge=0, description="Per GPU when tensorParallelSize > 1: NCCL buffers."
    )
    activation_peak_gib: float | None = Field(
        default=None,
        ge=0,
        description="Per GPU activation peak of a max-num-batched-tokens step; absent = estimated.",
    )
    knee_tpot_ratio: float = Field(
        default=2.0,
        ge=1,
        description="The knee: the largest batch whose TPOT is at most this multiple of the "
        "weight-read floor (every weight read once per step). 2 = latency doubled.",
    )
    kv_target_utilization: float = Field(
        default=0.90,
        gt=0,
        le=1,
        description="Plan KV usage up to this fraction of the pool (the high watermark).",
    )
