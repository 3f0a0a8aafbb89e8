"""The prefill queue's and the TPOT tail's closed forms (planning/queueing.py)."""

import math
import random
import statistics
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenscale.planning.queueing import (
    BusyTimes,
    compound_quantile,
    lognormal_points,
    lognormal_scv,
    mg1_wait_quantile_seconds,
    mg1_wait_seconds,
    residual_survival,
    seat_wait_survival,
    sum_quantile,
    wait_survival,
)


def test_exponential_service_is_mm1_exactly() -> None:
    rho, s = 0.6, 0.2
    assert mg1_wait_seconds(rho, s, 1.0) == pytest.approx(rho / (1 - rho) * s)
    # M/M/1: P(W > t) = rho exp(-t (1 - rho) / s)
    exact = s / (1 - rho) * math.log(rho / 0.01)
    assert mg1_wait_quantile_seconds(rho, s, None, 0.01) == pytest.approx(exact, rel=1e-6)
    # a lognormal service of C² = 1 has a heavier residual than the exponential's
    assert mg1_wait_quantile_seconds(rho, s, 1.0, 0.01) > exact


def _lindley_waits(rho: float, s: float, scv: float, n: int, seed: int) -> list[float]:
    """FIFO waits of ``n`` Poisson arrivals at one server (Lindley's recursion), the service
    of mean ``s`` identical (``scv`` 0) or lognormal with that ``C²``; the first tenth dropped."""
    rng = random.Random(seed)
    sigma = math.sqrt(math.log1p(scv)) if scv > 0 else 0.0
    mu = math.log(s) - sigma * sigma / 2.0
    waits, wait, gap_mean = [], 0.0, s / rho
    for _ in range(n):
        service = rng.lognormvariate(mu, sigma) if scv > 0 else s
        waits.append(wait)
        wait = max(0.0, wait + service - rng.expovariate(1.0 / gap_mean))
    return sorted(waits[n // 10 :])


def test_identical_prompts_wait_for_the_rest_of_one_prefill() -> None:
    # Llama-2-7B, 2,048-token prompts on an A100 (0.105 s prefill) at 0.5 req/s: at this load
    # the M/D/1 P99 wait is about the rest of one prefill, s (1 - 0.01/rho) = 0.085 s (a
    # second prompt ahead is rare); M/M/1's exponential tail says 0.18 s
    rho, s = 0.5 * 0.105, 0.105
    wait = mg1_wait_quantile_seconds(rho, s, 0.0, 0.01)
    # exactly, for a wait under one service: P(W ≤ t) = (1 − ρ)·e^{λt}
    assert wait == pytest.approx(math.log(0.99 / (1 - rho)) / 0.5, rel=0.01)
    assert wait == pytest.approx(s * (1 - 0.01 / rho), rel=0.05)
    assert wait < 0.6 * mg1_wait_quantile_seconds(rho, s, None, 0.01)


@pytest.mark.parametrize(
    ("rho", "scv"), [(0.5, 0.0), (0.85, 0.0), (0.3, 0.5), (0.8, 1.0), (0.6, 2.0)]
)
def test_the_wait_tail_is_the_queues_own(rho: float, scv: float) -> None:
    # the wait's P95 and P99 against simulated arrivals (200,000 a run): at heavy load identical
    # prompts wait about twice what one residual stretched to the P-K mean would say (the
    # queue's tail is a sum of residuals, not one)
    # (a heavy load's busy periods make one run's P99 a noisy sample: the median of three)
    s = 0.2
    runs = [_lindley_waits(rho, s, scv, 200_000, seed=seed) for seed in (1, 2, 3)]
    for tail in (0.05, 0.01):
        sampled = statistics.median(w[int((1 - tail) * len(w))] for w in runs)
        assert mg1_wait_quantile_seconds(rho, s, scv, tail) == pytest.approx(sampled, rel=0.06)


@given(rho=st.floats(0.05, 0.95), scv=st.floats(0.0, 4.0))
@settings(max_examples=25, deadline=None)
def test_the_wait_tail_integrates_to_the_pollaczek_khinchine_mean(rho: float, scv: float) -> None:
    # E[W] = ∫ P(W > t) dt: the wait's area is P-K's mean, whatever the load and spread
    s = 0.3
    mean = mg1_wait_seconds(rho, s, scv)
    ts = [s * 1e-4 * 1.02**i for i in range(1200)]  # to 10⁶·s·1e-4·… ≈ 5,000 s
    area = ts[0] * rho + sum(
        (b - a) * (wait_survival(a, rho, s, scv) + wait_survival(b, rho, s, scv)) / 2
        for a, b in pairwise(ts)
    )
    assert area == pytest.approx(mean, rel=0.02, abs=1e-4 * s)


@given(s=st.floats(0.01, 10.0), scv=st.floats(0.0, 5.0))
def test_the_residual_has_the_mean_pollaczek_khinchine_needs(s: float, scv: float) -> None:
    # E[R] = E[S²] / (2 E[S]) = s (1 + C²) / 2: integrate P(R > t) on a log grid
    ts = [s * 1e-4 * 1.05**i for i in range(420)]
    area = ts[0] + sum(
        (b - a) * (residual_survival(a, s, scv) + residual_survival(b, s, scv)) / 2
        for a, b in pairwise(ts)
    )
    assert area == pytest.approx(s * (1 + scv) / 2, rel=0.03)
    assert wait_survival(0.0, 0.3, s, scv) == pytest.approx(0.3)


def test_lognormal_points_carry_the_mean() -> None:
    pts = lognormal_points(1000.0, 4000.0)
    mean = sum(v * w for v, w in pts) / sum(w for _, w in pts)
    assert mean == pytest.approx(1000.0, rel=0.05)
    assert lognormal_scv(1000.0, 1000.0) == 0.0


@given(
    rho=st.floats(0.02, 0.97),
    scv=st.floats(0.0, 4.0),
    tail=st.sampled_from([0.01, 0.05]),
)
def test_the_tail_wait_grows_with_load_and_spread(rho: float, scv: float, tail: float) -> None:
    s = 0.1
    w = mg1_wait_quantile_seconds(rho, s, scv, tail)
    assert w >= 0.0
    assert mg1_wait_quantile_seconds(min(rho + 0.02, 0.99), s, scv, tail) >= w
    assert mg1_wait_seconds(rho, s, scv + 0.5) > mg1_wait_seconds(rho, s, scv)


@given(events=st.floats(0.5, 200.0), scv=st.floats(0.0, 3.0))
def test_compound_quantile_is_above_its_mean_and_grows_with_z(events: float, scv: float) -> None:
    p95 = compound_quantile(events, 0.1, scv, 1.645)
    p99 = compound_quantile(events, 0.1, scv, 2.326)
    assert events * 0.1 < p95 < p99


def test_sum_quantile_without_a_queue_is_the_own_quantile() -> None:
    own = ((0.1, 0.9), (1.0, 0.1))
    assert sum_quantile(own, 0.0, 0.0, 1.0, 0.05) == pytest.approx(1.0, rel=1e-3)
    assert sum_quantile(own, 0.5, 0.2, 1.0, 0.05) > 1.0


@given(
    rho=st.floats(0.02, 0.9),
    scv=st.floats(0.0, 3.0),
    stretch=st.floats(0.0, 2.0),
    extra=st.floats(0.0, 0.5),
    cap=st.floats(0.0, 5.0),
)
def test_a_prompt_that_waited_never_finishes_sooner(
    rho: float, scv: float, stretch: float, extra: float, cap: float
) -> None:
    # busy times equal to the own ones and no stretch: the sum as before; anything a waiting
    # prompt adds (a fuller last step, the prompts that arrived behind it) only lifts the tail
    own = ((0.1, 0.7), (0.4, 0.25), (1.2, 0.05))
    plain = sum_quantile(own, rho, 0.2, scv, 0.01)
    same = BusyTimes(tuple(t for t, _ in own), 0.0, (0.0, 0.0, 0.0))
    assert sum_quantile(own, rho, 0.2, scv, 0.01, same) == pytest.approx(plain, rel=1e-3)
    busier = BusyTimes(tuple(t + extra for t, _ in own), stretch, (cap, cap, cap))
    assert sum_quantile(own, rho, 0.2, scv, 0.01, busier) >= plain * (1 - 1e-3)


def test_the_wait_stretches_until_the_last_step_is_full() -> None:
    # one point: a prompt that waited w finishes at w + 0.3 + 0.5·min(w, 0.4). Its 1 % tail is
    # the wait's 1 % quantile w99 mapped through that line (the prompts that found the queue
    # empty take 0.3 s and never exceed it)
    rho, s, scv = 0.5, 0.2, 1.0
    w99 = mg1_wait_quantile_seconds(rho, s, scv, 0.01)
    assert w99 > 0.4
    own = ((0.3, 1.0),)
    got = sum_quantile(own, rho, s, scv, 0.01, BusyTimes((0.3,), 0.5, (0.4,)))
    assert got == pytest.approx(w99 + 0.3 + 0.5 * 0.4, rel=1e-3)
    uncapped = sum_quantile(own, rho, s, scv, 0.01, BusyTimes((0.3,), 0.5, (10.0,)))
    assert uncapped == pytest.approx(1.5 * w99 + 0.3, rel=1e-3)


def test_a_seat_chain_at_a_steady_holding_time_is_erlang_c() -> None:
    # two seats, one in use on average (a = λ·S = 1): Erlang C(2, 1) = 1/3; the wait past t
    # decays at (c − a)/S
    def steady(k: int) -> float:
        return k / 4.0

    assert seat_wait_survival(0.0, 2, 0.25, steady) == pytest.approx(1.0 / 3.0)
    assert seat_wait_survival(2.0, 2, 0.25, steady) == pytest.approx(math.exp(-0.5) / 3.0)


def test_a_seat_chain_whose_completions_do_not_grow_with_the_count_is_mm1() -> None:
    # a replica whose steps slow in proportion to the batch finishes at one rate however many
    # hold seats: the count in use is M/M/1's, P(N ≥ c) = ρ^c — far above Erlang's at ρ = 0.6
    def flat(k: int) -> float:
        return 1.0

    assert seat_wait_survival(0.0, 10, 0.6, flat) == pytest.approx(0.6**10)
    erlang = seat_wait_survival(0.0, 10, 0.6, float)
    assert erlang < 1e-6 < seat_wait_survival(0.0, 10, 0.6, flat)


@given(
    seats=st.integers(1, 400),
    load=st.floats(0.01, 0.99),
    slowdown=st.floats(0.0, 1.0),
    t=st.floats(0.0, 30.0),
)
def test_a_seat_wait_grows_with_the_load_and_is_a_probability(
    seats: int, load: float, slowdown: float, t: float
) -> None:
    # completions k/(1 + slowdown·(k − 1)): from Erlang's (0) to a flat rate (1)
    def rate(k: int) -> float:
        return k / (1.0 + slowdown * (k - 1))

    top = rate(seats)
    low = seat_wait_survival(t, seats, load * top * 0.9, rate)
    high = seat_wait_survival(t, seats, load * top, rate)
    assert 0.0 <= low <= high <= 1.0
