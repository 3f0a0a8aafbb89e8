"""The prompts' spread cut at the longest prompt vLLM accepts (``queueing.prompt_scv``): a
heavy log-normal tail's second moment lives far out, where a bounded context has no prompt."""

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenscale.api.workload import TokenDistribution
from tokenscale.planning.queueing import (
    Z_P99,
    lognormal_scv,
    prompt_scv,
    truncated_lognormal_scv,
)


@settings(max_examples=60, deadline=None)
@given(mean=st.floats(10, 10_000), ratio=st.floats(1.05, 12), cut=st.floats(1.5, 200))
def test_the_cut_spread_rises_with_the_cut_to_the_whole_lognormal(
    mean: float, ratio: float, cut: float
) -> None:
    p99 = mean * ratio
    lower = truncated_lognormal_scv(mean, p99, p99 * cut)
    higher = truncated_lognormal_scv(mean, p99, p99 * cut * 2)
    whole = lognormal_scv(mean, p99)
    assert 0.0 <= lower <= higher * (1 + 1e-9) + 1e-12
    assert higher <= whole * (1 + 1e-9) + 1e-12
    assert truncated_lognormal_scv(mean, p99, p99 * 1e9) == pytest.approx(whole, rel=1e-6)


def test_the_cut_spread_is_the_sampled_one() -> None:
    """A sample of the log-normal through mean 1,930 and P99 19,976 with nothing above 31,594
    tokens (a 32k context less a 1,174-token answer) has the C² the formula gives, about 3.3,
    where the whole log-normal's is 7.6."""
    mean, p99, most = 1930.5, 19976.0, 31594.0
    sigma = Z_P99 - math.sqrt(Z_P99 * Z_P99 - 2.0 * math.log(p99 / mean))
    mu = math.log(mean) - sigma * sigma / 2.0
    rng = random.Random(0)
    kept = [x for x in (rng.lognormvariate(mu, sigma) for _ in range(400_000)) if x <= most]
    m = sum(kept) / len(kept)
    var = sum((x - m) ** 2 for x in kept) / len(kept)
    assert truncated_lognormal_scv(mean, p99, most) == pytest.approx(var / (m * m), rel=0.05)
    assert lognormal_scv(mean, p99) > 2 * truncated_lognormal_scv(mean, p99, most)


def test_prompt_scv_cuts_only_above_the_stated_tail() -> None:
    tokens = TokenDistribution(mean=2000, p99=20000)
    assert prompt_scv(tokens) == lognormal_scv(2000, 20000)
    assert prompt_scv(tokens, 15000) == lognormal_scv(2000, 20000)  # a cut below the P99
    assert prompt_scv(tokens, 31000) == truncated_lognormal_scv(2000, 20000, 31000)
    assert prompt_scv(TokenDistribution(mean=2000), 31000) is None
