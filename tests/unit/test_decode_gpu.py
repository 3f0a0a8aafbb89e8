"""The per-GPU decode term: a fitted factor on the decode bandwidth of the GPU it was fitted
for, and nothing else moved."""

import dataclasses

import pytest

from tests.helpers import spec
from tokenscale.planning import PerfModel, plan_service, replica_perf_model
from tokenscale.planning.decode_gpu import DECODE_BANDWIDTH_FACTOR, decode_bandwidth_factor


def _perf(gpu: str) -> PerfModel:
    s = spec(hardware={"gpu": gpu, "tensorParallelSize": 1})
    return replica_perf_model(s, plan_service(s))


def test_a_fitted_gpu_reads_at_its_factor_and_others_at_the_assumption() -> None:
    h100, a100 = _perf("H100-SXM-80GB"), _perf("A100-SXM-80GB")
    assert h100.decode_bandwidth_factor == DECODE_BANDWIDTH_FACTOR["H100-SXM-80GB"] < 1.0
    assert a100.decode_bandwidth_factor == decode_bandwidth_factor("A100-SXM-80GB") == 1.0
    assert decode_bandwidth_factor("no-such-gpu") == 1.0


def test_the_factor_scales_the_decode_step_and_leaves_the_prefill_compute_alone() -> None:
    h100 = _perf("H100-SXM-80GB")
    plain = dataclasses.replace(h100, decode_bandwidth_factor=1.0)
    overhead = h100.assumptions.step_overhead_seconds
    f = h100.decode_bandwidth_factor
    # a batch-1 step is memory-bound: its bandwidth part grows by exactly 1 / factor
    assert h100.step_seconds(1.0) - overhead == pytest.approx(
        (plain.step_seconds(1.0) - overhead) / f, rel=1e-6
    )
    # a long prefill is compute-bound: unchanged
    assert h100.prefill_seconds(8192) == pytest.approx(plain.prefill_seconds(8192), rel=1e-9)
