"""``spec.assumptions``: every efficiency and overhead the planner uses, each overridable.

Defaults and where they come from (see docs/accuracy.md):
- ``decodeBandwidthEfficiency`` 0.80: published planners use 0.8–0.9 of HBM bandwidth for
  memory-bound kernels (docs/formulas.md); measured vLLM batch-1 decode on A100 reaches
  ≈77 % of the bandwidth roofline.
- ``prefillComputeEfficiency`` 0.85: fitted on the accuracy dataset's TTFTs and saturated
  throughputs (benchmarks/accuracy), whose long prompts are GEMM-bound; capped at 0.85, about
  what large BF16 GEMMs reach on A100/H100 (docs/formulas.md quotes ≤ 0.7 for planners).
  Since the dataset's audit the BF16 TTFTs it was fitted on are excluded (prefix-cache hits)
  and the throughputs are lower bounds; the re-fit on what is left keeps 0.85, constrained by
  the prefills inside the offline batch latencies and the 16,000-token TTFT (one cold BF16
  TTFT of 233 tokens was added since; at that length the prefill is a few ms of its 59 ms).
- ``stepOverheadSeconds`` 1.2 ms: scheduler, sampling and launch cost per engine step, fitted
  with the prefill efficiency on the accuracy dataset's fit set (kept by the re-fit after the
  dataset's audit: its optimum, 70 % of the bandwidth and 1.5 ms, loses a held-out bound;
  see the accuracy notes).
- ``requestOverheadSeconds`` 16.6 ms (was 17, and 8 before that) and
  ``requestOverheadPerTokenSeconds`` 4.7 µs: fitted together (least squares on the relative
  error, ``benchmarks/accuracy_refit.py --overhead``) on the fit set's TTFTs at concurrency 1:
  Mooncake's P/D TTFTs of 128 to 32,768-token prompts (vLLM 0.11.2, /v1/chat/completions
  through the toy proxy, two requests each, TP 8 on H800). The 128- and 256-token ones (46 and
  48 ms, of which the prefill, transfer and first step are about 13 ms) pin the fixed part; the
  long ones miss by 9.2 µs per prompt token (two requests) from 2,048 to 32,768 tokens alike —
  linear, so not attention (which grows with the square) — the per-token part. The fit set
  cannot tell a host cost per prompt token (both servers template and tokenize the whole
  prompt) from a TP 8 prefill slower per token on this GPU; the planner takes the first, which
  costs no GPU time: capacity is unchanged (docs/accuracy.md). Held out: GPUStack's Qwen3-8B
  TTFT (vLLM 0.11.0, one request, 59 ms for a 7 ms prefill) wants 52 ms, so the estimate is
  still 60 % short there: the overhead differs by server path and client (see the accuracy
  notes). It adds to TTFT only (no GPU time: capacity is unchanged).
- ``runtimeOverheadGiB`` 0.14 and ``ncclBufferGiB`` 0.41: the non-torch memory vLLM start-up
  logs report on H100 (0.13–0.14 GiB at TP 1, 0.54–0.55 GiB at TP 2; benchmarks/accuracy).
- ``cudaGraphGiB`` 0.5: graph pools vLLM (≥ 0.21) sets aside before sizing the KV pool; not
  measured by the accuracy dataset, whose engines predate that or ran eager.
"""

from pydantic import Field

from tokenscale.api.base import MAX_GIB, ApiModel

#: ``requestOverheadPerTokenSeconds``' default (module docstring).
PER_TOKEN_DEFAULT_S = 4.7e-6


class Assumptions(ApiModel):
    """Efficiencies and overhead estimates; reported with every plan. Efficiencies lie in
    [0.01, 1]: below 1 % a figure is a typo, and zero would divide by zero."""

    prefill_compute_efficiency: float = Field(
        default=0.85, ge=0.01, le=1, description="Achieved / peak FLOPS during prefill."
    )
    decode_bandwidth_efficiency: float = Field(
        default=0.80, ge=0.01, le=1, description="Achieved / peak HBM bandwidth during decode."
    )
    decode_compute_efficiency: float = Field(
        default=0.50, ge=0.01, le=1, description="Achieved / peak FLOPS during large-batch decode."
    )
    interconnect_efficiency: float = Field(
        default=0.70, ge=0.01, le=1, description="Achieved / peak GPU-GPU bandwidth (all-reduce)."
    )
    allreduce_latency_seconds: float = Field(
        default=8e-6, ge=0, le=1.0, description="Fixed latency of one tensor-parallel all-reduce."
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
    kv_transfer_latency_seconds: float = Field(
        default=5e-4,
        ge=0,
        le=10,
        description="Fixed cost of moving one prompt's KV cache from a prefill to a decode worker "
        "(disaggregation), on top of its bytes over the link: fitted on the fit rows of "
        "benchmarks/accuracy/disaggregation.yaml (vLLM, RDMA between H800 nodes).",
    )
    step_overhead_seconds: float = Field(
        default=0.0012,
        ge=0,
        le=10.0,
        description="Per engine step: scheduling, sampling, launches.",
    )
    request_overhead_seconds: float = Field(
        default=0.0166,
        ge=0,
        le=10.0,
        description="Per request, outside the GPU: HTTP, tokenization, the first scheduling "
        "and detokenizing the first token (client-visible TTFT; no GPU time). Fitted on the "
        "TTFTs at concurrency 1 with requestOverheadPerTokenSeconds (the short prompts pin "
        "it; vLLM 0.11: 16.6 ms; benchmarks/accuracy_refit.py --overhead).",
    )
    request_overhead_per_token_seconds: float = Field(
        default=PER_TOKEN_DEFAULT_S,
        ge=0,
        le=0.001,
        description="Per prompt token of a request, outside the GPU: the server reads, "
        "templates and tokenizes the whole prompt before the engine sees it (client-visible "
        "TTFT; no GPU time). Fitted with requestOverheadSeconds on the fit set's TTFTs at "
        "concurrency 1 (vLLM 0.11, 128- to 32,768-token prompts; "
        "benchmarks/accuracy_refit.py --overhead).",
    )
    runtime_overhead_gib: float = Field(
        default=0.14,
        ge=0,
        le=MAX_GIB,
        description="Per GPU: CUDA context and non-torch allocations.",
    )
    cuda_graph_gib: float = Field(
        default=0.5, ge=0, le=MAX_GIB, description="Per GPU: CUDA-graph capture pools."
    )
    nccl_buffer_gib: float = Field(
        default=0.41,
        ge=0,
        le=MAX_GIB,
        description="Per GPU when tensorParallelSize > 1: NCCL buffers.",
    )
    activation_peak_gib: float | None = Field(
        default=None,
        ge=0,
        le=MAX_GIB,
        description="Per GPU activation peak of a max-num-batched-tokens step; absent = estimated.",
    )
    knee_tpot_ratio: float = Field(
        default=2.0,
        ge=1,
        le=100,
        description="The knee: the largest batch whose TPOT is at most this multiple of the "
        "weight-read floor (every weight read once per step). 2 = latency doubled.",
    )
    kv_target_utilization: float = Field(
        default=0.90,
        ge=0.01,
        le=1,
        description="Plan KV usage up to this fraction of the pool (the high watermark).",
    )
