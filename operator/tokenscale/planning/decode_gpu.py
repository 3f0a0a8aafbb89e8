"""The per-GPU decode term: how much of the decode bandwidth one GPU type's kernels reach,
relative to the ``decodeBandwidthEfficiency`` assumption.

One efficiency for every GPU missed decode on both sets of the accuracy yardstick (the A100
and the H100 rows of today's engines want different ones). The factor multiplies the
decode bandwidth (weights and KV read per step) of the GPU it is fitted for; a GPU without
one keeps 1.0 (the assumption alone). Fitted with ``python benchmarks/accuracy_refit.py --gpu``
on the fit set's decode points of today's engines (vLLM ≥ 0.6: those of earlier engines carry
their own step cost, benchmarks/accuracy.py's ``ENGINE_STEP_OVERHEAD_S``), reported on the
held-out sources (docs/accuracy.md, "Decode across GPU generations").
"""

#: GPU catalog key → factor on the decode bandwidth efficiency, each with its fit.
DECODE_BANDWIDTH_FACTOR: dict[str, float] = {
    # fit: vLLM PR 23197's Llama-3.1-8B BF16 and INT4 batch latencies on one H100 (vLLM 0.10.1,
    # batch 1-16, 8 points); held out: GPUStack's Qwen3-8B TPOTs (vLLM 0.11.0, concurrency 1-8)
    "H100-SXM-80GB": 0.91,
}


def decode_bandwidth_factor(gpu_key: str) -> float:
    """The fitted factor for ``gpu_key`` (a catalog key), 1.0 where none was fitted."""
    return DECODE_BANDWIDTH_FACTOR.get(gpu_key, 1.0)
