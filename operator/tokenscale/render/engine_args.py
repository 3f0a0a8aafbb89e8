"""The ``vllm serve`` arguments for a plan (flag names and defaults: vLLM 0.33 arg_utils)."""

import json

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning.result import Plan
from tokenscale.render.lora import lora_args

VLLM_PORT = 8000
#: The longest n-gram prompt lookup matches (``prompt_lookup_max``).
NGRAM_PROMPT_LOOKUP_MAX = 5


def quantization_flag(plan: Plan) -> str | None:
    """``--quantization fp8`` when FP8 weights are asked of a checkpoint stored wider (vLLM then
    quantizes on load); pre-quantized checkpoints (FP8/AWQ/GPTQ) are detected by vLLM itself."""
    if plan.weight_dtype == "fp8" and plan.checkpoint_weight_dtype != "fp8":
        return "fp8"
    return None


def parallel_flags(plan: Plan) -> list[str]:
    """The layout beyond TP, only where it is not vLLM's default (single-node args unchanged)."""
    flags: list[str] = []
    if plan.pipeline_parallel_size > 1:
        flags += ["--pipeline-parallel-size", str(plan.pipeline_parallel_size)]
    if plan.data_parallel_size > 1:
        flags += ["--data-parallel-size", str(plan.data_parallel_size)]
    if plan.expert_parallel:
        flags.append("--enable-expert-parallel")
    return flags


def speculative_config(spec: InferenceServiceSpec, plan: Plan) -> str | None:
    """``--speculative-config`` JSON when the plan has speculation on: vLLM's
    ``SpeculativeConfig`` keys ``method``, ``num_speculative_tokens``, ``model`` (the proposer
    checkpoint, when there is one) and, for n-gram lookup, ``prompt_lookup_max`` (the longest
    n-gram matched; vLLM's own default is 5 as well, given so the rendered config is explicit)."""
    s, est = spec.serving.speculative, plan.speculative
    if s is None or est is None or not est.enabled:
        return None
    config: dict[str, object] = {
        "method": est.method,
        "num_speculative_tokens": est.num_speculative_tokens,
    }
    if s.draft_model is not None:
        config["model"] = s.draft_model.name
    if est.method == "ngram":
        config["prompt_lookup_max"] = NGRAM_PROMPT_LOOKUP_MAX
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


def engine_args(spec: InferenceServiceSpec, plan: Plan) -> list[str]:
    """The model as ``vllm serve``'s positional ``model_tag`` (vLLM 0.32 warns that ``--model``
    "will be removed in a future version"), flags in a fixed order (so the config hash is
    stable), the LoRA flags (``render/lora.py``), then ``serving.extraArgs``. With
    ``spec.workload.classes``, ``--scheduling-policy priority``: vLLM then takes the waiting
    request with the lowest ``priority`` value first and preempts the highest
    (docs/tenants.md)."""
    s = spec.serving
    args = [
        spec.model.name,
        "--served-model-name",
        spec.model.name,
        "--port",
        str(VLLM_PORT),
        "--tensor-parallel-size",
        str(plan.tensor_parallel_size),
        *parallel_flags(plan),
        "--max-model-len",
        str(plan.max_model_len),
        "--max-num-seqs",
        str(plan.max_num_seqs),
        "--max-num-batched-tokens",
        str(plan.max_num_batched_tokens),
        "--gpu-memory-utilization",
        f"{spec.hardware.gpu_memory_utilization:g}",
        "--kv-cache-dtype",
        plan.kv_cache_dtype,
        "--block-size",
        str(s.block_size),
        "--enable-chunked-prefill" if s.enable_chunked_prefill else "--no-enable-chunked-prefill",
        "--enable-prefix-caching" if s.enable_prefix_caching else "--no-enable-prefix-caching",
    ]
    if spec.workload.classes:  # classes carry priorities: vLLM serves the lower value first
        args += ["--scheduling-policy", "priority"]
    quant = quantization_flag(plan)
    if quant:
        args += ["--quantization", quant]
    speculative = speculative_config(spec, plan)
    if speculative:
        args += ["--speculative-config", speculative]
    return args + lora_args(spec, plan) + list(s.extra_args)
