"""``spec.hardware``: the accelerator, parallelism, node fabric and memory reservation.

One GPU type (``gpu`` or ``gpuSpec``), or several (``variants``): the planner then sizes each
variant and chooses the cheapest mix (``planning/mix.py``).
"""

import re
from typing import Any, Literal, Self

from pydantic import Field, field_validator, model_validator

from tokenscale.api.base import MAX_GIB, MAX_PRICE, MAX_REPLICAS, ApiModel

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
        description="GPU-to-GPU bandwidth per GPU, GB/s (NVLink), both directions together as "
        "datasheets quote it (H100: 900); transfers and all-reduces use half, one way. Absent "
        "means PCIe only.",
    )
    pcie_gbps: float = Field(
        default=64.0,
        ge=1,
        le=1e6,
        description="Host link bandwidth, GB/s, both directions together (PCIe Gen4 x16: 64); "
        "GPU-to-GPU traffic without NVLink uses half, one way.",
    )
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


#: A variant's name: a DNS-1123 label short enough to suffix a workload name (``-<name>``).
VARIANT_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,18}[a-z0-9])?$"
VARIANT_NAME_MAX = 20
MAX_VARIANTS = 8


def default_variant_name(gpu_key: str) -> str:
    """``H100-SXM-80GB`` → ``h100-sxm-80gb``: lowercase, runs of other characters as ``-``,
    cut to :data:`VARIANT_NAME_MAX`."""
    text = re.sub(r"[^a-z0-9]+", "-", gpu_key.lower()).strip("-")
    return text[:VARIANT_NAME_MAX].rstrip("-") or "gpu"


class HardwareVariant(ApiModel):
    """One GPU type the service may run on, with its own layout, bound and price."""

    name: str | None = Field(
        default=None,
        pattern=VARIANT_NAME_PATTERN,
        description="Suffix of this variant's workload (lowercase, ≤ 20 characters); absent = "
        "from the GPU key (H100-SXM-80GB → h100-sxm-80gb).",
    )
    gpu: str | None = Field(default=None, description="GPU catalog key, e.g. L40S-48GB.")
    gpu_spec: GpuSpec | None = Field(default=None, description="Inline GPU figures.")
    tensor_parallel_size: TensorParallelSize = Field(
        default="auto", description="GPUs per replica on this variant: auto, 1, 2, 4 or 8."
    )
    max_replicas: int = Field(
        default=64,
        ge=0,
        le=MAX_REPLICAS,
        description="Most replicas of this variant (what the cluster or contract allows).",
    )
    gpu_hour_price: float | None = Field(
        default=None,
        ge=0,
        le=MAX_PRICE,
        description="Price of one GPU of this type for one hour; absent = "
        "spec.cost.gpuHourPrices[gpu], else none (the mix then minimises GPU-hours).",
    )
    preference: int = Field(
        default=0,
        ge=-100,
        le=100,
        description="Among mixes of equal cost, the one with more replicas of higher-preference "
        "variants wins.",
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
        return self

    @property
    def gpu_key(self) -> str:
        """The catalog key, or the inline GPU's name."""
        if self.gpu is not None:
            return self.gpu
        assert self.gpu_spec is not None  # guaranteed by the validator
        return self.gpu_spec.name

    @property
    def resolved_name(self) -> str:
        """``name``, or the one derived from the GPU key."""
        return self.name or default_variant_name(self.gpu_key)


class HardwareSpec(ApiModel):
    """Where a replica runs: one GPU type (``gpu``/``gpuSpec``, ``tensorParallelSize`` GPUs per
    replica), or several (``variants``)."""

    gpu: str | None = Field(
        default=None, description="GPU catalog key, e.g. H100-SXM-80GB (see `tokenscale catalog`)."
    )
    gpu_spec: GpuSpec | None = Field(default=None, description="Inline GPU figures.")
    variants: list[HardwareVariant] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_VARIANTS,
        description="Several GPU types instead of gpu/gpuSpec: the planner sizes each at its own "
        "layout and chooses the cheapest mix that carries the design load.",
    )
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
            "a LeaderWorkerSet group); 1 keeps every replica on one node. A mix's variants "
            "run one node per replica whatever this says."
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
        given = sum(x is not None for x in (self.gpu, self.gpu_spec, self.variants))
        if given != 1:
            raise ValueError(
                "give exactly one of gpu (a catalog key), gpuSpec (inline figures) or variants "
                "(several GPU types)"
            )
        if isinstance(self.tensor_parallel_size, int) and (
            self.tensor_parallel_size > self.gpus_per_node
        ):
            raise ValueError(
                f"tensorParallelSize={self.tensor_parallel_size} exceeds gpusPerNode="
                f"{self.gpus_per_node}; tensor parallelism must stay inside one node"
            )
        if self.variants is not None:
            self._check_variants(self.variants)
        return self

    @property
    def is_mix(self) -> bool:
        """Several GPU types (``variants``): the spec's one test of a GPU mix (a plan's is
        ``Plan.is_mix``)."""
        return self.variants is not None

    def _check_variants(self, variants: list[HardwareVariant]) -> None:
        if self.tensor_parallel_size != "auto":
            raise ValueError(
                "tensorParallelSize is per variant with variants: set "
                "variants[i].tensorParallelSize instead"
            )
        seen: dict[str, int] = {}
        for i, v in enumerate(variants):
            tp = v.tensor_parallel_size
            if isinstance(tp, int) and tp > self.gpus_per_node:
                raise ValueError(
                    f"variants[{i}].tensorParallelSize={tp} exceeds gpusPerNode="
                    f"{self.gpus_per_node}; tensor parallelism must stay inside one node"
                )
            name = v.resolved_name
            if name in seen:
                raise ValueError(
                    f"variants[{i}] and variants[{seen[name]}] are both named {name!r}; give "
                    "each a distinct variants[i].name"
                )
            seen[name] = i
        if all(v.max_replicas == 0 for v in variants):
            raise ValueError("every variants[i].maxReplicas is 0: no replica could run")
