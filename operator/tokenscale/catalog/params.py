"""Parameter counts derived from an architecture's shapes.

Per decoder layer (gated MLP as in Llama/Qwen/Mistral; RMSNorm weights only):

- attention, standard: ``q: d×Hq·h``, ``k,v: d×Hkv·h``, ``o: Hq·h×d`` (+ q/k/v biases if any)
- attention, MLA (DeepSeek-V2/V3): ``q_a: d×r_q``, ``q_b: r_q×Hq(h_nope+h_rope)`` (or a full
  ``d×Hq(h_nope+h_rope)`` without ``r_q``), ``kv_a: d×(r_kv+h_rope)``,
  ``kv_b: r_kv×Hq(h_nope+h_v)``, ``o: Hq·h_v×d`` plus the two latent norms
- MLP, dense: ``3×d×I``; MoE: ``E×3×d×I_e`` + shared experts ``S×3×d×I_s`` + router ``d×E``
- norms: ``2×d``

plus embeddings ``V×d``, the LM head ``V×d`` unless tied, and the final norm ``d``.
Active parameters count ``k`` routed experts instead of ``E``.
"""

from dataclasses import dataclass

from tokenscale.api.model import Architecture


@dataclass(frozen=True)
class ParamCount:
    """Parameter counts by part (counts, not bytes)."""

    total: float
    active: float
    embedding: float
    lm_head: float
    routed_experts: float
    """All routed-expert weights across the model (read partially per decode step)."""

    @property
    def decode_read_params(self) -> float:
        """Parameters a decode step reads at batch 1: the active ones minus the input embedding.

        The input embedding is a gather of a few rows, not a full read; a tied LM head still
        reads the whole matrix (it is counted in ``lm_head``'s place).
        """
        return self.active - (self.embedding if self.lm_head > 0 else 0.0)


def _attention_params(a: Architecture) -> float:
    d, hq = a.hidden_size, a.attention_heads
    if a.kv_lora_rank is not None and a.qk_rope_head_dim is not None:
        rope = a.qk_rope_head_dim
        nope = a.qk_nope_head_dim or a.effective_head_dim
        hv = a.v_head_dim or nope
        if a.q_lora_rank:
            q = d * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * hq * (nope + rope)
        else:
            q = d * hq * (nope + rope)
        kv = d * (a.kv_lora_rank + rope) + a.kv_lora_rank + a.kv_lora_rank * hq * (nope + hv)
        return float(q + kv + hq * hv * d)
    h, hkv = a.effective_head_dim, a.effective_kv_heads
    proj = d * hq * h + 2 * d * hkv * h + hq * h * d
    bias = (hq * h + 2 * hkv * h) if a.attention_bias else 0
    return float(proj + bias)


def count_params(a: Architecture) -> ParamCount:
    """Total and active parameters from shapes (formulas in the module docstring)."""
    d = a.hidden_size
    vocab = a.vocab_size or 0
    attn = _attention_params(a)
    norms = 2 * d
    dense_mlp = 3.0 * d * (a.intermediate_size or 0)
    embedding = float(vocab * d)
    lm_head = 0.0 if a.tie_word_embeddings else float(vocab * d)
    if a.experts is not None and a.experts_per_token is not None:
        width = a.expert_intermediate_size or a.intermediate_size or 0
        expert = 3.0 * d * width
        shared = a.shared_experts * 3.0 * d * (a.shared_expert_intermediate_size or width)
        router = float(d * a.experts)
        moe_layers = a.layers - a.dense_layers
        routed_total = moe_layers * a.experts * expert
        layer_common = a.layers * (attn + norms) + a.dense_layers * dense_mlp
        moe_common = moe_layers * (shared + router)
        total = layer_common + moe_common + routed_total
        active = layer_common + moe_common + moe_layers * a.experts_per_token * expert
    else:
        routed_total = 0.0
        total = active = a.layers * (attn + norms + dense_mlp)
    outer = embedding + lm_head + d
    return ParamCount(
        total=float(a.params) if a.params is not None else total + outer,
        active=float(a.active_params)
        if a.active_params is not None
        else (float(a.params) if a.params is not None and not a.is_moe else active + outer),
        embedding=embedding,
        lm_head=lm_head,
        routed_experts=routed_total,
    )
