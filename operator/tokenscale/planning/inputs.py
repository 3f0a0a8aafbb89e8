"""Resolve a spec into concrete planner inputs: catalog lookups, dtypes, vLLM defaults.

Invalid input raises :class:`SpecError` naming the field, the value and what is allowed.
"""

from dataclasses import dataclass

from tokenscale.api.errors import SpecError, SpecIssue
from tokenscale.api.hardware import TP_CHOICES, GpuSpec
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.model import BYTES_PER_ELEMENT, Architecture, WeightDtype
from tokenscale.catalog.gpus import GPU_CATALOG
from tokenscale.catalog.hf_config import architecture_from_hf_config, weight_dtype_from_hf_config
from tokenscale.catalog.models import MODEL_CATALOG, find_model
from tokenscale.catalog.params import ParamCount, count_params


@dataclass(frozen=True)
class ServingDefaults:
    """vLLM 0.33's scheduler limits, resolved for the GPU (vllm/engine/arg_utils.py)."""

    max_num_seqs: int
    max_num_batched_tokens: int
    source: str


@dataclass(frozen=True)
class ResolvedModel:
    """The model as the planner sees it."""

    architecture: Architecture
    params: ParamCount
    weight_dtype: WeightDtype
    checkpoint_dtype: WeightDtype | None
    kv_bytes_per_element: float
    source: str


def vllm_serving_defaults(gpu: GpuSpec) -> ServingDefaults:
    """vLLM's defaults for the OpenAI server: 1024 seqs on ≥70 GiB non-A100 or ≥160 GiB GPUs
    (else 256); 16384 batched tokens on ≥160 GiB, 8192 on H100/H200 class, else 2048."""
    big = gpu.memory_gib >= 160
    h_class = gpu.memory_gib >= 70 and "A100" not in gpu.name.upper()
    seqs = 1024 if (big or h_class) else 256
    tokens = 16384 if big else (8192 if h_class else 2048)
    return ServingDefaults(seqs, tokens, "vLLM 0.33 defaults for this GPU class")


def resolve_gpu(spec: InferenceServiceSpec) -> GpuSpec:
    hw = spec.hardware
    if hw.gpu_spec is not None:
        return hw.gpu_spec
    assert hw.gpu is not None  # guaranteed by HardwareSpec's validator
    entry = GPU_CATALOG.get(hw.gpu)
    if entry is None:
        by_lower = {k.lower(): v for k, v in GPU_CATALOG.items()}
        entry = by_lower.get(hw.gpu.lower())
    if entry is None:
        raise SpecError.single(
            "spec.hardware.gpu",
            f"unknown GPU {hw.gpu!r}; use one of {', '.join(GPU_CATALOG)} or give gpuSpec",
        )
    return entry.spec


def resolve_model(spec: InferenceServiceSpec) -> ResolvedModel:
    m = spec.model
    checkpoint_dtype: WeightDtype | None = None
    if m.architecture is not None:
        arch, source = m.architecture, "spec.model.architecture"
    elif m.hf_config is not None:
        arch = architecture_from_hf_config(m.hf_config)
        checkpoint_dtype, source = weight_dtype_from_hf_config(m.hf_config), "spec.model.hfConfig"
    else:
        key = m.catalog or m.name
        entry = MODEL_CATALOG.get(key) if m.catalog else find_model(key)
        if entry is None:
            path = "spec.model.catalog" if m.catalog else "spec.model.name"
            raise SpecError.single(
                path,
                f"{key!r} is not in the model catalog; use one of {', '.join(MODEL_CATALOG)}, "
                "or give architecture or hfConfig",
            )
        arch, checkpoint_dtype = entry.architecture, entry.default_dtype
        source = f"catalog {entry.key} ({entry.source})"
    dtype: WeightDtype = m.weight_dtype or checkpoint_dtype or "bf16"
    activation_bytes = 4.0 if dtype == "fp32" else 2.0
    kv_bytes = 1.0 if m.kv_cache_dtype == "fp8" else activation_bytes
    return ResolvedModel(arch, count_params(arch), dtype, checkpoint_dtype, kv_bytes, source)


def tp_problem(arch: Architecture, tp: int) -> str | None:
    """Why vLLM would refuse this tensor-parallel size, or None.

    vLLM requires ``attention_heads % tp == 0`` and, for the KV heads, either
    ``kv_heads % tp == 0`` (split) or ``tp % kv_heads == 0`` (replicated).
    """
    if arch.attention_heads % tp:
        return f"attentionHeads={arch.attention_heads} is not divisible by {tp}"
    kv = arch.effective_kv_heads
    if not arch.is_mla and kv % tp and tp % kv:
        return f"kvHeads={kv} and {tp} do not divide one another"
    return None


def valid_tp_sizes(arch: Architecture, gpus_per_node: int) -> list[int]:
    return [tp for tp in TP_CHOICES if tp <= gpus_per_node and tp_problem(arch, tp) is None]


def check_tp(arch: Architecture, tp: int, gpus_per_node: int) -> None:
    problem = tp_problem(arch, tp)
    if problem is not None:
        allowed = valid_tp_sizes(arch, gpus_per_node)
        raise SpecError(
            [
                SpecIssue(
                    "spec.hardware.tensorParallelSize",
                    f"{tp} is invalid for this model: {problem}; use auto or one of {allowed}",
                )
            ]
        )


def bytes_per_param(dtype: WeightDtype) -> float:
    return BYTES_PER_ELEMENT[dtype]
