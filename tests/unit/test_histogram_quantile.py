"""The operator's ``histogram_quantile`` (metrics/quantile.py): Prometheus' rule, its edge cases,
and agreement with the simulator's own implementation on well-formed histograms. The
comparison with a real Prometheus is tests/integration/test_histogram_quantile.py."""

import itertools
import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenscale.catalog.vllm_metrics import INTER_TOKEN_BUCKETS, TTFT_BUCKETS
from tokenscale.metrics.quantile import Envelope, bucket_quantile, envelope, le_bound, quantile
from tokenscale.simulation.histogram import histogram_quantile as simulated_quantile

INF = math.inf
Q = st.floats(min_value=0.0, max_value=1.0)
BOUNDS = st.sampled_from([TTFT_BUCKETS, INTER_TOKEN_BUCKETS])
COUNTS = st.integers(min_value=0, max_value=500)
"""Per-bucket counts; divided by 120 below, as a rate over a 2-minute window is."""


def _cumulative(bounds: tuple[float, ...], per_bucket: list[float]) -> list[tuple[float, float]]:
    return list(zip((*bounds, INF), itertools.accumulate(per_bucket), strict=True))


@given(BOUNDS, st.data(), Q)
@settings(max_examples=300, deadline=None)
def test_agrees_with_the_simulators_quantile_on_well_formed_histograms(
    bounds: tuple[float, ...], data: st.DataObject, q: float
) -> None:
    per_bucket = [
        c / 120
        for c in data.draw(st.lists(COUNTS, min_size=len(bounds) + 1, max_size=len(bounds) + 1))
    ]
    ours = bucket_quantile(q, _cumulative(bounds, per_bucket))
    theirs = simulated_quantile(q, bounds, [0.0] * len(per_bucket), per_bucket)
    if theirs is None:
        assert math.isnan(ours)
    elif q == 0.0:  # Prometheus: rank 0 in an empty first bucket is 0/0 (the simulator: 0)
        assert math.isnan(ours) or ours == theirs
    else:
        assert math.isclose(ours, theirs, rel_tol=1e-9, abs_tol=1e-12)


@given(BOUNDS, st.data(), st.lists(Q, min_size=2, max_size=5))
@settings(max_examples=200, deadline=None)
def test_a_higher_quantile_is_never_lower_and_lies_in_the_ranks_bucket(
    bounds: tuple[float, ...], data: st.DataObject, qs: list[float]
) -> None:
    per_bucket = [
        float(c)
        for c in data.draw(st.lists(COUNTS, min_size=len(bounds) + 1, max_size=len(bounds) + 1))
    ]
    env = envelope(_cumulative(bounds, per_bucket))
    if isinstance(env, str):
        assert sum(per_bucket) == 0
        return
    answers = [quantile(q, env) for q in sorted(q for q in qs if q > 0)]
    assert answers == sorted(answers)
    for answer in answers:
        assert 0.0 <= answer <= bounds[-1]


@given(st.data(), Q)
@settings(max_examples=200, deadline=None)
def test_order_duplicates_and_decreases_are_treated_as_prometheus_does(
    data: st.DataObject, q: float
) -> None:
    """Shuffled buckets, a bucket split in two with the same bound (summed back), and a count
    lower than the one before it (raised to it) answer as the fixed-up histogram does."""
    bounds = TTFT_BUCKETS
    cumulative = _cumulative(
        bounds,
        [
            float(c)
            for c in data.draw(st.lists(COUNTS, min_size=len(bounds) + 1, max_size=len(bounds) + 1))
        ],
    )
    expected = bucket_quantile(q, cumulative)
    shuffled = list(cumulative)
    random.Random(data.draw(st.integers())).shuffle(shuffled)
    i = data.draw(st.integers(min_value=0, max_value=len(cumulative) - 1))
    bound, count = cumulative[i]
    split = [*cumulative[:i], (bound, count / 4), (bound, count - count / 4), *cumulative[i + 1 :]]
    for variant in (shuffled, split):
        answer = bucket_quantile(q, variant)
        assert (math.isnan(answer) and math.isnan(expected)) or answer == expected
    j = data.draw(st.integers(min_value=1, max_value=len(cumulative) - 2))
    lowered = list(cumulative)
    lowered[j] = (cumulative[j][0], cumulative[j - 1][1] * 0.5)
    lifted = list(cumulative)
    lifted[j] = (cumulative[j][0], cumulative[j - 1][1])
    a, b = bucket_quantile(q, lowered), bucket_quantile(q, lifted)
    assert (math.isnan(a) and math.isnan(b)) or a == b


def test_the_edge_cases_prometheus_answers_nan_or_a_bound() -> None:
    full = [(0.1, 2.0), (0.2, 6.0), (INF, 8.0)]
    assert math.isnan(bucket_quantile(0.5, [(0.1, 2.0), (0.2, 6.0)])), "no +Inf bucket"
    assert math.isnan(bucket_quantile(0.5, [(INF, 8.0)])), "fewer than 2 buckets"
    assert math.isnan(bucket_quantile(0.5, [(0.1, 0.0), (INF, 0.0)])), "no observations"
    assert math.isnan(bucket_quantile(math.nan, full))
    assert bucket_quantile(-0.1, full) == -INF
    assert bucket_quantile(1.1, full) == INF
    # the rank in the +Inf bucket: the largest finite bound
    assert bucket_quantile(0.99, full) == 0.2
    # the first bucket starts at 0 when its bound is positive, else answers its bound
    assert bucket_quantile(0.5, [(0.1, 2.0), (INF, 2.0)]) == 0.05
    assert bucket_quantile(0.5, [(-1.0, 2.0), (0.1, 4.0), (INF, 4.0)]) == -1.0
    # linear within the bucket holding the rank: rank 4 of 8 is 2 of the 4 in (0.1, 0.2]
    assert math.isclose(bucket_quantile(0.5, full), 0.15)


def test_float_error_of_summed_rates_is_not_an_observation() -> None:
    """A count within a relative 1e-12 of the one before it is taken as equal (newer
    Prometheus): the rank then cannot land in a bucket made of rounding error."""
    env = envelope([(0.1, 1.0), (0.2, 1.0 + 1e-15), (INF, 2.0)])
    assert isinstance(env, Envelope)
    assert env.counts == (1.0, 1.0, 2.0)


def test_le_labels_are_read_as_go_reads_floats() -> None:
    assert le_bound("+Inf") == INF
    assert le_bound("Inf") == INF
    assert le_bound("0.025") == 0.025
    assert le_bound("1.0") == le_bound("1") == 1.0
    assert le_bound("1e-3") == 0.001
    assert le_bound("0x1p-2") == 0.25
    for unread in (None, "", " 1", "1_000", "fast", "NaN"):
        assert le_bound(unread) is None, unread
