"""``spec.serving``: the vLLM engine's image and scheduler settings."""

from typing import Literal

from pydantic import Field

from tokenscale.api.base import ApiModel

DEFAULT_VLLM_IMAGE = "vllm/vllm-openai:v0.33.0"


class Serving(ApiModel):
    """vLLM settings; absent values take vLLM 0.33's own defaults for the GPU."""

    image: str = Field(default=DEFAULT_VLLM_IMAGE, min_length=1, description="vLLM image.")
    max_num_seqs: int | None = Field(
        default=None, ge=1, description="--max-num-seqs; absent = vLLM's default for the GPU."
    )
    max_num_batched_tokens: int | None = Field(
        default=None,
        ge=16,
        description="--max-num-batched-tokens (per-step token budget); absent = vLLM's default.",
    )
    block_size: Literal[8, 16, 32, 64, 128] = Field(
        default=16, description="--block-size, tokens per KV block."
    )
    enable_chunked_prefill: bool = Field(default=True, description="Chunked prefill.")
    enable_prefix_caching: bool = Field(default=True, description="Automatic prefix caching.")
    extra_args: list[str] = Field(default_factory=list, description="Extra vllm serve arguments.")
