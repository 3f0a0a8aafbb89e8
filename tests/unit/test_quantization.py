"""``weightDtype`` matches how vLLM loads the weights, and the flag rendered says so."""

import json
from typing import Any

import pytest

from tests.helpers import HF_CONFIGS, spec
from tokenscale.api.errors import SpecError
from tokenscale.catalog import MODEL_CATALOG, count_params
from tokenscale.catalog.hf_config import weight_dtype_from_hf_config
from tokenscale.planning import plan_service, replica_perf_model
from tokenscale.planning.inputs import bytes_per_param, resident_bytes_per_param, resolve_model
from tokenscale.planning.performance import WEIGHT_ONLY_DECODE_BANDWIDTH_EFFICIENCY
from tokenscale.render.engine_args import engine_args


def _hf(**quant: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = json.loads((HF_CONFIGS / "Llama-3.1-8B-Instruct.json").read_text())
    if quant:
        cfg["quantization_config"] = quant
    return cfg


def _flags(**model: Any) -> list[str]:
    s = spec(model={"catalog": None, **model} if "hfConfig" in model else model)
    return engine_args(s, plan_service(s))


@pytest.mark.parametrize("dtype", ["int4", "int8"])
def test_integer_weights_of_an_unquantized_checkpoint_are_refused(dtype: str) -> None:
    with pytest.raises(SpecError) as exc:
        plan_service(spec(model={"weightDtype": dtype}))
    assert exc.value.paths == ("spec.model.weightDtype",)
    assert "pre-quantized checkpoint" in str(exc.value)
    assert "fp8 (online)" in str(exc.value)


def test_online_fp8_renders_the_quantization_flag() -> None:
    args = _flags(weightDtype="fp8")
    assert args[args.index("--quantization") + 1] == "fp8"


def test_unquantized_bf16_renders_no_quantization_flag() -> None:
    assert "--quantization" not in _flags(weightDtype="bf16")


@pytest.mark.parametrize(
    ("quant", "dtype"),
    [
        ({"quant_method": "awq", "bits": 4}, "int4"),
        ({"quant_method": "gptq", "bits": 8}, "int8"),
        ({"quant_method": "fp8", "fmt": "e4m3"}, "fp8"),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g0": {"weights": {"num_bits": 8, "type": "float"}}},
            },
            "fp8",
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g0": {"weights": {"num_bits": 4, "type": "int"}}},
            },
            "int4",
        ),
    ],
)
def test_pre_quantized_checkpoints_plan_their_width_and_let_vllm_detect_it(
    quant: dict[str, Any], dtype: str
) -> None:
    cfg = _hf(**quant)
    assert weight_dtype_from_hf_config(cfg) == dtype
    s = spec(model={"catalog": None, "hfConfig": cfg})
    plan = plan_service(s)
    assert plan.weight_dtype == dtype
    assert "--quantization" not in engine_args(s, plan)  # vLLM reads quantization_config
    same = spec(model={"catalog": None, "hfConfig": cfg, "weightDtype": dtype})
    assert plan_service(same).weight_dtype == dtype


def test_a_wider_plan_of_a_pre_quantized_checkpoint_is_refused() -> None:
    cfg = _hf(quant_method="awq", bits=4)
    with pytest.raises(SpecError) as exc:
        plan_service(spec(model={"catalog": None, "hfConfig": cfg, "weightDtype": "bf16"}))
    assert exc.value.paths == ("spec.model.weightDtype",)
    assert "int4" in str(exc.value)


def test_an_unreadable_quantization_needs_an_explicit_width() -> None:
    cfg = _hf(quant_method="exotic")
    with pytest.raises(SpecError) as exc:
        plan_service(spec(model={"catalog": None, "hfConfig": cfg}))
    assert exc.value.paths == ("spec.model.weightDtype",)
    plan = plan_service(spec(model={"catalog": None, "hfConfig": cfg, "weightDtype": "int4"}))
    assert plan.weight_dtype == "int4"


def test_int4_plans_a_quarter_of_bf16_only_when_vllm_would_load_a_quarter() -> None:
    """The linear layers at a quarter, with their group scales and zero points; the embeddings
    and LM head stay 16-bit (AWQ keeps them)."""
    bf16 = plan_service(spec(model={"weightDtype": "bf16"}))
    awq = plan_service(spec(model={"catalog": None, "hfConfig": _hf(quant_method="awq", bits=4)}))
    kept = count_params(MODEL_CATALOG["llama-3.1-8b"].architecture)
    kept_bytes = (kept.embedding + kept.lm_head) * 2.0
    linear = (bf16.weight_bytes - kept_bytes) / 2.0  # parameters
    assert awq.weight_bytes == pytest.approx(linear * (0.5 + 2.5 / 128) + kept_bytes)
    assert awq.weight_bytes / 1e9 == pytest.approx(5.73, abs=0.05)  # the AWQ checkpoint: ~5.7 GB


def test_int4_group_scales_are_memory_not_the_decode_read() -> None:
    """A 4-bit weight's scale and zero point (AWQ: one 16-bit scale and a 4-bit zero per 128)
    are resident, so they take KV room; the decode step's read stays at 0.5 B per weight (its
    fitted efficiency already takes the scale loads in)."""
    awq_spec = spec(model={"catalog": None, "hfConfig": _hf(quant_method="awq", bits=4)})
    model = resolve_model(awq_spec)
    assert resident_bytes_per_param(model) == pytest.approx(0.5 + 2.5 / 128)
    bf16 = resolve_model(spec(model={"weightDtype": "bf16"}))
    assert resident_bytes_per_param(bf16) == bytes_per_param("bf16")
    perf = replica_perf_model(awq_spec, plan_service(awq_spec))
    assert perf.weight_bytes_per_param == 0.5


@pytest.mark.parametrize(
    ("quant", "scale_bytes"),
    [
        ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}, 2.5 / 128),
        ({"quant_method": "awq", "bits": 4, "group_size": 64}, 2.5 / 64),
        ({"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True}, 2.5 / 128),
        ({"quant_method": "gptq", "bits": 4, "group_size": -1}, 0.0),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {
                    "g": {"weights": {"num_bits": 4, "group_size": 128, "symmetric": True}}
                },
            },
            2.0 / 128,
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {
                    "g": {"weights": {"num_bits": 4, "group_size": 32, "symmetric": False}}
                },
            },
            2.5 / 32,
        ),
        ({"quant_method": "mxfp4"}, 1.0 / 32),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, 4.0 / 64),
        (
            {
                "quant_method": "bitsandbytes",
                "load_in_4bit": True,
                "bnb_4bit_use_double_quant": True,
            },
            1.0 / 64 + 4.0 / (64 * 256),
        ),
    ],
)
def test_each_int4_format_counts_its_own_scales(quant: dict[str, Any], scale_bytes: float) -> None:
    """The format's scales and zero points, read from its quantization_config: what each
    checkpoint keeps beside its 4-bit weights (group size, symmetric or not, block formats)."""
    model = resolve_model(spec(model={"catalog": None, "hfConfig": _hf(**quant)}))
    assert model.scale_bytes_per_param == pytest.approx(scale_bytes)
    assert resident_bytes_per_param(model) == pytest.approx(0.5 + scale_bytes)


def test_a_checkpoint_named_nvfp4_counts_an_fp8_scale_per_16_weights() -> None:
    named = resolve_model(spec(model={"name": "nvidia/Llama-3.1-8B-Instruct-NVFP4"}))
    assert named.weight_dtype == "int4"
    assert named.scale_bytes_per_param == pytest.approx(1.0 / 16)


def test_int4_decode_reads_its_weights_at_the_weight_only_fraction_of_the_bandwidth() -> None:
    """Weight-only INT4 kernels dequantize on the critical path: a batch-1 decode step is not
    the quarter of BF16's that the bytes alone would give (vLLM's INT4 Marlin latencies)."""
    bf16_spec = spec(model={"weightDtype": "bf16"})
    awq_spec = spec(model={"catalog": None, "hfConfig": _hf(quant_method="awq", bits=4)})
    bf16 = replica_perf_model(bf16_spec, plan_service(bf16_spec))
    awq = replica_perf_model(awq_spec, plan_service(awq_spec))
    assert awq.weight_read_efficiency == WEIGHT_ONLY_DECODE_BANDWIDTH_EFFICIENCY
    assert bf16.weight_read_efficiency == 1.0
    overhead = bf16.assumptions.step_overhead_seconds
    a = awq.assumptions
    bw = awq.hbm_bytes_per_s * a.decode_bandwidth_efficiency * awq.decode_bandwidth_factor
    kv = awq.geometry.bytes_per_token_per_rank * awq.decode_context_tokens / bw
    expected = awq.weight_read_bytes(1) / (bw * WEIGHT_ONLY_DECODE_BANDWIDTH_EFFICIENCY) + kv
    assert awq.step_seconds(1) == pytest.approx(expected + overhead)
    # faster than BF16, but by less than half what the ratio of their weight bytes would give
    speedup = bf16.step_seconds(1) / awq.step_seconds(1)
    assert 1.0 < speedup < 0.5 * bf16.weight_read_bytes(1) / awq.weight_read_bytes(1)


@pytest.mark.parametrize(
    ("name", "dtype"),
    [
        ("hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4", "int4"),
        ("RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8", "fp8"),
        ("neuralmagic/Meta-Llama-3.1-8B-Instruct-quantized.w8a8", "int8"),
    ],
)
def test_a_catalog_architecture_served_from_a_quantized_checkpoint_plans_its_width(
    name: str, dtype: str
) -> None:
    s = spec(model={"name": name, "catalog": "llama-3.1-8b"})
    plan = plan_service(s)
    assert plan.weight_dtype == dtype
    assert "--quantization" not in engine_args(s, plan)
    with pytest.raises(SpecError, match="does not match the checkpoint"):
        plan_service(spec(model={"name": name, "catalog": "llama-3.1-8b", "weightDtype": "bf16"}))


def test_hf_config_booleans_must_be_booleans() -> None:
    with pytest.raises(SpecError) as exc:
        plan_service(
            spec(model={"catalog": None, "hfConfig": {**_hf(), "tie_word_embeddings": "false"}})
        )
    assert exc.value.paths == ("spec.model.hfConfig.tie_word_embeddings",)
