"""A prefill's cost over a spread of prompts (PerfModel.prompt_grid, prefill_spread_seconds,
prefill_service_seconds / prefill_service_scv): attention grows with the square of the prompt,
so the mean prefill is not the mean prompt's, and the queue's service is wider than the
prompts."""

import dataclasses
import math
import random
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import spec as make_spec
from tokenscale.planning import Conditions, resolve
from tokenscale.planning.performance import PerfModel
from tokenscale.planning.planner import perf_at


def _perf(mean: int, p99: int | None, budget: int = 2048) -> PerfModel:
    prompts: dict[str, int] = {"mean": mean}
    if p99 is not None:
        prompts["p99"] = p99
    spec = make_spec(
        model={"name": "meta-llama/Llama-3.1-8B-Instruct", "catalog": "llama-3.1-8b"},
        hardware={"gpu": "H100-SXM-80GB", "tensorParallelSize": 1},
        workload={
            "rps": {"mean": 1.0},
            "inputTokens": prompts,
            "outputTokens": {"mean": 150, "p99": 700},
            "maxContextTokens": 131072,
        },
        slo={"ttftP99Seconds": 10.0, "tpotP99Seconds": 0.08},
    )
    return perf_at(resolve(spec), Conditions(workload=spec.workload), 1, budget)


def _at_mean(perf: PerfModel) -> float:
    return perf.prefill_seconds(perf.mean_input_tokens)


def test_identical_prompts_or_an_unknown_spread_take_the_mean_prompts_prefill() -> None:
    same = _perf(15000, 15000)
    assert same.prompt_length_scv == 0.0
    assert same.prompt_grid == ((15000.0, 1.0),)
    assert same.mean_prefill_seconds == pytest.approx(_at_mean(same))
    assert same.prefill_service_scv(4.0) == 0.0
    unknown = dataclasses.replace(_perf(15000, 60000), prompt_length_scv=None)
    assert unknown.prompt_grid == ((15000.0, 1.0),)
    assert unknown.mean_prefill_seconds == pytest.approx(_at_mean(unknown))
    assert unknown.prefill_service_scv(4.0) is None


def test_long_prompts_with_a_long_tail_cost_more_than_the_mean_prompt() -> None:
    """15k-token prompts with a 60k P99 (Mooncake's shape): the square term of attention makes
    the mean prefill at least 10 % longer than the mean prompt's, and the queue's service
    wider than the prompts' lengths."""
    perf = _perf(14639, 60161)
    assert perf.mean_prefill_seconds > 1.1 * _at_mean(perf)
    scv = perf.prefill_service_scv(4.0)
    assert scv is not None
    assert perf.prompt_length_scv is not None
    assert scv > 1.5 * perf.prompt_length_scv


def test_chat_length_prompts_are_close_to_linear() -> None:
    """2,000-token prompts with a 6,000 P99: attention is a few per cent of the FLOPs, and the
    mean prefill within 5 % of the mean prompt's."""
    perf = _perf(2000, 6000)
    assert perf.mean_prefill_seconds == pytest.approx(_at_mean(perf), rel=0.05)


@settings(max_examples=25, deadline=None)
@given(st.floats(0.05, 3.0))
def test_the_grid_keeps_the_planners_mean_and_spread(scv: float) -> None:
    perf = dataclasses.replace(_perf(8000, 20000), prompt_length_scv=scv)
    grid = perf.prompt_grid
    assert sum(w for _, w in grid) == pytest.approx(1.0)
    mean = sum(n * w for n, w in grid)
    assert mean == pytest.approx(8000.0)
    spread = sum(w * (n - mean) ** 2 for n, w in grid) / mean**2
    assert spread == pytest.approx(scv, rel=0.02)


@settings(max_examples=20, deadline=None)
@given(st.floats(0.1, 2.0), st.floats(0.0, 60.0))
def test_the_mean_prefill_is_never_below_the_mean_prompts(scv: float, batch: float) -> None:
    """Jensen: a prefill's time is convex in its length (linear FLOPs plus attention's square),
    so no spread of prompts makes the mean prefill cheaper than the mean prompt's."""
    perf = dataclasses.replace(_perf(6000, 18000), prompt_length_scv=scv)
    assert perf.mean_prefill_seconds >= _at_mean(perf) * (1.0 - 1e-9)
    found = perf.prefill_service_scv(batch)
    assert found is not None
    assert found >= 0.0


def test_the_service_moments_agree_with_sampled_prompts() -> None:
    """The service's mean and ``C²`` at a batch, from the grid's moments, against the same
    service worked out prompt by prompt over 40,000 lognormal prompts of that mean and spread."""
    perf = _perf(14639, 60161)
    scv = perf.prompt_length_scv
    assert scv is not None
    batch = 6.0
    sigma2 = math.log1p(scv)
    mu = math.log(perf.mean_input_tokens) - sigma2 / 2.0
    rng = random.Random(7)
    rate = perf.tp * perf.flops_per_s * perf.assumptions.prefill_compute_efficiency
    per_token = perf.step_seconds(batch) / (perf.max_num_batched_tokens - batch)
    services = []
    for _ in range(40000):
        n = math.exp(rng.gauss(mu, math.sqrt(sigma2)))
        services.append(n * per_token + perf.prefill_flops(n) / rate)
    mean = statistics.fmean(services)
    assert perf.prefill_service_seconds(batch) == pytest.approx(mean, rel=0.03)
    sampled = statistics.pvariance(services) / mean**2
    assert perf.prefill_service_scv(batch) == pytest.approx(sampled, rel=0.15)
