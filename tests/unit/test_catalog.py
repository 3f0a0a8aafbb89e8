"""Catalogs and the HF config.json loader: shapes, parameter counts, attention variants."""

import json

import pytest

from tests.helpers import HF_CONFIGS
from tokenscale.api.errors import SpecError
from tokenscale.catalog import (
    GPU_CATALOG,
    MODEL_CATALOG,
    architecture_from_hf_config,
    count_params,
    weight_dtype_from_hf_config,
)
from tokenscale.planning.memory import kv_geometry

# (config file, published total params, published active params) — from the model cards.
PUBLISHED = [
    ("Llama-3.1-8B-Instruct", 8.03e9, None),
    ("Llama-3.1-70B-Instruct", 70.6e9, None),
    ("Qwen2.5-7B-Instruct", 7.61e9, None),
    ("Qwen2.5-72B-Instruct", 72.7e9, None),
    ("Mixtral-8x7B-v0.1", 46.7e9, 12.9e9),
    ("Mistral-7B-v0.1", 7.24e9, None),
    ("DeepSeek-V3", 671e9, 37e9),
]


def _load(name: str) -> dict[str, object]:
    return json.loads((HF_CONFIGS / f"{name}.json").read_text())


@pytest.mark.parametrize(("name", "total", "active"), PUBLISHED)
def test_parameter_count_within_1_5_percent(name: str, total: float, active: float | None) -> None:
    counted = count_params(architecture_from_hf_config(_load(name)))
    assert counted.total == pytest.approx(total, rel=0.015)
    if active is not None:
        assert counted.active == pytest.approx(active, rel=0.015)
        assert counted.active < counted.total
    else:
        assert counted.active == counted.total


@pytest.mark.parametrize("key", list(MODEL_CATALOG))
def test_every_catalog_model_matches_its_published_count(key: str) -> None:
    entry = MODEL_CATALOG[key]
    counted = count_params(entry.architecture)
    assert counted.total == pytest.approx(entry.published_params, rel=0.015)
    if entry.published_active_params:
        assert counted.active == pytest.approx(entry.published_active_params, rel=0.016)
    assert entry.source


def test_every_gpu_cites_a_source_and_has_sane_figures() -> None:
    for key, entry in GPU_CATALOG.items():
        assert entry.source, key
        s = entry.spec
        assert 16 <= s.memory_gib <= 300
        assert s.fp8_tflops is None or s.fp8_tflops > s.bf16_tflops


def test_gqa_kv_heads_read_and_mha_default() -> None:
    llama = architecture_from_hf_config(_load("Llama-3.1-8B-Instruct"))
    assert (llama.effective_kv_heads, llama.effective_head_dim) == (8, 128)
    cfg = _load("Llama-3.1-8B-Instruct")
    del cfg["num_key_value_heads"]
    mha = architecture_from_hf_config(cfg)
    assert mha.effective_kv_heads == 32
    assert kv_geometry(mha, 2, 1).bytes_per_token == 4 * kv_geometry(llama, 2, 1).bytes_per_token


def test_mqa_multi_query_flag() -> None:
    cfg = {
        "model_type": "falcon",
        "num_hidden_layers": 32,
        "hidden_size": 4544,
        "num_attention_heads": 71,
        "multi_query": True,
        "vocab_size": 65024,
        "intermediate_size": 18176,
    }
    arch = architecture_from_hf_config(cfg)
    assert arch.effective_kv_heads == 1
    assert kv_geometry(arch, 2, 1).bytes_per_token == 2 * 32 * 1 * 64 * 2


def test_mla_caches_one_latent_replicated_on_every_rank() -> None:
    arch = architecture_from_hf_config(_load("DeepSeek-V3"))
    assert arch.is_mla
    assert arch.is_moe
    geo1, geo8 = kv_geometry(arch, 2, 1), kv_geometry(arch, 2, 8)
    assert geo1.bytes_per_token == 61 * (512 + 64) * 2
    assert geo8.bytes_per_token_per_rank == geo1.bytes_per_token  # replicated, not split
    assert weight_dtype_from_hf_config(_load("DeepSeek-V3")) == "fp8"


def test_gqa_kv_splits_over_ranks_then_replicates() -> None:
    arch = architecture_from_hf_config(_load("Llama-3.1-70B-Instruct"))  # 8 KV heads
    whole = kv_geometry(arch, 2, 1).bytes_per_token
    assert kv_geometry(arch, 2, 4).bytes_per_token_per_rank == whole / 4
    assert kv_geometry(arch, 2, 8).bytes_per_token_per_rank == whole / 8
    qwen7 = architecture_from_hf_config(_load("Qwen2.5-7B-Instruct"))  # 4 KV heads
    assert kv_geometry(qwen7, 2, 8).bytes_per_token_per_rank == (
        kv_geometry(qwen7, 2, 1).bytes_per_token / 4
    )


def test_sliding_window_caps_kv_and_disabled_window_is_ignored() -> None:
    mistral = architecture_from_hf_config(_load("Mistral-7B-v0.1"))
    geo = kv_geometry(mistral, 2, 1)
    assert geo.tokens_held(2_000) == 2_000
    assert geo.tokens_held(20_000) == 4_096
    qwen = architecture_from_hf_config(_load("Qwen2.5-7B-Instruct"))
    assert qwen.sliding_window is None  # use_sliding_window: false


def test_alternating_sliding_window_layers() -> None:
    cfg = {
        "model_type": "gemma2",
        "num_hidden_layers": 42,
        "hidden_size": 3584,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 256,
        "intermediate_size": 14336,
        "vocab_size": 256000,
        "sliding_window": 4096,
    }
    arch = architecture_from_hf_config(cfg)
    assert arch.sliding_window_layers == 21
    assert arch.tie_word_embeddings  # Gemma ties its embeddings by default
    geo = kv_geometry(arch, 2, 1)
    assert geo.tokens_held(8192) == pytest.approx((21 * 8192 + 21 * 4096) / 42)


def test_layer_types_list_counts_windowed_layers() -> None:
    cfg = {
        "num_hidden_layers": 4,
        "hidden_size": 256,
        "num_attention_heads": 4,
        "vocab_size": 1000,
        "intermediate_size": 512,
        "sliding_window": 128,
        "layer_types": [
            "sliding_attention",
            "full_attention",
            "sliding_attention",
            "full_attention",
        ],
    }
    assert architecture_from_hf_config(cfg).sliding_window_layers == 2


def test_text_config_of_a_multimodal_wrapper() -> None:
    inner = _load("Llama-3.1-8B-Instruct")
    arch = architecture_from_hf_config({"model_type": "llava", "text_config": inner})
    assert arch.layers == 32


def test_tied_embeddings_change_the_count() -> None:
    cfg = _load("Llama-3.1-8B-Instruct")
    untied = count_params(architecture_from_hf_config(cfg))
    tied = count_params(architecture_from_hf_config({**cfg, "tie_word_embeddings": True}))
    assert untied.total - tied.total == 128256 * 4096


def test_quantization_config_sets_the_weight_dtype() -> None:
    base = _load("Llama-3.1-8B-Instruct")
    assert weight_dtype_from_hf_config(base) == "bf16"
    awq = {**base, "quantization_config": {"quant_method": "awq", "bits": 4}}
    assert weight_dtype_from_hf_config(awq) == "int4"


def test_missing_config_fields_are_named() -> None:
    with pytest.raises(SpecError) as exc:
        architecture_from_hf_config({"hidden_size": 4096})
    assert "spec.model.hfConfig.num_hidden_layers" in exc.value.paths
    assert "spec.model.hfConfig.num_attention_heads" in exc.value.paths


def test_rdma_gpus_carry_a_sourced_inter_node_bandwidth() -> None:
    """interNodeGBps: one NIC per GPU on the reference servers (A100 HDR 200 Gb/s, Hopper and
    Blackwell NDR 400 Gb/s); PCIe cards have no default fabric."""
    expected = {
        "A100-SXM-40GB": 25,
        "A100-SXM-80GB": 25,
        "H100-SXM-80GB": 50,
        "H200-SXM-141GB": 50,
        "B200-180GB": 50,
        "MI300X-192GB": 50,
        "MI325X-256GB": 50,
    }
    for key, entry in GPU_CATALOG.items():
        assert entry.spec.inter_node_gbps == expected.get(key), key
        if key in expected:
            assert "interNodeGBps" in entry.source, key
