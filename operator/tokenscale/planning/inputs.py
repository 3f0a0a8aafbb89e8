"""Resolve a spec into concrete planner inputs: catalog lookups, dtypes, vLLM defaults.

Invalid input raises :class:`SpecError` naming the field, the value and what is allowed.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tokenscale.api.base import MAX_PARAMS
from tokenscale.api.errors import SpecError, SpecIssue, did_you_mean
from tokenscale.api.hardware import TP_CHOICES, GpuSpec
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.model import BYTES_PER_ELEMENT, Architecture, WeightDtype
from tokenscale.catalog.gpus import GPU_CATALOG
from tokenscale.catalog.hf_config import (
    architecture_from_hf_config,
    hf_config_notes,
    int4_scale_bytes,
    quantization_method,
    weight_dtype_from_hf_config,
)
from tokenscale.catalog.models import MODEL_CATALOG, find_model, quantization_from_name
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
    notes: tuple[str, ...] = ()
    """What the architecture assumes where the model's config is silent (plan warnings)."""
    scale_bytes_per_param: float = 0.0
    """Bytes a weight's quantization parameters add in memory (int4: its format's group scales
    and zero points, :func:`~tokenscale.catalog.hf_config.int4_scale_bytes`; else 0)."""


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
    if hw.gpu is None:  # variants: each is planned as a one-GPU spec (planning/variants.py)
        raise SpecError.single(
            "spec.hardware.variants",
            "this question is asked of one GPU type; plan each variant's own spec",
        )
    entry = GPU_CATALOG.get(hw.gpu)
    if entry is None:
        by_lower = {k.lower(): v for k, v in GPU_CATALOG.items()}
        entry = by_lower.get(hw.gpu.lower())
    if entry is None:
        raise SpecError.single(
            "spec.hardware.gpu",
            f"unknown GPU {hw.gpu!r}{did_you_mean(hw.gpu, list(GPU_CATALOG))}; use one of "
            f"{', '.join(GPU_CATALOG)} or give gpuSpec",
        )
    return entry.spec


_UNQUANTIZED: tuple[WeightDtype, ...] = ("fp32", "bf16", "fp16")
_WEIGHT_DTYPE_PATH = "spec.model.weightDtype"


def check_loadable(
    requested: WeightDtype | None, checkpoint: WeightDtype | None, method: str | None
) -> WeightDtype:
    """The dtype vLLM will hold the weights in, or :class:`SpecError` at spec.model.weightDtype.

    vLLM loads a pre-quantized checkpoint in its stored format (it reads quantization_config
    itself) and can quantize a 16/32-bit checkpoint only to FP8 on load (``--quantization
    fp8``). An INT8/INT4 plan of an unquantized checkpoint would plan a quarter of the memory
    vLLM then uses, so it is refused, as is a wider plan of a pre-quantized checkpoint.
    """
    stored: WeightDtype = checkpoint or "bf16"
    if requested is None:
        if method is not None and checkpoint is None:
            raise SpecError.single(
                _WEIGHT_DTYPE_PATH,
                f"the checkpoint is quantized ({method}) with a weight width tokenscale cannot "
                "read from quantization_config; set weightDtype to the stored width "
                "(fp8, int8 or int4)",
            )
        return stored
    if method is not None:
        if checkpoint is not None and requested != checkpoint:
            raise SpecError.single(
                _WEIGHT_DTYPE_PATH,
                f"{requested!r} does not match the checkpoint, pre-quantized to {checkpoint} "
                f"({method}); vLLM loads it as stored: set weightDtype: {checkpoint} or omit it",
            )
        return requested
    if requested in (*_UNQUANTIZED, "fp8", stored):
        return requested
    origin = "bf16 when nothing names it" if checkpoint is None else f"{checkpoint}"
    raise SpecError.single(
        _WEIGHT_DTYPE_PATH,
        f"{requested!r} needs a pre-quantized checkpoint, but this one is unquantized "
        f"({origin}) and vLLM quantizes on load only to fp8; use fp8 (online), the "
        "checkpoint's own width, or serve an AWQ/GPTQ/compressed-tensors checkpoint and give "
        "its config.json (with quantization_config) as hfConfig",
    )


def _catalog_names() -> list[str]:
    return [*MODEL_CATALOG, *(a for e in MODEL_CATALOG.values() for a in e.aliases)]


def resolve_model(spec: InferenceServiceSpec) -> ResolvedModel:
    m = spec.model
    checkpoint_dtype: WeightDtype | None = None
    method: str | None = None
    quant_config: Mapping[str, Any] | None = None  # the config.json its format is read from
    notes: tuple[str, ...] = ()
    if m.hf_config_file is not None and m.hf_config is None:  # the CLI inlines the file
        raise SpecError.single(
            "spec.model.hfConfigFile",
            f"{m.hf_config_file!r} is a file only the command line reads; in the cluster put the "
            "config.json in a ConfigMap and name it in hfConfigRef, or give hfConfig inline",
        )
    if m.hf_config_ref is not None:
        raise SpecError.single(
            "spec.model.hfConfigRef",
            f"ConfigMap {m.hf_config_ref.config_map_name!r} is read by the operator; on the "
            "command line give the same config.json as hfConfigFile, or hfConfig inline",
        )
    if m.architecture is not None:
        arch, source = m.architecture, "spec.model.architecture"
    elif m.hf_config is not None:
        arch = architecture_from_hf_config(m.hf_config)
        checkpoint_dtype = weight_dtype_from_hf_config(m.hf_config)
        source = (  # the command line inlines hfConfigFile's content and keeps its path
            "spec.model.hfConfig"
            if m.hf_config_file is None
            else f"spec.model.hfConfigFile ({m.hf_config_file})"
        )
        method = quantization_method(m.hf_config)
        quant_config = m.hf_config
        notes = tuple(hf_config_notes(m.hf_config))
    else:
        key = m.catalog or m.name
        entry = MODEL_CATALOG.get(key) if m.catalog else find_model(key)
        if entry is None:
            path = "spec.model.catalog" if m.catalog else "spec.model.name"
            raise SpecError.single(
                path,
                f"{key!r} is not in the model catalog{did_you_mean(key, _catalog_names())}; use "
                f"one of {', '.join(MODEL_CATALOG)}, or give the model's config.json as "
                "hfConfig (inline), hfConfigFile (a path, command line) or hfConfigRef (a "
                "ConfigMap, operator), or architecture",
            )
        arch, checkpoint_dtype = entry.architecture, entry.default_dtype
        method = quantization_method(entry.config)
        quant_config = entry.config
        source = f"catalog {entry.key} ({entry.source})"
    named = quantization_from_name(m.name) if m.hf_config is None else None
    if named is not None:
        checkpoint_dtype, method = named
        quant_config = None  # the name's format, not the base model's config
        source += f"; checkpoint pre-quantized to {checkpoint_dtype} ({method}, from its name)"
    dtype = check_loadable(m.weight_dtype, checkpoint_dtype, method)
    params = count_params(arch)
    if params.total > MAX_PARAMS:
        where = "spec.model.architecture" if m.architecture is not None else source
        raise SpecError.single(
            where,
            f"the model has {params.total:.3g} parameters, above the {MAX_PARAMS:.0e} the planner "
            "accepts; check the layer count and widths",
        )
    activation_bytes = 4.0 if dtype == "fp32" else 2.0
    kv_bytes = 1.0 if m.kv_cache_dtype == "fp8" else activation_bytes
    scales = int4_scale_bytes(method, quant_config) if dtype == "int4" else 0.0
    return ResolvedModel(arch, params, dtype, checkpoint_dtype, kv_bytes, source, notes, scales)


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
    """Bytes per stored weight element, what a decode step reads (``BYTES_PER_ELEMENT``)."""
    return BYTES_PER_ELEMENT[dtype]


def resident_bytes_per_param(model: ResolvedModel) -> float:
    """Bytes a weight holds in GPU memory: its element and, for int4, its format's scales and
    zero points (:attr:`ResolvedModel.scale_bytes_per_param`). A decode step's read is costed at
    the element alone: the fitted weight-only efficiency (planning/performance.py) already takes
    the scale loads in. Measured (benchmarks/accuracy, held-out ``a100-quant``, vLLM 0.19):
    Qwen3-32B-AWQ loads 18.14 GiB and a symmetric W4A16 GPTQ 18.03 GiB, where 0.5 B per weight
    gives 17.43 and the scales 18.00 and 17.89."""
    return BYTES_PER_ELEMENT[model.weight_dtype] + model.scale_bytes_per_param
