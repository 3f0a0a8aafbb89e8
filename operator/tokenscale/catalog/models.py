"""Built-in model catalog: the architecture fields of each model's published ``config.json``.

Entries go through the same loader as a user's ``hfConfig`` so one code path is tested against
the published parameter counts (``published_params``, from each model card).
"""

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from tokenscale.api.model import Architecture, WeightDtype
from tokenscale.catalog.hf_config import architecture_from_hf_config


@dataclass(frozen=True)
class ModelEntry:
    """A catalog model: its config fields, names it is known by, and published counts."""

    key: str
    config: dict[str, Any]
    source: str
    published_params: float
    published_active_params: float | None = None
    aliases: tuple[str, ...] = field(default=())
    default_dtype: WeightDtype = "bf16"

    @cached_property
    def architecture(self) -> Architecture:
        return architecture_from_hf_config(self.config)


def _llama(
    layers: int,
    hidden: int,
    heads: int,
    kv: int,
    inter: int,
    vocab: int,
    ctx: int,
    *,
    tied: bool = False,
    head_dim: int | None = None,
) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "model_type": "llama",
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "intermediate_size": inter,
        "vocab_size": vocab,
        "max_position_embeddings": ctx,
        "tie_word_embeddings": tied,
        "torch_dtype": "bfloat16",
    }
    if head_dim is not None:
        cfg["head_dim"] = head_dim
    return cfg


def _qwen2(layers: int, hidden: int, heads: int, kv: int, inter: int) -> dict[str, Any]:
    """Qwen2.5 dense (QKV bias, 32k context, the 128k sliding window switched off)."""
    return {
        "model_type": "qwen2",
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "intermediate_size": inter,
        "vocab_size": 152064,
        "max_position_embeddings": 32768,
        "sliding_window": 131072,
        "use_sliding_window": False,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }


def _qwen3(
    layers: int, hidden: int, heads: int, kv: int, inter: int, *, tied: bool = False
) -> dict[str, Any]:
    """Qwen3 dense: head_dim 128 set apart from hidden/heads, QK-norm, no QKV bias, 40k context."""
    return {
        "model_type": "qwen3",
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": 128,
        "intermediate_size": inter,
        "vocab_size": 151936,
        "max_position_embeddings": 40960,
        "sliding_window": None,
        "use_sliding_window": False,
        "tie_word_embeddings": tied,
        "torch_dtype": "bfloat16",
    }


def _qwen3_moe(layers: int, hidden: int, heads: int, kv: int, expert_inter: int) -> dict[str, Any]:
    """Qwen3 MoE: 128 routed experts, 8 per token, no shared expert, every layer sparse."""
    return _qwen3(layers, hidden, heads, kv, expert_inter * 8) | {
        "model_type": "qwen3_moe",
        "moe_intermediate_size": expert_inter,
        "num_experts": 128,
        "num_experts_per_tok": 8,
    }


def _phi3(
    layers: int, hidden: int, heads: int, kv: int, inter: int, vocab: int, ctx: int
) -> dict[str, Any]:
    return {
        "model_type": "phi3",
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "intermediate_size": inter,
        "vocab_size": vocab,
        "max_position_embeddings": ctx,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }


def _gemma2(
    layers: int, hidden: int, heads: int, kv: int, head_dim: int, inter: int
) -> dict[str, Any]:
    """Gemma 2: sliding-window (4,096) and global layers alternate; tied embeddings."""
    return {
        "model_type": "gemma2",
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": head_dim,
        "intermediate_size": inter,
        "vocab_size": 256000,
        "max_position_embeddings": 8192,
        "sliding_window": 4096,
        "torch_dtype": "bfloat16",
    }


_HF = "config.json of {} on the Hugging Face Hub; parameter count from its model card"
_LLM_PROF = (
    "config.json of {} on the Hugging Face Hub (as mirrored in citsjtu2020/LLM-Prof, "
    "sglang/Model_Config.md); parameter count from its model card"
)

MODEL_CATALOG: dict[str, ModelEntry] = {
    e.key: e
    for e in (
        ModelEntry(
            "llama-2-7b",
            _llama(32, 4096, 32, 32, 11008, 32000, 4096) | {"torch_dtype": "float16"},
            _HF.format("meta-llama/Llama-2-7b-hf"),
            6.74e9,
            aliases=("meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-7b-chat-hf"),
            default_dtype="fp16",
        ),
        ModelEntry(
            "llama-3.2-1b",
            _llama(16, 2048, 32, 8, 8192, 128256, 131072, tied=True, head_dim=64),
            _HF.format("meta-llama/Llama-3.2-1B"),
            1.24e9,
            aliases=("meta-llama/Llama-3.2-1B", "meta-llama/Llama-3.2-1B-Instruct"),
        ),
        ModelEntry(
            "llama-3.1-8b",
            _llama(32, 4096, 32, 8, 14336, 128256, 131072),
            _HF.format("meta-llama/Llama-3.1-8B"),
            8.03e9,
            aliases=(
                "meta-llama/Llama-3.1-8B",
                "meta-llama/Llama-3.1-8B-Instruct",
                "meta-llama/Meta-Llama-3.1-8B-Instruct",
            ),
        ),
        ModelEntry(
            "llama-3.1-70b",
            _llama(80, 8192, 64, 8, 28672, 128256, 131072),
            _HF.format("meta-llama/Llama-3.1-70B"),
            70.6e9,
            aliases=(
                "meta-llama/Llama-3.1-70B",
                "meta-llama/Llama-3.1-70B-Instruct",
                "meta-llama/Meta-Llama-3.1-70B-Instruct",
                "meta-llama/Llama-3.3-70B-Instruct",
            ),
        ),
        ModelEntry(
            "llama-3.1-405b",
            _llama(126, 16384, 128, 8, 53248, 128256, 131072),
            _HF.format("meta-llama/Llama-3.1-405B"),
            405.9e9,
            aliases=("meta-llama/Llama-3.1-405B", "meta-llama/Llama-3.1-405B-Instruct"),
        ),
        ModelEntry(
            "qwen2.5-7b",
            _qwen2(28, 3584, 28, 4, 18944),
            _HF.format("Qwen/Qwen2.5-7B-Instruct"),
            7.62e9,
            aliases=("Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-7B-Instruct"),
        ),
        ModelEntry(
            "qwen2.5-72b",
            _qwen2(80, 8192, 64, 8, 29568),
            _HF.format("Qwen/Qwen2.5-72B-Instruct"),
            72.7e9,
            aliases=("Qwen/Qwen2.5-72B", "Qwen/Qwen2.5-72B-Instruct"),
        ),
        ModelEntry(
            "mistral-7b-v0.1",
            {
                "model_type": "mistral",
                "num_hidden_layers": 32,
                "hidden_size": 4096,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "intermediate_size": 14336,
                "vocab_size": 32000,
                "max_position_embeddings": 32768,
                "sliding_window": 4096,
                "tie_word_embeddings": False,
                "torch_dtype": "bfloat16",
            },
            _HF.format("mistralai/Mistral-7B-v0.1"),
            7.24e9,
            aliases=("mistralai/Mistral-7B-v0.1", "mistralai/Mistral-7B-Instruct-v0.1"),
        ),
        ModelEntry(
            "mixtral-8x7b",
            {
                "model_type": "mixtral",
                "num_hidden_layers": 32,
                "hidden_size": 4096,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "intermediate_size": 14336,
                "vocab_size": 32000,
                "max_position_embeddings": 32768,
                "num_local_experts": 8,
                "num_experts_per_tok": 2,
                "tie_word_embeddings": False,
                "torch_dtype": "bfloat16",
            },
            _HF.format("mistralai/Mixtral-8x7B-v0.1"),
            46.7e9,
            published_active_params=12.9e9,
            aliases=("mistralai/Mixtral-8x7B-v0.1", "mistralai/Mixtral-8x7B-Instruct-v0.1"),
        ),
        ModelEntry(
            "deepseek-v3",
            {
                "model_type": "deepseek_v3",
                "num_hidden_layers": 61,
                "hidden_size": 7168,
                "num_attention_heads": 128,
                "num_key_value_heads": 128,
                "intermediate_size": 18432,
                "moe_intermediate_size": 2048,
                "vocab_size": 129280,
                "max_position_embeddings": 163840,
                "n_routed_experts": 256,
                "n_shared_experts": 1,
                "num_experts_per_tok": 8,
                "first_k_dense_replace": 3,
                "kv_lora_rank": 512,
                "q_lora_rank": 1536,
                "qk_rope_head_dim": 64,
                "qk_nope_head_dim": 128,
                "v_head_dim": 128,
                "tie_word_embeddings": False,
                "torch_dtype": "bfloat16",
                "quantization_config": {"quant_method": "fp8", "fmt": "e4m3"},
            },
            _HF.format("deepseek-ai/DeepSeek-V3") + " (671B main model, MTP module excluded)",
            671e9,
            published_active_params=37e9,
            aliases=(
                "deepseek-ai/DeepSeek-V3",
                "deepseek-ai/DeepSeek-V3-0324",
                "deepseek-ai/DeepSeek-R1",
            ),
            default_dtype="fp8",
        ),
        ModelEntry(
            "kimi-k2",
            {
                "model_type": "kimi_k2",
                "num_hidden_layers": 61,
                "hidden_size": 7168,
                "num_attention_heads": 64,
                "num_key_value_heads": 64,
                "intermediate_size": 18432,
                "moe_intermediate_size": 2048,
                "vocab_size": 163840,
                "max_position_embeddings": 131072,
                "n_routed_experts": 384,
                "n_shared_experts": 1,
                "num_experts_per_tok": 8,
                "first_k_dense_replace": 1,
                "kv_lora_rank": 512,
                "q_lora_rank": 1536,
                "qk_rope_head_dim": 64,
                "qk_nope_head_dim": 128,
                "v_head_dim": 128,
                "tie_word_embeddings": False,
                "torch_dtype": "bfloat16",
                "quantization_config": {"quant_method": "fp8", "fmt": "e4m3"},
            },
            "config.json of moonshotai/Kimi-K2-Instruct on the Hugging Face Hub; parameter count "
            "from the Kimi K2 technical report (arXiv 2507.20534): '1.04 trillion total "
            "parameters with 32 billion activated parameters' (the shapes give 32.9 B active "
            "counting the input embedding)",
            1.04e12,
            aliases=("moonshotai/Kimi-K2-Instruct", "moonshotai/Kimi-K2-Base"),
            default_dtype="fp8",
        ),
        ModelEntry(
            "llama-3.2-3b",
            _llama(28, 3072, 24, 8, 8192, 128256, 131072, tied=True, head_dim=128),
            _LLM_PROF.format("meta-llama/Llama-3.2-3B"),
            3.21e9,
            aliases=("meta-llama/Llama-3.2-3B", "meta-llama/Llama-3.2-3B-Instruct"),
        ),
        ModelEntry(
            "qwen2.5-14b",
            _qwen2(48, 5120, 40, 8, 13824),
            _LLM_PROF.format("Qwen/Qwen2.5-14B")
            + "; context 32,768 as the Instruct config.json sets it (131,072 with YaRN)",
            14.7e9,
            aliases=("Qwen/Qwen2.5-14B", "Qwen/Qwen2.5-14B-Instruct"),
        ),
        ModelEntry(
            "qwen2.5-32b",
            _qwen2(64, 5120, 40, 8, 27648),
            _LLM_PROF.format("Qwen/Qwen2.5-32B")
            + "; context 32,768 as the Instruct config.json sets it (131,072 with YaRN)",
            32.5e9,
            aliases=("Qwen/Qwen2.5-32B", "Qwen/Qwen2.5-32B-Instruct"),
        ),
        ModelEntry(
            "qwen3-8b",
            _qwen3(36, 4096, 32, 8, 12288),
            _LLM_PROF.format("Qwen/Qwen3-8B"),
            8.2e9,
            aliases=("Qwen/Qwen3-8B", "Qwen/Qwen3-8B-Base"),
        ),
        ModelEntry(
            "qwen3-14b",
            _qwen3(40, 5120, 40, 8, 17408),
            _LLM_PROF.format("Qwen/Qwen3-14B"),
            14.8e9,
            aliases=("Qwen/Qwen3-14B", "Qwen/Qwen3-14B-Base"),
        ),
        ModelEntry(
            "qwen3-32b",
            _qwen3(64, 5120, 64, 8, 25600),
            _LLM_PROF.format("Qwen/Qwen3-32B"),
            32.8e9,
            aliases=("Qwen/Qwen3-32B",),
        ),
        ModelEntry(
            "qwen3-30b-a3b",
            _qwen3_moe(48, 2048, 32, 4, 768),
            _LLM_PROF.format("Qwen/Qwen3-30B-A3B")
            + "; its model card's '3.3B activated' is not checked: the shapes give 3.35 B "
            "counting both embeddings",
            30.5e9,
            aliases=("Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B-Base"),
        ),
        ModelEntry(
            "qwen3-235b-a22b",
            _qwen3_moe(94, 4096, 64, 4, 1536),
            "config.json of Qwen/Qwen3-235B-A22B on the Hugging Face Hub (shapes as in "
            "zyzshishui/slime, scripts/models/qwen3-235B-A22B.sh); parameter count from its "
            "model card",
            235e9,
            published_active_params=22e9,
            aliases=("Qwen/Qwen3-235B-A22B",),
        ),
        ModelEntry(
            "mistral-7b-v0.3",
            {
                "model_type": "mistral",
                "num_hidden_layers": 32,
                "hidden_size": 4096,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "intermediate_size": 14336,
                "vocab_size": 32768,
                "max_position_embeddings": 32768,
                "sliding_window": None,
                "tie_word_embeddings": False,
                "torch_dtype": "bfloat16",
            },
            _HF.format("mistralai/Mistral-7B-v0.3")
            + " (v0.2/v0.3: 32k context, no sliding window; v0.3 extends the vocabulary to "
            "32,768)",
            7.25e9,
            aliases=("mistralai/Mistral-7B-v0.3", "mistralai/Mistral-7B-Instruct-v0.3"),
        ),
        ModelEntry(
            "mistral-small-24b",
            {
                "model_type": "mistral",
                "num_hidden_layers": 40,
                "hidden_size": 5120,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "head_dim": 128,
                "intermediate_size": 32768,
                "vocab_size": 131072,
                "max_position_embeddings": 32768,
                "sliding_window": None,
                "tie_word_embeddings": False,
                "torch_dtype": "bfloat16",
            },
            _HF.format("mistralai/Mistral-Small-24B-Instruct-2501"),
            23.6e9,
            aliases=(
                "mistralai/Mistral-Small-24B-Instruct-2501",
                "mistralai/Mistral-Small-24B-Base-2501",
            ),
        ),
        ModelEntry(
            "gemma-2-9b",
            _gemma2(42, 3584, 16, 8, 256, 14336),
            "config.json of google/gemma-2-9b on the Hugging Face Hub (as in "
            "AI-Hypercomputer/maxtext, MaxText/utils/ckpt_conversion/utils/hf_model_configs.py); "
            "parameter count from its model card",
            9.24e9,
            aliases=("google/gemma-2-9b", "google/gemma-2-9b-it"),
        ),
        ModelEntry(
            "gemma-2-27b",
            _gemma2(46, 4608, 32, 16, 128, 36864),
            "config.json of google/gemma-2-27b on the Hugging Face Hub (as in "
            "AI-Hypercomputer/maxtext, MaxText/utils/ckpt_conversion/utils/hf_model_configs.py); "
            "parameter count from its model card",
            27.2e9,
            aliases=("google/gemma-2-27b", "google/gemma-2-27b-it"),
        ),
        ModelEntry(
            "gemma-3-27b",
            {
                "model_type": "gemma3_text",
                "num_hidden_layers": 62,
                "hidden_size": 5376,
                "num_attention_heads": 32,
                "num_key_value_heads": 16,
                "head_dim": 128,
                "intermediate_size": 21504,
                "vocab_size": 262208,
                "max_position_embeddings": 131072,
                "sliding_window": 1024,
                "sliding_window_pattern": 6,
                "torch_dtype": "bfloat16",
            },
            "text_config of google/gemma-3-27b-it's config.json on the Hugging Face Hub (five "
            "1,024-token sliding-window layers per global one); parameter count from the Gemma 3 "
            "Technical Report (arXiv 2503.19786), Table 1: 1,416 M embedding + 25,600 M "
            "non-embedding parameters, the 417 M vision encoder excluded",
            27.016e9,
            aliases=("google/gemma-3-27b-it", "google/gemma-3-27b-pt"),
        ),
        ModelEntry(
            "phi-3-mini-4k",
            _phi3(32, 3072, 32, 32, 8192, 32064, 4096) | {"sliding_window": 2047},
            _HF.format("microsoft/Phi-3-mini-4k-instruct")
            + "; parameter count 3,821,079,552 as keras-team/keras-hub phi3_presets.py states it",
            3.821e9,
            aliases=("microsoft/Phi-3-mini-4k-instruct",),
        ),
        ModelEntry(
            "phi-3-medium-4k",
            _phi3(40, 5120, 40, 10, 17920, 32064, 4096) | {"sliding_window": 2047},
            _HF.format("microsoft/Phi-3-medium-4k-instruct"),
            14.0e9,
            aliases=("microsoft/Phi-3-medium-4k-instruct",),
        ),
        ModelEntry(
            "phi-4",
            _phi3(40, 5120, 40, 10, 17920, 100352, 16384),
            _HF.format("microsoft/phi-4"),
            14.7e9,
            aliases=("microsoft/phi-4",),
        ),
    )
}


#: Markers in a checkpoint's name (its HF repo id) that say how it is pre-quantized, checked in
#: order (``W8A8-FP8`` is FP8, not INT8): the marker, the stored width, the method's name.
_NAME_MARKERS: tuple[tuple[str, WeightDtype, str], ...] = (
    ("fp8", "fp8", "fp8"),
    ("awq", "int4", "awq"),
    ("gptq-int8", "int8", "gptq"),
    ("gptq", "int4", "gptq"),
    ("w4a16", "int4", "compressed-tensors"),
    ("nvfp4", "int4", "modelopt fp4"),
    ("mxfp4", "int4", "mxfp4"),
    ("int4", "int4", "int4"),
    ("4bit", "int4", "bitsandbytes"),
    ("w8a8", "int8", "compressed-tensors"),
    ("w8a16", "int8", "compressed-tensors"),
    ("int8", "int8", "int8"),
    ("8bit", "int8", "bitsandbytes"),
)


def quantization_from_name(name: str) -> tuple[WeightDtype, str] | None:
    """The stored width and method a checkpoint's name declares (``…-AWQ-INT4`` → int4, awq),
    or None. Markers count only as whole ``-``/``_``/``.``/``/``-separated words."""
    words = "-" + re.sub(r"[_./]", "-", name.lower()) + "-"
    for marker, dtype, method in _NAME_MARKERS:
        if f"-{marker}-" in words:
            return dtype, method
    return None


def find_model(name: str) -> ModelEntry | None:
    """Look a model up by catalog key or by any HF repo id alias (case-insensitive)."""
    lowered = name.lower()
    for entry in MODEL_CATALOG.values():
        if lowered == entry.key or lowered in (a.lower() for a in entry.aliases):
            return entry
    return None
