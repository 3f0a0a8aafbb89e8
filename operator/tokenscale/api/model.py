"""``spec.model``: which model is served and how its weights and KV cache are stored."""

from typing import Any, Literal, Self

from pydantic import Field, model_validator

from tokenscale.api.base import MAX_PARAMS, MAX_TOKENS, ApiModel
from tokenscale.api.k8s_names import ObjectName

#: Largest layer count, width, head count or expert count an architecture may name.
MAX_DIM = 10_000_000

WeightDtype = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4"]
KvCacheDtype = Literal["auto", "fp8"]

#: Bytes per stored parameter or KV element, by dtype name (reference: docs/formulas.md,
#: "weight_bytes = params × bytes_per_param (FP32 4, BF16/FP16 2, FP8/INT8 1, INT4 0.5)").
BYTES_PER_ELEMENT: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
}


class Architecture(ApiModel):
    """Transformer shapes; everything the planner needs. Names follow HF ``config.json`` meaning.

    Dense, GQA/MQA (``kvHeads``), sliding-window (``slidingWindow`` over
    ``slidingWindowLayers`` layers), MoE (``experts``/``expertsPerToken``) and MLA
    (``kvLoraRank``/``qkRopeHeadDim``) models are all described by these fields.
    """

    layers: int = Field(gt=0, le=MAX_DIM, description="Decoder layers (num_hidden_layers).")
    hidden_size: int = Field(gt=0, le=MAX_DIM, description="Model width d_model (hidden_size).")
    attention_heads: int = Field(gt=0, le=MAX_DIM, description="Query heads (num_attention_heads).")
    kv_heads: int | None = Field(
        default=None,
        gt=0,
        le=MAX_DIM,
        description="Key/value heads; absent means MHA (= attentionHeads).",
    )
    head_dim: int | None = Field(
        default=None,
        gt=0,
        le=MAX_DIM,
        description="Per-head dimension; absent means hiddenSize/attentionHeads.",
    )
    intermediate_size: int | None = Field(
        default=None,
        gt=0,
        le=MAX_DIM,
        description="Dense MLP width (gated: gate, up and down projections).",
    )
    vocab_size: int | None = Field(default=None, gt=0, le=MAX_DIM, description="Vocabulary size.")
    params: float | None = Field(
        default=None,
        gt=0,
        le=MAX_PARAMS,
        description="Total parameters (a count, e.g. 70.6e9); derived if absent.",
    )
    active_params: float | None = Field(
        default=None,
        gt=0,
        le=MAX_PARAMS,
        description="Parameters used per token (MoE); derived if absent.",
    )
    max_context_tokens: int = Field(
        default=8192,
        gt=0,
        le=MAX_TOKENS,
        description="Longest context the model supports (max_position_embeddings).",
    )
    sliding_window: int | None = Field(
        default=None,
        gt=0,
        le=MAX_DIM,
        description="Sliding-window size in tokens for windowed layers.",
    )
    sliding_window_layers: int | None = Field(
        default=None,
        ge=0,
        le=MAX_DIM,
        description="How many layers use the window; absent means all layers.",
    )
    tie_word_embeddings: bool = Field(default=False, description="LM head shares the embedding.")
    attention_bias: bool = Field(default=False, description="q/k/v projections carry a bias.")
    experts: int | None = Field(
        default=None, ge=2, le=MAX_DIM, description="Routed experts per MoE layer."
    )
    experts_per_token: int | None = Field(
        default=None,
        ge=1,
        le=MAX_DIM,
        description="Routed experts each token uses (num_experts_per_tok).",
    )
    expert_intermediate_size: int | None = Field(
        default=None,
        gt=0,
        le=MAX_DIM,
        description="Width of one expert's MLP; absent means intermediateSize.",
    )
    shared_experts: int = Field(
        default=0, ge=0, le=MAX_DIM, description="Always-on shared experts per layer."
    )
    shared_expert_intermediate_size: int | None = Field(
        default=None,
        gt=0,
        le=MAX_DIM,
        description="Width of one shared expert; absent means the expert width.",
    )
    dense_layers: int = Field(
        default=0, ge=0, le=MAX_DIM, description="Leading layers with a dense MLP in an MoE model."
    )
    kv_lora_rank: int | None = Field(
        default=None,
        gt=0,
        le=MAX_DIM,
        description="MLA compressed KV latent rank (DeepSeek-V2/V3).",
    )
    qk_rope_head_dim: int | None = Field(
        default=None,
        gt=0,
        le=MAX_DIM,
        description="MLA decoupled RoPE key dimension, cached beside the latent.",
    )
    qk_nope_head_dim: int | None = Field(
        default=None, gt=0, le=MAX_DIM, description="MLA non-RoPE q/k dim."
    )
    v_head_dim: int | None = Field(
        default=None, gt=0, le=MAX_DIM, description="MLA value head dimension."
    )
    q_lora_rank: int | None = Field(
        default=None, gt=0, le=MAX_DIM, description="MLA query low-rank."
    )

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        kv = self.kv_heads or self.attention_heads
        if self.attention_heads % kv != 0:
            raise ValueError(
                f"kvHeads={kv} must divide attentionHeads={self.attention_heads} "
                "(GQA groups query heads evenly); use a divisor of attentionHeads"
            )
        if self.head_dim is None and self.hidden_size % self.attention_heads != 0:
            raise ValueError(
                f"hiddenSize={self.hidden_size} is not a multiple of attentionHeads="
                f"{self.attention_heads}; set headDim explicitly"
            )
        if (self.experts is None) != (self.experts_per_token is None):
            raise ValueError("experts and expertsPerToken go together: set both or neither")
        if self.experts is not None and self.experts_per_token is not None:
            if self.experts_per_token > self.experts:
                raise ValueError(
                    f"expertsPerToken={self.experts_per_token} exceeds experts={self.experts}"
                )
            if self.dense_layers > self.layers:
                raise ValueError(f"denseLayers={self.dense_layers} exceeds layers={self.layers}")
        if (self.kv_lora_rank is None) != (self.qk_rope_head_dim is None):
            raise ValueError("kvLoraRank and qkRopeHeadDim go together (MLA): set both or neither")
        if self.sliding_window_layers is not None and self.sliding_window_layers > self.layers:
            raise ValueError(
                f"slidingWindowLayers={self.sliding_window_layers} exceeds layers={self.layers}"
            )
        if self.sliding_window_layers is not None and self.sliding_window is None:
            raise ValueError("slidingWindowLayers needs slidingWindow (the window in tokens)")
        if (
            self.params is not None
            and self.active_params is not None
            and self.active_params > self.params
        ):
            raise ValueError(
                f"activeParams={self.active_params:.4g} exceeds params={self.params:.4g}"
            )
        if self.params is None and (self.vocab_size is None or self.intermediate_size is None):
            if self.experts is None or self.expert_intermediate_size is None:
                raise ValueError(
                    "cannot derive the parameter count: give params, or vocabSize and "
                    "intermediateSize (or expertIntermediateSize for MoE)"
                )
            if self.vocab_size is None:
                raise ValueError("cannot derive the parameter count: give params or vocabSize")
        return self

    @property
    def effective_kv_heads(self) -> int:
        return self.kv_heads or self.attention_heads

    @property
    def effective_head_dim(self) -> int:
        return self.head_dim or self.hidden_size // self.attention_heads

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def is_moe(self) -> bool:
        return self.experts is not None


class HfConfigRef(ApiModel):
    """A model's Hugging Face ``config.json`` kept in a ConfigMap in the InferenceService's
    namespace (the operator reads it)."""

    config_map_name: ObjectName = Field(description="ConfigMap holding the config.json.")
    key: str = Field(
        default="config.json",
        pattern=r"^[-._a-zA-Z0-9]+$",
        max_length=253,
        description="Key of the config.json content (JSON).",
    )


class ModelSpec(ApiModel):
    """The served model: a catalog key, an inline architecture, or the HF ``config.json`` (inline,
    from a file for the CLI, or from a ConfigMap for the operator)."""

    name: str = Field(
        min_length=1,
        description="Served model name / HF repo id: the model vLLM serves (vllm serve NAME).",
    )
    catalog: str | None = Field(
        default=None, description="Built-in architecture key (see `tokenscale catalog`)."
    )
    architecture: Architecture | None = Field(default=None, description="Inline architecture.")
    hf_config: dict[str, Any] | None = Field(
        default=None, description="The model's HF config.json content, inline."
    )
    hf_config_file: str | None = Field(
        default=None,
        min_length=1,
        max_length=4096,
        description="Path to the model's HF config.json, read by the CLI (relative to the "
        "manifest's directory); the operator reads files from no path: use hfConfigRef.",
    )
    hf_config_ref: HfConfigRef | None = Field(
        default=None,
        description="The model's HF config.json in a ConfigMap of this namespace, read by the "
        "operator (a ConfigMap get).",
    )
    weight_dtype: WeightDtype | None = Field(
        default=None,
        description="Stored weight precision; absent means the checkpoint's (bf16 if unknown).",
    )
    kv_cache_dtype: KvCacheDtype = Field(
        default="auto", description="KV cache precision: auto (the model dtype) or fp8."
    )

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        given = [
            k
            for k, v in (
                ("catalog", self.catalog),
                ("architecture", self.architecture),
                ("hfConfig", self.hf_config),
                ("hfConfigFile", self.hf_config_file),
                ("hfConfigRef", self.hf_config_ref),
            )
            if v is not None
        ]
        if len(given) > 1:
            raise ValueError(
                "give exactly one of catalog, architecture, hfConfig, hfConfigFile or "
                f"hfConfigRef (got {', '.join(given)})"
            )
        return self
