"""``spec.hardware``: the accelerator, parallelism, node fabric and memory reservation."""

from typing import Any, Literal, Self

from pydantic import Field, field_validator, model_validator

from tokenscale.api.base import MAX_GIB, ApiModel

TensorParallelSize = Literal["auto", 1, 2, 4, 8]
TP_CHOICES: tuple[int, ...] = (1, 2, 4, 8)
#: An extended resource: ``domain/name`` (so never ``cpu``, ``memory`` or ``ephemeral-storage``).
EXTENDED_RESOURCE_PATTERN = (
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
    r"/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)


class GpuSpec(ApiModel):
    """One accelerator's datasheet figures (dense peaks, no sparsity)."""

    name: str = Field(default="custom", min_length=1, description="Product name, for reports.")
    memory_gib: float = Field(
        ge=0.5, le=MAX_GIB, description="Device memory vLLM sees as total, GiB."
    )
    hbm_bandwidth_gbps: float = Field(
        ge=1, le=1e6, description="Memory bandwidth, GB/s (1e9 bytes/s)."
    )
    bf16_tflops: float = Field(ge=0.1, le=1e6, description="Dense BF16/FP16 tensor peak, TFLOPS.")
    fp8_tflops: float | None = Field(
        default=None,
        ge=0.1,
        le=1e6,
        description="Dense FP8 tensor peak, TFLOPS; absent = no FP8 cores.",
    )
    int8_tops: float | None = Field(
        default=None, ge=0.1, le=1e6, description="Dense INT8 peak, TOPS."
    )
    interconnect_gbps: float | None = Field(
        default=None,
        ge=1,
        le=1e6,
        description="GPU-to-GPU bandwidth per GPU, GB/s (NVLink); absent means PCIe only.",
    )
    pcie_gbps: float = Field(default=64.0, ge=1, le=1e6, description="Host link bandwidth, GB/s.")
    inter_node_gbps: float | None = Field(
        default=None,
        ge=1,
        le=1e6,
        description=(
            "Node-to-node bandwidth per GPU, GB/s (InfiniBand/RoCE NIC per GPU); absent means "
            "no RDMA fabric: replicas spanning nodes are assumed to use 100 GbE (12.5 GB/s)."
        ),
    )
    product_label: str | None = Field(
        default=None, description="Node label nvidia.com/gpu.product value for scheduling."
    )
    resource_name: str = Field(
        default="nvidia.com/gpu",
        pattern=EXTENDED_RESOURCE_PATTERN,
        description="Kubernetes extended resource for this GPU (domain/name, e.g. amd.com/gpu).",
    )

    @field_validator("resource_name")
    @classmethod
    def _extended(cls, value: str) -> str:
        if value.split("/", 1)[0] == "kubernetes.io" or value.endswith(".kubernetes.io"):
            raise ValueError(
                f"{value!r} is a native resource, not a device; use the device plugin's "
                "extended resource, e.g. nvidia.com/gpu"
            )
        return value


class HardwareSpec(ApiModel):
    """Where a replica runs: one GPU type, ``tensorParallelSize`` GPUs per replica."""

    gpu: str | None = Field(
        default=None, description="GPU catalog key, e.g. H100-SXM-80GB (see `tokenscale catalog`)."
    )
    gpu_spec: GpuSpec | None = Field(default=None, description="Inline GPU figures.")
    tensor_parallel_size: TensorParallelSize = Field(
        default="auto", description="GPUs per replica: auto, 1, 2, 4 or 8."
    )
    gpus_per_node: int = Field(
        default=8,
        ge=1,
        le=64,
        description="GPUs on one node; tensor parallelism stays inside a node.",
    )
    max_nodes_per_replica: int = Field(
        default=4,
        ge=1,
        le=8,
        description=(
            "Most nodes one replica may span (pipeline stages or expert-parallel ranks, run as "
            "a LeaderWorkerSet group); 1 keeps every replica on one node."
        ),
    )
    inter_node_gbps: float | None = Field(
        default=None,
        ge=1,
        le=1e6,
        description=(
            "Node-to-node bandwidth per GPU, GB/s (InfiniBand/RoCE), for replicas that span "
            "nodes (pipeline stages, expert all-to-all); absent = the GPU's catalog figure."
        ),
    )
    gpu_memory_utilization: float = Field(
        default=0.92,
        ge=0.05,
        le=1.0,
        description="Fraction of total GPU memory vLLM may use (--gpu-memory-utilization).",
    )

    @field_validator("tensor_parallel_size", mode="before")
    @classmethod
    def _not_a_bool(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("is a boolean; use auto, 1, 2, 4 or 8")
        return value

    @model_validator(mode="after")
    def _one_gpu(self) -> Self:
        if (self.gpu is None) == (self.gpu_spec is None):
            raise ValueError("give exactly one of gpu (a catalog key) or gpuSpec (inline figures)")
        if isinstance(self.tensor_parallel_size, int) and (
            self.tensor_parallel_size > self.gpus_per_node
        ):
            raise ValueError(
                f"tensorParallelSize={self.tensor_parallel_size} exceeds gpusPerNode="
                f"{self.gpus_per_node}; tensor parallelism must stay inside one node"
            )
        return self
