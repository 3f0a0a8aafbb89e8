"""Derive an :class:`Architecture` from a Hugging Face ``config.json`` (already parsed).

Reads the standard field names (``num_hidden_layers``, ``num_key_value_heads`` …, listed in
``docs/formulas.md``) and the variants real families use:
``text_config`` (multimodal wrappers), Mixtral/Qwen/DeepSeek MoE fields, DeepSeek MLA ranks,
Mistral/Qwen/Gemma sliding windows, and ``quantization_config``. It does no I/O.
"""

import math
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from tokenscale.api.base import MAX_TOKENS
from tokenscale.api.errors import SpecError, SpecIssue, from_validation_error
from tokenscale.api.model import MAX_DIM, Architecture, WeightDtype

_PATH = "spec.model.hfConfig"
_TIED_BY_DEFAULT = ("gemma", "gemma2", "gemma3_text", "qwen2_vl")
_QKV_BIAS_TYPES = ("qwen2", "qwen2_moe", "qwen2_vl")
#: What transformers' config class of a family assumes for a field its config.json may omit
#: (``Gemma3TextConfig``: google/gemma-3-27b-it's ``text_config`` names no vocabulary, context
#: or window pattern). Only fields a published config of that family leaves out.
_FAMILY_DEFAULTS: dict[str, dict[str, int]] = {
    "gemma3_text": {
        "vocab_size": 262_208,
        "max_position_embeddings": 131_072,
        "sliding_window_pattern": 6,
    },
}
#: Fields only hybrid attention/state-space models (Jamba, Nemotron-H, Falcon-H1, Bamba,
#: Granite 4) carry: the planner models attention layers only.
_STATE_SPACE_KEYS = (
    "hybrid_override_pattern",
    "layers_block_type",
    "attn_layer_period",
    "mamba_d_state",
    "ssm_state_size",
    "mamba_n_heads",
)
#: Context assumed when a config names none (``max_position_embeddings`` and its aliases).
DEFAULT_CONTEXT_TOKENS = 8192


def _flatten(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Merge a nested ``text_config`` (multimodal models) over the top level."""
    merged = dict(cfg)
    text = cfg.get("text_config")
    if isinstance(text, Mapping):
        merged.update(text)
    for field, value in _FAMILY_DEFAULTS.get(str(merged.get("model_type", "")), {}).items():
        if merged.get(field) is None:
            merged[field] = value
    return merged


def _first(cfg: Mapping[str, Any], *names: str) -> Any:
    for n in names:
        if cfg.get(n) is not None:
            return cfg[n]
    return None


def _int(value: Any, field: str, *, minimum: int = 0, maximum: int = MAX_DIM) -> int:
    """A whole number from the config: not a bool, a string or a fraction (``4096.0`` passes)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError.single(
            f"{_PATH}.{field}", f"{value!r} is not a number; config.json holds an integer here"
        )
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise SpecError.single(f"{_PATH}.{field}", f"{value!r} is not a whole number")
    if not minimum <= value <= maximum:
        raise SpecError.single(
            f"{_PATH}.{field}", f"{value!r} is out of range; use {minimum}..{maximum}"
        )
    return int(value)


def _opt_bool(cfg: Mapping[str, Any], field: str) -> bool | None:
    """A JSON boolean from the config, or None; ``"false"`` is not false-y enough to guess."""
    value = cfg.get(field)
    if value is None or isinstance(value, bool):
        return value
    raise SpecError.single(f"{_PATH}.{field}", f"{value!r} is not a boolean; use true or false")


def _opt_int(cfg: Mapping[str, Any], field: str, *, minimum: int = 0) -> int | None:
    value = cfg.get(field)
    return None if value is None else _int(value, field, minimum=minimum)


def _sliding_window_layers(cfg: Mapping[str, Any], layers: int) -> tuple[int | None, int | None]:
    raw = cfg.get("sliding_window")
    if not raw or cfg.get("use_sliding_window") is False:
        return None, None
    window = _int(raw, "sliding_window", minimum=1)
    layer_types = cfg.get("layer_types")
    if layer_types is not None:
        if (
            not isinstance(layer_types, list)
            or len(layer_types) != layers
            or not all(isinstance(t, str) for t in layer_types)
        ):
            shape = (
                f"{len(layer_types)} entries"
                if isinstance(layer_types, list)
                else repr(layer_types)
            )
            raise SpecError.single(
                f"{_PATH}.layer_types",
                f"{shape[:60]} for num_hidden_layers={layers}: give one attention type per "
                "layer ('full_attention' or 'sliding_attention'), or leave layer_types out",
            )
        return window, sum(1 for t in layer_types if t == "sliding_attention")
    pattern = cfg.get("sliding_window_pattern")
    if pattern is not None:
        return window, layers - layers // _int(pattern, "sliding_window_pattern", minimum=1)
    if cfg.get("model_type") == "gemma2":
        return window, layers // 2
    max_window_layers = cfg.get("max_window_layers")
    if cfg.get("use_sliding_window") is True and isinstance(max_window_layers, int):
        max_window_layers = _int(max_window_layers, "max_window_layers")
        return window, max(0, layers - max_window_layers)
    return window, layers


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
    layers = _int(required["num_hidden_layers"], "num_hidden_layers", minimum=1)
    model_type = str(c.get("model_type", ""))
    heads = _int(required["num_attention_heads"], "num_attention_heads", minimum=1)
    kv_heads = _first(c, "num_key_value_heads", "num_kv_heads")
    if kv_heads is None and c.get("multi_query"):
        kv_heads = 1
    window, window_layers = _sliding_window_layers(c, layers)
    experts_raw = _first(c, "num_local_experts", "n_routed_experts", "num_experts")
    experts = _int(experts_raw, "num_experts") if experts_raw else None
    per_tok = _opt_int(c, "num_experts_per_tok", minimum=1) if experts else None
    shared = _opt_int(c, "n_shared_experts") or 0
    shared_width = _opt_int(c, "shared_expert_intermediate_size", minimum=1)
    if shared_width and not shared:
        shared = 1
    tied = _opt_bool(c, "tie_word_embeddings")
    bias = _opt_bool(c, "attention_bias")
    mla = bool(c.get("kv_lora_rank"))
    inter = _first(c, "intermediate_size", "ffn_dim", "n_inner")
    expert_inter = _opt_int(c, "moe_intermediate_size", minimum=1)
    dense_layers = (_opt_int(c, "first_k_dense_replace") or 0) if experts else 0
    if model_type == "llama4_text" and experts:
        # Llama 4: every MoE layer adds one shared expert to its routed ones, both
        # ``intermediate_size`` wide; the other layers (all but every ``interleave_moe_layer_step``
        # -th) are dense, ``intermediate_size_mlp`` wide.
        step = _opt_int(c, "interleave_moe_layer_step", minimum=1) or 1
        expert_inter = _int(inter, "intermediate_size", minimum=1) if inter is not None else None
        inter = _first(c, "intermediate_size_mlp", "intermediate_size")
        shared = shared or 1
        dense_layers = layers - layers // step
    context = _first(c, "max_position_embeddings", "max_seq_len", "n_positions", "seq_length")
    if context is not None:
        # Read up to 2^31 (Llama 4 Scout names 10,485,760), sized at most MAX_TOKENS; the
        # plan's warnings say so (hf_config_notes).
        context = min(
            _int(context, "max_position_embeddings", minimum=1, maximum=2**31), MAX_TOKENS
        )
    fields: dict[str, Any] = {
        "layers": layers,
        "hidden_size": _int(required["hidden_size"], "hidden_size", minimum=1),
        "attention_heads": heads,
        "kv_heads": _int(kv_heads, "num_key_value_heads", minimum=1)
        if kv_heads is not None
        else None,
        "head_dim": _opt_int(c, "head_dim", minimum=1),
        "intermediate_size": _int(inter, "intermediate_size", minimum=1)
        if inter is not None
        else None,
        "vocab_size": _int(required["vocab_size"], "vocab_size", minimum=1),
        "max_context_tokens": _int(context, "max_position_embeddings", minimum=1)
        if context
        else DEFAULT_CONTEXT_TOKENS,
        "sliding_window": window,
        "sliding_window_layers": window_layers,
        "tie_word_embeddings": tied if tied is not None else model_type in _TIED_BY_DEFAULT,
        "attention_bias": bias if bias is not None else model_type in _QKV_BIAS_TYPES,
        "experts": experts,
        "experts_per_token": per_tok,
        "expert_intermediate_size": expert_inter,
        "shared_experts": shared,
        "shared_expert_intermediate_size": shared_width,
        "dense_layers": dense_layers,
        "kv_lora_rank": _opt_int(c, "kv_lora_rank", minimum=1),
        "qk_rope_head_dim": _opt_int(c, "qk_rope_head_dim", minimum=1) if mla else None,
        "qk_nope_head_dim": _opt_int(c, "qk_nope_head_dim", minimum=1) if mla else None,
        "v_head_dim": _opt_int(c, "v_head_dim", minimum=1) if mla else None,
        "q_lora_rank": _opt_int(c, "q_lora_rank", minimum=1) if mla else None,
    }
    try:
        return Architecture.model_validate(fields)
    except ValidationError as exc:
        raise from_validation_error(exc, f"{_PATH}(derived architecture)") from exc


_BITS_TO_DTYPE: dict[int, WeightDtype] = {4: "int4", 8: "int8"}
#: Checkpoint formats whose weight bits vLLM reads from ``quantization_config`` itself.
_FP8_METHODS = ("fp8", "fbgemm_fp8", "modelopt")
#: 4-bit element formats with a shared scale per block, read as int4 (the scales are not counted).
_FP4_METHODS = ("mxfp4",)


def _compressed_tensors_dtype(quant: Mapping[str, Any]) -> WeightDtype | None:
    """compressed-tensors keeps the weight format per group: ``config_groups.*.weights``."""
    groups = quant.get("config_groups")
    if not isinstance(groups, Mapping):
        return None
    for group in groups.values():
        weights = group.get("weights") if isinstance(group, Mapping) else None
        if isinstance(weights, Mapping):
            bits, kind = weights.get("num_bits"), str(weights.get("type", "int")).lower()
            if bits == 8 and kind == "float":
                return "fp8"
            if isinstance(bits, int) and not isinstance(bits, bool):
                return _BITS_TO_DTYPE.get(bits)
    return None


def quantization_method(cfg: Mapping[str, Any]) -> str | None:
    """``quantization_config.quant_method`` of a pre-quantized checkpoint (awq, gptq, fp8 …)."""
    quant = _flatten(cfg).get("quantization_config")
    if not isinstance(quant, Mapping):
        return None
    return str(quant.get("quant_method") or "unknown").lower()


#: Bytes a 4-bit weight's quantization parameters add in memory when its format is not known
#: (a checkpoint named ``…-int4``, or ``weightDtype: int4`` with no config): AWQ's and GPTQ's
#: layout, a 16-bit scale and a packed 4-bit zero point per group of 128 weights.
INT4_DEFAULT_SCALE_BYTES = 2.5 / 128


def _group_bytes(group_size: Any, scale_bytes: float, zero_bytes: float) -> float:
    """Per-weight bytes of one scale (and zero point) per ``group_size`` weights; a group size of
    −1 or 0 is one per output channel (negligible: 0)."""
    if isinstance(group_size, bool) or not isinstance(group_size, int | float):
        group_size = 128
    if group_size <= 0:
        return 0.0
    return (scale_bytes + zero_bytes) / float(group_size)


def int4_scale_bytes(method: str | None, cfg: Mapping[str, Any] | None = None) -> float:
    """Bytes per 4-bit weight its format keeps beside it in GPU memory (scales, zero points),
    from the checkpoint's ``quantization_config`` where given, else the method's default:

    - AWQ and GPTQ: a 16-bit scale and a packed 4-bit zero point per ``group_size`` (128)
      weights, 2.5/128 (GPTQ stores the zeros even when symmetric);
    - compressed-tensors W4A16: a 16-bit scale per ``group_size``, and a 4-bit zero point when
      not ``symmetric``; a ``channel`` strategy has one per output row (0);
    - NVFP4 (ModelOpt): an FP8 scale per 16 weights, 1/16; MXFP4: a one-byte exponent per 32,
      1/32;
    - bitsandbytes NF4: an FP32 absmax per 64 weights, 4/64, or with double quantization an
      8-bit one and an FP32 per 256 blocks, 1/64 + 4/16,384;
    - anything else: :data:`INT4_DEFAULT_SCALE_BYTES`.
    """
    quant = _flatten(cfg).get("quantization_config") if cfg is not None else None
    q: Mapping[str, Any] = quant if isinstance(quant, Mapping) else {}
    m = (method or "").lower()
    if m in ("awq", "gptq"):
        size = _first(q, "group_size", "q_group_size")
        return _group_bytes(128 if size is None else size, 2.0, 0.5)
    if m == "compressed-tensors":
        groups = q.get("config_groups")
        for group in groups.values() if isinstance(groups, Mapping) else ():
            w = group.get("weights") if isinstance(group, Mapping) else None
            if isinstance(w, Mapping) and w.get("num_bits") == 4:
                if str(w.get("strategy", "group")).lower() == "channel":
                    return 0.0
                zero = 0.0 if w.get("symmetric", True) else 0.5
                size = w.get("group_size")
                return _group_bytes(128 if size is None else size, 2.0, zero)
        return _group_bytes(128, 2.0, 0.0)
    if m == "mxfp4":
        return 1.0 / 32.0
    if "fp4" in m or m == "modelopt":
        return 1.0 / 16.0
    if m == "bitsandbytes":
        if q.get("bnb_4bit_use_double_quant"):
            return 1.0 / 64.0 + 4.0 / (64.0 * 256.0)
        return 4.0 / 64.0
    return INT4_DEFAULT_SCALE_BYTES


def weight_dtype_from_hf_config(cfg: Mapping[str, Any]) -> WeightDtype | None:
    """The checkpoint's stored precision: ``quantization_config`` first, then ``torch_dtype``.

    None when the config does not say (or names a quantization whose width is not known here).
    """
    c = _flatten(cfg)
    quant = c.get("quantization_config")
    if quant is not None and not isinstance(quant, Mapping):
        raise SpecError.single(
            f"{_PATH}.quantization_config",
            f"{quant!r:.60} is not a mapping; config.json holds one here (quant_method, bits …), "
            "or leave it out for an unquantized checkpoint",
        )
    if isinstance(quant, Mapping):
        method = str(quant.get("quant_method", "")).lower()
        if method in _FP8_METHODS or "fp8" in str(quant.get("fmt", "")).lower():
            return "fp8"
        if method in _FP4_METHODS:
            return "int4"
        if method == "compressed-tensors":
            return _compressed_tensors_dtype(quant)
        if method == "bitsandbytes":
            return "int4" if quant.get("load_in_4bit") else "int8"
        bits = quant.get("bits") or quant.get("w_bit") or quant.get("num_bits")
        if bits in (4, "4"):
            return "int4"
        if bits in (8, "8"):
            return "int8"
        return None
    dtype = str(_first(c, "torch_dtype", "dtype") or "").lower()
    return {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(dtype)  # type: ignore[return-value]


def hf_config_notes(cfg: Mapping[str, Any]) -> list[str]:
    """What the derived architecture assumes where the config is silent or out of range.

    One sentence per assumption, for the plan's warnings: family defaults filled in, MHA for
    a config without ``num_key_value_heads``, the context assumed or capped, layers that are not
    attention (linear attention, Mamba) counted as attention, MXFP4 read as int4.
    """
    given = dict(cfg)
    text = cfg.get("text_config")
    if isinstance(text, Mapping):
        given.update(text)
    c = _flatten(cfg)
    model_type = str(c.get("model_type", ""))
    notes: list[str] = []
    filled = [
        f"{field} {value:,}"
        for field, value in _FAMILY_DEFAULTS.get(model_type, {}).items()
        if given.get(field) is None
    ]
    if filled:
        notes.append(
            f"spec.model.hfConfig names no {', '.join(f.split()[0] for f in filled)}: "
            f"{model_type}'s defaults in transformers are assumed ({', '.join(filled)})"
        )
    kv_absent = _first(c, "num_key_value_heads", "num_kv_heads") is None
    if kv_absent and not c.get("multi_query") and not c.get("kv_lora_rank"):
        notes.append(
            "spec.model.hfConfig names no num_key_value_heads: every attention head is assumed "
            "to keep its own KV (multi-head attention, the most KV per token); give it if the "
            "model uses grouped-query attention"
        )
    context = _first(c, "max_position_embeddings", "max_seq_len", "n_positions", "seq_length")
    if not context:
        notes.append(
            "spec.model.hfConfig names no max_position_embeddings: a "
            f"{DEFAULT_CONTEXT_TOKENS:,}-token context is assumed; give it (or "
            "spec.workload.maxContextTokens) if the model reads longer prompts"
        )
    elif isinstance(context, int | float) and context > MAX_TOKENS:
        notes.append(
            f"spec.model.hfConfig.max_position_embeddings {context:,} is read as {MAX_TOKENS:,} "
            "tokens, the longest context the planner sizes"
        )
    layer_types = c.get("layer_types")
    if isinstance(layer_types, list):
        other = sorted({str(t) for t in layer_types} - {"full_attention", "sliding_attention"})
        if other:
            notes.append(
                f"spec.model.hfConfig.layer_types names {', '.join(other)} layers: they are "
                "counted as full-attention layers, so the KV per token and the parameters are "
                "not this model's (KV over-stated); give spec.model.architecture to correct them"
            )
    ssm = [key for key in _STATE_SPACE_KEYS if c.get(key) is not None]
    if ssm:
        notes.append(
            f"spec.model.hfConfig has state-space (Mamba) layers ({ssm[0]}): every layer is "
            "counted as an attention layer with an MLP, so the KV per token and the parameters "
            "are not this model's (KV over-stated); give spec.model.architecture to correct them"
        )
    if quantization_method(cfg) in _FP4_METHODS:
        notes.append(
            "MXFP4 weights are counted as int4 (0.5 byte per weight and its block's scale, 1/32 "
            "byte; embeddings and LM head at 16 bits): any layers the checkpoint keeps at 16 bits "
            "(gpt-oss: attention) are not counted"
        )
    return notes
