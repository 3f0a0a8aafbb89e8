"""The LoRA timing model against the same model without adapters (``planning/lora.py``): the
adapters' kernels are work a step shares among its sequences, so they never pull the knee in
(``knee_floor_seconds``), and a prompt riding in decode steps adds none of them
(``mean_prefill_seconds``): what LoRA adds to a request's TPOT is its steps' kernels."""

import dataclasses
from functools import cached_property

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import spec
from tokenscale.planning import forecast_conditions, resolve
from tokenscale.planning.formulas import chunk_count
from tokenscale.planning.lora import LoraPerfModel
from tokenscale.planning.operating_point import knee_batch
from tokenscale.planning.performance import PerfModel
from tokenscale.planning.planner import perf_at

MAX_BATCH = 1024


@dataclasses.dataclass(frozen=True)
class FixedStepCost(PerfModel):
    """The model without adapters whose every step pays ``extra`` seconds more, its floor too."""

    extra: float = 0.0

    def _step_seconds(self, batch: float) -> float:
        return super()._step_seconds(batch) + self.extra

    @cached_property
    def weight_floor_seconds(self) -> float:
        return super().weight_floor_seconds + self.extra


def _models(
    count: int, exponent: float, rank: int, output_mean: int
) -> tuple[LoraPerfModel, PerfModel]:
    """The LoRA model with every adapter resident (``maxLoras`` = the count: no swaps) and the
    same replica without adapters, at one chunk budget."""
    s = spec(
        workload={
            "rps": {"mean": 20},
            "outputTokens": {"mean": output_mean, "p99": 4 * output_mean},
        },
        lora={
            "zipfExponent": exponent,
            "maxLoras": count,
            "adapters": [
                {"name": f"a{i}", "source": f"/adapters/a{i}", "rank": rank} for i in range(count)
            ],
        },
    )
    r = resolve(s, "knee")
    cond = forecast_conditions(r)
    on = perf_at(r, cond, 1, 2048)
    off = perf_at(dataclasses.replace(r, lora=None), cond, 1, 2048)
    assert isinstance(on, LoraPerfModel)
    assert on.lora is not None
    assert on.lora.gpu_miss == 0.0
    return on, off


CASES = {
    "count": st.integers(1, 128),
    "exponent": st.sampled_from([0.0, 0.5, 1.0, 1.5]),
    "rank": st.sampled_from([8, 16, 64]),
    "output_mean": st.sampled_from([50, 200, 800]),
}


@settings(max_examples=20, deadline=None)
@given(**CASES)
def test_adapters_never_pull_the_knee_below_the_same_fixed_per_step_cost(
    count: int, exponent: float, rank: int, output_mean: int
) -> None:
    """However the traffic spreads over the adapters, the knee is at least that of the model
    without adapters whose every step pays the one-adapter kernels: more distinct adapters in
    a batch add work its sequences share, never work per sequence."""
    on, off = _models(count, exponent, rank, output_mean)
    assert on.lora is not None
    one = on.lora.kernel_seconds_for(1.0, on.tp, on._bw)
    fixed = FixedStepCost(
        **{f.name: getattr(off, f.name) for f in dataclasses.fields(off)}, extra=one
    )
    ratio = on.assumptions.knee_tpot_ratio
    assert knee_batch(on, MAX_BATCH, ratio) >= knee_batch(fixed, MAX_BATCH, ratio)


@settings(max_examples=10, deadline=None)
@given(**CASES)
def test_a_prompt_riding_in_decode_steps_adds_no_lora_kernels(
    count: int, exponent: float, rank: int, output_mean: int
) -> None:
    """A step launches its LoRA kernels once for all the tokens it schedules, and the prompt's
    adapter is among the batch's: TPOT with LoRA is the base TPOT plus the kernels of the
    batch's adapters (the simulator's mixed step), a prompt prefilled alone pays the
    one-adapter kernels per chunk, and one prefilled under load its steps' kernels."""
    on, off = _models(count, exponent, rank, output_mean)
    assert on.lora is not None
    assert on.mean_prefill_seconds == pytest.approx(off.mean_prefill_seconds)
    for batch in (1.0, 16.0, 100.0, 400.0):
        kernels = on.lora.kernel_seconds(batch, on.tp, on._bw)
        assert on.tpot_seconds(batch) == pytest.approx(off.tpot_seconds(batch) + kernels)
    prompt = 5000.0
    chunks = chunk_count(prompt, on.max_num_batched_tokens)
    one = on.lora.kernel_seconds_for(1.0, on.tp, on._bw)
    assert on.prefill_seconds(prompt) == pytest.approx(off.prefill_seconds(prompt) + chunks * one)
    # under load each of its chunks is a step of the batch's decodes: their adapters' kernels
    batch = 100.0
    riding = chunk_count(prompt, on.max_num_batched_tokens - int(batch))
    kernels = on.lora.kernel_seconds(batch + 1.0, on.tp, on._bw)
    assert on.own_ttft_seconds(batch, prompt) == pytest.approx(
        off.own_ttft_seconds(batch, prompt) + riding * kernels
    )
