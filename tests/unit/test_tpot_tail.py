"""The TPOT tail over the spread of answer lengths (planning/performance.py): short answers see
the widest share of chunk-carrying steps, so the percentile is taken over the answer lengths'
mixture, not at the mean answer."""

import dataclasses
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenscale.api.manifest import parse_manifests
from tokenscale.planning import Conditions, plan_at, resolve
from tokenscale.planning.operating_point import Z_P95, Z_P99
from tokenscale.planning.performance import (
    ANSWER_QUANTILES,
    _decay_root,
    _intervals,
    answer_lengths,
    share_spread,
)
from tokenscale.planning.planner import perf_at
from tokenscale.simulation.capacity import run_one_replica
from tokenscale.simulation.replica import replica_config


def _normal_tail(x: float) -> float:
    return 0.5 * math.erfc(x / math.sqrt(2.0))


@given(mean=st.floats(min_value=1, max_value=20_000), below=st.floats(min_value=0, max_value=1))
def test_without_a_spread_every_answer_is_the_mean(mean: float, below: float) -> None:
    """No P99 above the mean: one length, and the spread is the closed form z/√k."""
    assert answer_lengths(mean, mean * below) == (max(mean, 1.0),)
    k = max(max(mean, 1.0) - 1.0, 1.0)
    assert share_spread(mean, mean * below, Z_P99) == Z_P99 / math.sqrt(k)


@given(
    mean=st.floats(min_value=20, max_value=5_000),
    ratio=st.floats(min_value=1.05, max_value=8.0),
    z=st.sampled_from([Z_P95, Z_P99]),
)
def test_the_spread_solves_the_mixture_and_is_wider_than_at_the_mean(
    mean: float, ratio: float, z: float
) -> None:
    """``y`` puts exactly the tail's share of the mixture above it, and is at least the mean
    answer's ``z/√k``: the short answers widen the tail."""
    p99 = mean * ratio
    lengths = answer_lengths(mean, p99)
    assert len(lengths) == ANSWER_QUANTILES
    assert list(lengths) == sorted(lengths)
    ks = _intervals(mean, p99)
    y = share_spread(mean, p99, z)
    above = sum(_normal_tail(y * math.sqrt(k)) for k in ks) / len(ks)
    assert above == pytest.approx(_normal_tail(z), rel=1e-6)
    assert y >= z / math.sqrt(max(mean - 1.0, 1.0)) * (1 - 1e-9)


@given(
    ks=st.lists(st.floats(min_value=1, max_value=10_000), min_size=1, max_size=40),
    q=st.floats(min_value=1e-4, max_value=0.9),
)
def test_the_backlog_root_solves_its_equation(ks: list[float], q: float) -> None:
    g = _decay_root(tuple(ks), q)
    assert g > 0
    mean = sum(math.exp(-g * k) for k in ks) / len(ks)
    assert math.isclose(mean, q, rel_tol=1e-4)


TAIL_SPEC = """
apiVersion: tokenscale.io/v1alpha1
kind: InferenceService
metadata: {name: tail}
spec:
  model: {name: Qwen/Qwen2.5-32B-Instruct, catalog: qwen2.5-32b}
  hardware: {gpu: A100-SXM-80GB, tensorParallelSize: 4}
  workload:
    rps: {mean: 1}
    inputTokens: {mean: 1000, p99: 4000}
    outputTokens: {mean: 250, p99: 750}
    maxContextTokens: 32768
  slo: {ttftP99Seconds: 1.0, tpotP99Seconds: 0.05}
"""


def _lognormal(rng: random.Random, mean: float, p99: float) -> int:
    b = 2.326
    sigma = b - math.sqrt(b * b - 2.0 * math.log(p99 / mean))
    return max(1, round(rng.lognormvariate(math.log(mean) - sigma * sigma / 2.0, sigma)))


def test_the_answer_spread_brings_the_tpot_tail_toward_the_simulators() -> None:
    """Qwen2.5-32B on one A100 at TP 4, lognormal sizes (1,000 / P99 4,000 in, 250 / P99 750
    out): at the rate the simulator sustains near the SLO batch, the requests over the TPOT P99
    are short answers; the estimate over the answers' spread is above the one at the mean
    answer and nearer the simulator's TPOT P99."""
    rng = random.Random(7)
    pairs = [
        (min(_lognormal(rng, 1000, 4000), 30000), _lognormal(rng, 250, 750)) for _ in range(4000)
    ]
    s = parse_manifests(TAIL_SPEC)[0].spec
    r = resolve(s, "tail")
    c = Conditions(workload=s.workload, knee="slo")
    plan = plan_at(r, c, 4)
    perf = perf_at(r, c, 4, plan.max_num_batched_tokens)
    at_mean = dataclasses.replace(perf, tail_output_tokens=0.0)
    rate = 7.0
    rec = run_one_replica(replica_config(s, plan, 512), rate, pairs, 2100, seed=1)
    outs = sorted(rec.outcomes, key=lambda o: o.arrival_s)[420:]
    tpots = sorted(o.tpot_s for o in outs if o.output_tokens > 1)
    simulated = tpots[int(0.99 * len(tpots))]
    mean_s = sum(o.ttft_s + o.output_tokens * o.tpot_s for o in outs) / len(outs)
    batch = rate * mean_s  # Little's law: the batch the replica carried
    spread = perf.tpot_quantile_seconds(batch, Z_P99)
    single = at_mean.tpot_quantile_seconds(batch, Z_P99)
    assert spread > single
    assert abs(spread - simulated) < abs(single - simulated)
