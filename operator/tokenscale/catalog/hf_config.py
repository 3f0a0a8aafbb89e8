"""Derive an :class:`Architecture` from a Hugging Face ``config.json`` (already parsed).

Reads the standard field names (``num_hidden_layers``, ``num_key_value_heads`` …, see
``shared/reference/hardware-and-models.md``) and the variants real families use:
``text_config`` (multimodal wrappers), Mixtral/Qwen/DeepSeek MoE fields, DeepSeek MLA ranks,
Mistral/Qwen/Gemma sliding windows, and ``quantization_config``. It does no I/O.
"""

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from tokenscale.api.errors import SpecError, SpecIssue, from_validation_error
from tokenscale.api.model import Architecture, WeightDtype

_PATH = "spec.model.hfConfig"
_TIED_BY_DEFAULT = ("gemma", "gemma2", "gemma3_text", "qwen2_vl")
_QKV_BIAS_TYPES = ("qwen2", "qwen2_moe", "qwen2_vl")


def _flatten(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Merge a nested ``text_config`` (multimodal models) over the top level."""
    merged = dict(cfg)
    text = cfg.get("text_config")
    if isinstance(text, Mapping):
        merged.update(text)
    return merged


def _first(cfg: Mapping[str, Any], *names: str) -> Any:
    for n in names:
        if cfg.get(n) is not None:
            return cfg[n]
    return None


def _sliding_window_layers(cfg: Mapping[str, Any], layers: int) -> tuple[int | None, int | None]:
    window = cfg.get("sliding_window")
    if not window or cfg.get("use_sliding_window") is False:
        return None, None
    layer_types = cfg.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        return int(window), sum(1 for t in layer_types if t == "sliding_attention")
    pattern = cfg.get("sliding_window_pattern")
    if isinstance(pattern, int) and pattern > 0:
        return int(window), layers - layers // pattern
    if cfg.get("model_type") == "gemma2":
        return int(window), layers // 2
    max_window_layers = cfg.get("max_window_layers")
    if cfg.get("use_sliding_window") is True and isinstance(max_window_layers, int):
        return int(window), max(0, layers - max_window_layers)
    return int(window), layers


def architecture_from_hf_config(cfg: Mapping[str, Any]) -> Architecture:
    """Build the architecture; raise :class:`SpecError` naming the missing/odd config field."""
    c = _flatten(cfg)
    required = {
        "num_hidden_layers": _first(c, "num_hidden_layers", "n_layer", "num_layers"),
        "hidden_size": _first(c, "hidden_size", "n_embd", "d_model"),
        "num_attention_heads": _first(c, "num_attention_heads", "n_head"),
        "vocab_size": c.get("vocab_size"),
    }
    missing = [k for k, v in required.items() if v is None]
    if missing:
        raise SpecError(
            [SpecIssue(f"{_PATH}.{k}", "is required to derive the architecture") for k in missing]
        )
    layers = int(required["num_hidden_layers"])
    heads = int(required["num_attention_heads"])
    kv_heads = _first(c, "num_key_value_heads", "num_kv_heads")
    if kv_heads is None and c.get("multi_query"):
        kv_heads = 1
    window, window_layers = _sliding_window_layers(c, layers)
    experts = _first(c, "num_local_experts", "n_routed_experts", "num_experts")
    per_tok = c.get("num_experts_per_tok") if experts else None
    moe_width = c.get("moe_intermediate_size")
    shared = int(c.get("n_shared_experts") or 0)
    shared_width = c.get("shared_expert_intermediate_size")
    if shared_width and not shared:
        shared = 1
    model_type = str(c.get("model_type", ""))
    tied = c.get("tie_word_embeddings")
    bias = c.get("attention_bias")
    fields: dict[str, Any] = {
        "layers": layers,
        "hidden_size": int(required["hidden_size"]),
        "attention_heads": heads,
        "kv_heads": int(kv_heads) if kv_heads is not None else None,
        "head_dim": c.get("head_dim"),
        "intermediate_size": _first(c, "intermediate_size", "ffn_dim", "n_inner"),
        "vocab_size": int(required["vocab_size"]),
        "max_context_tokens": int(
            _first(c, "max_position_embeddings", "max_seq_len", "n_positions", "seq_length") or 8192
        ),
        "sliding_window": window,
        "sliding_window_layers": window_layers,
        "tie_word_embeddings": bool(tied) if tied is not None else model_type in _TIED_BY_DEFAULT,
        "attention_bias": bool(bias) if bias is not None else model_type in _QKV_BIAS_TYPES,
        "experts": int(experts) if experts else None,
        "experts_per_token": int(per_tok) if per_tok else None,
        "expert_intermediate_size": moe_width,
        "shared_experts": shared,
        "shared_expert_intermediate_size": shared_width,
        "dense_layers": int(c.get("first_k_dense_replace") or 0) if experts else 0,
        "kv_lora_rank": c.get("kv_lora_rank"),
        "qk_rope_head_dim": c.get("qk_rope_head_dim") if c.get("kv_lora_rank") else None,
        "qk_nope_head_dim": c.get("qk_nope_head_dim") if c.get("kv_lora_rank") else None,
        "v_head_dim": c.get("v_head_dim") if c.get("kv_lora_rank") else None,
        "q_lora_rank": c.get("q_lora_rank") if c.get("kv_lora_rank") else None,
    }
    try:
        return Architecture.model_validate(fields)
    except ValidationError as exc:
        raise from_validation_error(exc, f"{_PATH}(derived architecture)") from exc


def weight_dtype_from_hf_config(cfg: Mapping[str, Any]) -> WeightDtype | None:
    """The checkpoint's stored precision: ``quantization_config`` first, then ``torch_dtype``."""
    c = _flatten(cfg)
    quant = c.get("quantization_config")
    if isinstance(quant, Mapping):
        method = str(quant.get("quant_method", "")).lower()
        bits = quant.get("bits") or quant.get("w_bit") or quant.get("num_bits")
        if method in ("fp8", "fbgemm_fp8") or "fp8" in str(quant.get("fmt", "")).lower():
            return "fp8"
        if bits in (4, "4"):
            return "int4"
        if bits in (8, "8"):
            return "int8"
    dtype = str(_first(c, "torch_dtype", "dtype") or "").lower()
    return {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(dtype)  # type: ignore[return-value]
