"""Invariants of the two fitted terms of issue 34's KV and TTFT round: the profiling run's
sampler peak (``planning/memory.py``) and the request overhead per prompt token
(``PerfModel.request_overhead_seconds``)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import spec
from tokenscale.api.model import Architecture
from tokenscale.catalog.models import find_model
from tokenscale.planning import plan_service, replica_perf_model
from tokenscale.planning.formulas import GIB
from tokenscale.planning.memory import SAMPLER_BYTES_PER_LOGIT, activation_peak_bytes


def _arch(key: str) -> Architecture:
    entry = find_model(key)
    assert entry is not None
    return entry.architecture


def test_the_sampler_peak_reproduces_the_fit_set_s_start_up_logs() -> None:
    """The llm-d H100 logs (S 1,024, T 8,192): Llama-3.1-8B's peak 4.76 GiB and the 70B's
    (TP 2) 4.84 GiB, within the logs' 0.01 GiB rounding and the fit's spread; the two differ by
    the held forward output, ``T × (8,192 − 4,096) × 2 B``."""
    small, big = _arch("llama-3.1-8b"), _arch("llama-3.1-70b")
    at_8b = activation_peak_bytes(small, 1, 8192, 1024) / GIB
    at_70b = activation_peak_bytes(big, 2, 8192, 1024) / GIB
    assert at_8b == pytest.approx(4.76, abs=0.02)
    assert at_70b == pytest.approx(4.84, abs=0.02)
    assert (at_70b - at_8b) * GIB == pytest.approx(8192 * (8192 - 4096) * 2.0)
    assert 38.0 < SAMPLER_BYTES_PER_LOGIT < 39.0


@given(
    tokens=st.integers(min_value=16, max_value=65_536),
    more_tokens=st.integers(min_value=0, max_value=65_536),
    seqs=st.integers(min_value=1, max_value=4096),
    more_seqs=st.integers(min_value=0, max_value=4096),
    tp=st.sampled_from((1, 2, 4, 8)),
)
def test_the_activation_peak_never_shrinks_as_the_budgets_grow(
    tokens: int, more_tokens: int, seqs: int, more_seqs: int, tp: int
) -> None:
    arch = _arch("llama-3.1-8b")
    base = activation_peak_bytes(arch, tp, tokens, seqs)
    assert activation_peak_bytes(arch, tp, tokens + more_tokens, seqs) >= base
    assert activation_peak_bytes(arch, tp, tokens, seqs + more_seqs) >= base
    # the sampler sees at most one row per token of the dummy step
    assert activation_peak_bytes(arch, tp, tokens, tokens + more_seqs) == activation_peak_bytes(
        arch, tp, tokens, tokens
    )


_SPEC = spec()
_PERF = replica_perf_model(_SPEC, plan_service(_SPEC))


@given(
    prompt=st.floats(min_value=0.0, max_value=200_000.0),
    extra=st.floats(min_value=0.0, max_value=200_000.0),
)
def test_the_request_overhead_is_linear_in_the_prompt_and_outside_the_prefill(
    prompt: float, extra: float
) -> None:
    a = _PERF.assumptions
    here, there = (
        _PERF.request_overhead_seconds(prompt),
        _PERF.request_overhead_seconds(prompt + extra),
    )
    assert here >= a.request_overhead_seconds
    assert there - here == pytest.approx(extra * a.request_overhead_per_token_seconds, abs=1e-12)
    # idle TTFT = the overhead + the prefill: the prefill (GPU time) does not carry it
    if prompt >= 1.0:
        own = _PERF.own_ttft_seconds(0.0, prompt)
        prefill = _PERF.prefill_seconds(
            prompt * (1.0 - _PERF.prefix_cache_hit_rate), prompt * _PERF.prefix_cache_hit_rate
        )
        assert own == pytest.approx(prefill + here)
