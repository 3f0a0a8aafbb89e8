"""``spec.serving``: the vLLM engine's image and scheduler settings."""

from typing import Literal

from pydantic import Field, field_validator

from tokenscale.api.base import MAX_TOKENS, ApiModel
from tokenscale.api.length_classes import MAX_LENGTH_CLASSES, LengthClass, problems
from tokenscale.api.speculative import Speculative

DEFAULT_VLLM_IMAGE = "vllm/vllm-openai:v0.33.0"

#: Flags the operator renders from the plan (render/engine_args.py) or that change the GPUs a
#: replica uses: vLLM takes the last value, so an extra copy would silently override the plan.
OWNED_FLAGS: dict[str, str] = {
    "--model": "spec.model.name",
    "--served-model-name": "spec.model.name",
    "--port": "the operator's port 8000 (probes and the Service use it)",
    "--host": "the operator (the pod listens on all addresses)",
    "--tensor-parallel-size": "spec.hardware.tensorParallelSize",
    "-tp": "spec.hardware.tensorParallelSize",
    "--pipeline-parallel-size": "spec.hardware.tensorParallelSize (GPUs per replica)",
    "-pp": "spec.hardware.tensorParallelSize (GPUs per replica)",
    "--data-parallel-size": "more replicas (spec.scaling)",
    "-dp": "more replicas (spec.scaling)",
    "--max-model-len": "spec.workload.maxContextTokens",
    "--max-num-seqs": "spec.serving.maxNumSeqs",
    "--max-num-batched-tokens": "spec.serving.maxNumBatchedTokens",
    "--gpu-memory-utilization": "spec.hardware.gpuMemoryUtilization",
    "--kv-cache-dtype": "spec.model.kvCacheDtype",
    "--block-size": "spec.serving.blockSize",
    "--enable-chunked-prefill": "spec.serving.enableChunkedPrefill",
    "--no-enable-chunked-prefill": "spec.serving.enableChunkedPrefill",
    "--enable-prefix-caching": "spec.serving.enablePrefixCaching",
    "--no-enable-prefix-caching": "spec.serving.enablePrefixCaching",
    "--quantization": "spec.model.weightDtype",
    "--kv-transfer-config": "spec.serving.disaggregation",
    "-q": "spec.model.weightDtype",
    "--speculative-config": "spec.serving.speculative",
    "--enable-lora": "spec.lora",
    "--max-loras": "spec.lora.maxLoras",
    "--max-lora-rank": "spec.lora.maxLoraRank",
    "--max-cpu-loras": "spec.lora.maxCpuLoras",
    "--lora-modules": "spec.lora.adapters",
}


def owned_flag(arg: str) -> str | None:
    """The operator-owned flag ``arg`` sets (``--x=1``, ``--x_y`` spelled either way), or None."""
    if not arg.startswith("-"):
        return None
    flag = arg.split("=", 1)[0]
    if flag.startswith("--"):
        flag = "--" + flag[2:].replace("_", "-")
    return flag if flag in OWNED_FLAGS else None


class Serving(ApiModel):
    """vLLM settings; absent values take vLLM 0.33's own defaults for the GPU."""

    image: str = Field(default=DEFAULT_VLLM_IMAGE, min_length=1, description="vLLM image.")
    max_num_seqs: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="--max-num-seqs; absent = vLLM's default for the GPU.",
    )
    max_num_batched_tokens: int | None = Field(
        default=None,
        ge=16,
        le=MAX_TOKENS,
        description="--max-num-batched-tokens (per-step token budget); absent = vLLM's default.",
    )
    block_size: Literal[8, 16, 32, 64, 128] = Field(
        default=16, description="--block-size, tokens per KV block."
    )
    enable_chunked_prefill: bool = Field(default=True, description="Chunked prefill.")
    enable_prefix_caching: bool = Field(default=True, description="Automatic prefix caching.")
    speculative: Speculative | None = Field(
        default=None,
        description="Speculative decoding (--speculative-config); absent = off.",
    )
    disaggregation: Literal["off", "on", "auto"] = Field(
        default="off",
        description="Prefill/decode disaggregation: off (one pool serves both phases), on "
        "(separate prefill and decode pools, the KV cache sent between them), auto (the "
        "planner picks the architecture that needs fewer GPUs, then costs less). on and auto "
        "are refused with spec.hardware.variants, keda actuation or spec.workloadRef.",
    )
    length_classes: list[LengthClass] | None = Field(
        default=None,
        min_length=2,
        max_length=MAX_LENGTH_CLASSES,
        description="Requests split by prompt length, one pool per class, shortest first "
        "(e.g. [{name: short, maxInputTokens: 2048}, {name: long}]): a long prompt no longer "
        "sets the short ones' chunk budget, KV headroom and TTFT queue (docs/length-classes.md). "
        "Refused with spec.serving.disaggregation on/auto, spec.workload.classes, keda "
        "actuation or spec.workloadRef.",
    )
    extra_args: list[str] = Field(
        default_factory=list,
        description="Extra vllm serve arguments; flags the operator renders from the plan "
        "(--model, --port, --tensor-parallel-size, …) are refused.",
    )

    @property
    def asks_for_roles(self) -> bool:
        """``disaggregation`` on or auto: the plan runs, or may run, prefill and decode pools
        (whether it does is ``Plan.role_pools``)."""
        return self.disaggregation != "off"

    @property
    def splits_by_length(self) -> bool:
        """``lengthClasses`` set: the plan runs one pool per class of prompt lengths (the one
        place this shape is asked before planning; after it, ``Plan.length_split``)."""
        return bool(self.length_classes)

    @field_validator("disaggregation", mode="before")
    @classmethod
    def _yaml_switch(cls, value: object) -> object:
        """YAML 1.1 (PyYAML, and kubectl's parser) reads an unquoted ``on``/``off`` as a
        boolean: take it back as the word the user wrote."""
        if isinstance(value, bool):
            return "on" if value else "off"
        return value

    @field_validator("length_classes")
    @classmethod
    def _classes_plannable(cls, value: list[LengthClass] | None) -> list[LengthClass] | None:
        found = problems(value or [])
        if value is not None and found:
            raise ValueError("; ".join(found))
        return value

    @field_validator("extra_args")
    @classmethod
    def _not_owned(cls, value: list[str]) -> list[str]:
        for index, arg in enumerate(value):
            flag = owned_flag(arg)
            if flag is not None:
                raise ValueError(
                    f"[{index}] {arg!r}: the operator renders {flag} from the plan and vLLM "
                    f"takes the last value; set {OWNED_FLAGS[flag]} instead"
                )
        return value
