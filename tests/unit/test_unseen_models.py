"""Models outside the catalog, given by their released ``config.json`` (``spec.model.hfConfig``):
each plans with parameter and KV figures checked against numbers computed here from the shapes
and the model cards, and every assumption the config forces is a plan warning.
Fixtures: ``tests/fixtures/hf_configs`` (abridged transcriptions, see its README)."""

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import HF_CONFIGS, spec
from tokenscale.api.errors import SpecError
from tokenscale.catalog import GPU_CATALOG
from tokenscale.planning import plan_service
from tokenscale.planning.result import Plan


def _config(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((HF_CONFIGS / f"{name}.json").read_text())
    return loaded


def _plan(cfg: dict[str, Any], gpu: str = "H200-SXM-141GB", **workload: Any) -> Plan:
    return plan_service(
        spec(
            model={"name": "acme/unseen", "catalog": None, "hfConfig": cfg},
            hardware={"gpu": gpu, "tensorParallelSize": "auto"},
            workload={
                "inputTokens": {"mean": 1000, "p99": 6000},
                "outputTokens": {"mean": 200, "p99": 1000},
                "maxContextTokens": 32768,
            }
            | workload,
            slo={"ttftP99Seconds": 3.0, "tpotP99Seconds": 0.1},
        )
    )


def _gated_mlp(d: int, width: int) -> int:
    return 3 * d * width


def _gqa(d: int, heads: int, kv_heads: int, head_dim: int) -> int:
    return 2 * d * heads * head_dim + 2 * d * kv_heads * head_dim


def test_llama_4_scout_counts_its_shared_expert_and_reads_a_10m_context() -> None:
    """48 MoE layers of 16 routed + 1 shared expert (8,192 wide); Meta's card: 17 B active,
    109 B total with the vision encoder (the text model alone is 107.8 B)."""
    d, layers, vocab = 5120, 48, 202_048
    per_layer = _gqa(d, 40, 8, 128) + 17 * _gated_mlp(d, 8192) + d * 16 + 2 * d
    total = layers * per_layer + 2 * vocab * d + d
    active = layers * (_gqa(d, 40, 8, 128) + 2 * _gated_mlp(d, 8192) + d * 16 + 2 * d)
    plan = _plan(_config("Llama-4-Scout-17B-16E-Instruct"))
    assert plan.params == pytest.approx(total, rel=1e-3)
    assert plan.active_params == pytest.approx(active + 2 * vocab * d, rel=1e-3)
    assert plan.active_params == pytest.approx(17e9, rel=0.02)
    assert any("10,485,760 is read as 10,000,000" in w for w in plan.warnings)


def test_llama_4_maverick_alternates_dense_and_moe_layers() -> None:
    """``interleave_moe_layer_step: 2``: 24 MoE layers (128 + 1 experts), 24 dense layers
    16,384 wide; Meta's card: 400 B total, 17 B active."""
    cfg = _config("Llama-4-Scout-17B-16E-Instruct")
    cfg["text_config"] |= {"num_local_experts": 128, "interleave_moe_layer_step": 2}
    d, vocab = 5120, 202_048
    moe = 24 * (129 * _gated_mlp(d, 8192) + d * 128)
    dense = 24 * _gated_mlp(d, 16384)
    total = moe + dense + 48 * (_gqa(d, 40, 8, 128) + 2 * d) + 2 * vocab * d + d
    plan = _plan(cfg, "B200-180GB")
    assert plan.params == pytest.approx(total, rel=1e-3)
    assert plan.params == pytest.approx(400e9, rel=0.01)
    assert plan.active_params == pytest.approx(17e9, rel=0.02)


def test_gemma_3_text_config_without_vocab_or_pattern_takes_the_family_defaults() -> None:
    """google/gemma-3-27b-it's ``text_config`` names no vocab, context or window pattern:
    transformers' Gemma3TextConfig fills 262,208, 131,072 and one global layer in six."""
    plan = _plan(_config("gemma-3-27b-it"))
    d, vocab = 5376, 262_208
    total = 62 * (_gqa(d, 32, 16, 128) + _gated_mlp(d, 21504) + 2 * d) + vocab * d + d
    assert plan.params == pytest.approx(total, rel=1e-3)
    assert plan.params == pytest.approx(27.016e9, rel=0.01)  # Gemma 3 report, Table 1
    # P99 request 6,000 + 1,000 tokens: 10 global layers hold all of it, 52 windowed ones 1,024
    kv_per_token_layer = 2 * 16 * 128 * 2
    assert plan.kv_bytes_per_request_p99 == (10 * 7000 + 52 * 1024) * kv_per_token_layer
    assert any("gemma3_text's defaults in transformers" in w for w in plan.warnings)


def test_gpt_oss_mxfp4_is_read_as_int4_with_what_that_leaves_out() -> None:
    plan = _plan(_config("gpt-oss-120b"))
    assert plan.weight_dtype == "int4"
    assert plan.params == pytest.approx(116.83e9, rel=0.005)  # OpenAI's model card
    # 18 full-attention layers hold the whole request, 18 windowed ones 128 tokens
    assert plan.kv_bytes_per_request_p99 == (18 * 7000 + 18 * 128) * 2 * 8 * 64 * 2
    assert any("MXFP4 weights are counted as int4" in w for w in plan.warnings)


@pytest.mark.parametrize(
    ("name", "total", "active"),
    [
        ("Qwen3-30B-A3B", 30.5e9, 3.3e9),
        ("Mixtral-8x22B-v0.1", 140.6e9, 39.1e9),
        ("Phi-3.5-MoE-instruct", 41.9e9, 6.6e9),
    ],
)
def test_moe_totals_and_active_match_the_model_cards(
    name: str, total: float, active: float
) -> None:
    plan = _plan(_config(name), "B200-180GB")
    assert plan.params == pytest.approx(total, rel=0.015)
    assert plan.active_params == pytest.approx(active, rel=0.02)


def test_a_config_without_kv_heads_or_context_says_what_it_assumed() -> None:
    cfg = {
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "vocab_size": 32000,
        "torch_dtype": "float16",
    }
    plan = _plan(cfg, maxContextTokens=None)
    assert plan.kv_bytes_per_token == 2 * 32 * 32 * 128 * 2  # MHA: every head keeps its KV
    assert plan.max_model_len == 8192
    text = " ".join(plan.warnings)
    assert "names no num_key_value_heads" in text
    assert "names no max_position_embeddings: a 8,192-token context is assumed" in text


_FIELDS = [
    "num_hidden_layers",
    "hidden_size",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "max_position_embeddings",
    "sliding_window",
    "sliding_window_pattern",
    "num_local_experts",
    "num_experts_per_tok",
    "moe_intermediate_size",
    "interleave_moe_layer_step",
    "model_type",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.sampled_from(_FIELDS),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(min_value=-3, max_value=2**40),
            st.sampled_from([1, 2, 8, 64, 128, 4096, 10_485_760, 4096.0, 0.5]),
            st.sampled_from(["llama4_text", "gemma3_text", "gemma2", "qwen3_moe", "x"]),
        ),
        max_size=4,
    )
)
def test_any_config_plans_or_names_a_field(overrides: dict[str, Any]) -> None:
    """The invariant: a config the loader accepts plans; one it refuses names a field."""
    cfg = _config("Qwen2.5-7B-Instruct") | overrides
    paths: list[str] = []
    try:
        plan = _plan(cfg, "B200-180GB", maxContextTokens=None)
    except SpecError as err:
        paths = [issue.path for issue in err.issues] or ["(none)"]
    if paths:
        assert all(path.startswith("spec.") for path in paths), paths
        return
    assert plan.params > 0
    assert plan.max_model_len >= 1


@pytest.mark.parametrize(
    ("patch", "path", "words"),
    [
        ({"layer_types": ["sliding_attention"] * 3}, "layer_types", "3 entries"),
        ({"layer_types": "sliding_attention"}, "layer_types", "one attention type per layer"),
        ({"layer_types": [1] * 36}, "layer_types", "36 entries"),
        ({"layer_types": None, "sliding_window_pattern": 0}, "sliding_window_pattern", "range"),
        ({"quantization_config": [1]}, "quantization_config", "is not a mapping"),
    ],
)
def test_a_malformed_window_or_quantization_field_is_named(
    patch: dict[str, Any], path: str, words: str
) -> None:
    """Before: a short or string ``layer_types`` windowed every layer (the KV of a long request
    under-counted 20-fold), a list ``quantization_config`` was ignored."""
    cfg = _config("gpt-oss-120b") | patch
    with pytest.raises(SpecError) as info:
        _plan(cfg)
    assert [i.path for i in info.value.issues] == [f"spec.model.hfConfig.{path}"]
    assert words in info.value.issues[0].message


_UNSEEN = [
    "Llama-4-Scout-17B-16E-Instruct",
    "gemma-3-27b-it",
    "gpt-oss-120b",
    "Qwen3-30B-A3B",
    "Mixtral-8x22B-v0.1",
    "Phi-3.5-MoE-instruct",
    "Qwen2.5-72B-Instruct-AWQ",
    "DeepSeek-V3",
]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(_UNSEEN),
    gpu=st.sampled_from(sorted(GPU_CATALOG)),
    tp=st.sampled_from(["auto", 1, 2, 4, 8]),
    kv=st.sampled_from(["auto", "fp8"]),
    disaggregation=st.sampled_from(["off", "auto", "on"]),
    rps=st.sampled_from([0.0, 0.01, 1.0, 50.0, 5000.0]),
    prompt=st.sampled_from([1, 100, 4000, 100_000]),
)
def test_an_unseen_model_plans_anywhere_or_names_a_field(
    name: str, gpu: str, tp: Any, kv: str, disaggregation: str, rps: float, prompt: int
) -> None:
    """Any unseen model on any GPU: a SpecError naming a ``spec.`` path, or a plan whose
    figures are finite and whose feasible layouts fit the GPU's memory."""
    doc_spec = spec(
        model={
            "name": "acme/unseen",
            "catalog": None,
            "hfConfig": _config(name),
            "kvCacheDtype": kv,
        },
        hardware={"gpu": gpu, "tensorParallelSize": tp},
        workload={
            "rps": {"mean": rps},
            "inputTokens": {"mean": prompt, "p99": prompt * 2},
            "outputTokens": {"mean": 200, "p99": 800},
            "maxContextTokens": None,
        },
        scaling={"minReplicas": 1, "maxReplicas": 500},
        serving={"disaggregation": disaggregation},
    )
    paths: list[str] = []
    try:
        plan = plan_service(doc_spec)
    except SpecError as err:
        paths = [i.path for i in err.issues] or ["(none)"]
    if paths:
        assert all(path.startswith("spec.") for path in paths), paths
        return
    assert math.isfinite(plan.params)
    assert math.isfinite(plan.weight_bytes)
    if plan.feasible and plan.replicas is not None:
        memory = plan.memory_per_gpu
        assert memory.weights_bytes <= memory.gpu_total_bytes
        assert 1 <= plan.replicas.total <= 500


@pytest.mark.parametrize(
    ("patch", "words"),
    [
        (
            {"layer_types": ["linear_attention"] * 3 + ["full_attention"]},
            "layer_types names linear_attention layers",
        ),
        ({"hybrid_override_pattern": "M-M*-M-"}, "state-space (Mamba) layers"),
        ({"mamba_d_state": 128}, "state-space (Mamba) layers"),
    ],
)
def test_layers_that_are_not_attention_are_a_stated_assumption(
    patch: dict[str, Any], words: str
) -> None:
    """Qwen3-Next's linear attention and Nemotron-H's Mamba layers are planned as attention
    layers; the plan says so rather than presenting the figures as the model's."""
    cfg = _config("Qwen2.5-7B-Instruct") | {"num_hidden_layers": 4} | patch
    plan = _plan(cfg)
    assert any(words in w for w in plan.warnings), plan.warnings
