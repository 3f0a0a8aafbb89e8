"""``tokenscale bench`` against a local OpenAI-compatible streaming server (a fake engine).

Real HTTP and SSE over a socket; the server (tests/support/openai_server.py) speaks vLLM's chunk
format and misbehaves on demand: HTTP errors, stalls, no /tokenize, dying mid-phase.
"""

import asyncio
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tests.support.openai_server import OpenAIServer
from tokenscale.bench import BenchConfig, BenchProfile, BenchState, partial_profile, run_bench
from tokenscale.cli.app import app

ROOT = Path(__file__).resolve().parents[2]


def _run(cfg: BenchConfig) -> BenchProfile:
    return asyncio.run(run_bench(cfg, BenchState(), lambda what, fraction: None))


def _cfg(url: str, **kw: object) -> BenchConfig:
    base: dict[str, object] = {
        "url": url,
        "model": "fake",
        "concurrency": (1, 4, 16),
        "input_tokens": 500,
        "output_tokens": 20,
        "step_requests": 32,
        "baseline_requests": 3,
        "mix": False,
        "request_timeout_s": 10.0,
    }
    base.update(kw)
    return BenchConfig(**base)  # type: ignore[arg-type]


def test_ramp_measures_what_the_engine_does(server: Callable[..., OpenAIServer]) -> None:
    # 10 ms tokens: slow enough that the client's own overhead on a busy 2-core machine does
    # not blur the engine's knee (at 4 ms a loaded machine measured a knee at 1); and a 50-ms
    # prefill of the 500-token prompt, as a real engine's, so that one scheduling hiccup of the
    # client (a TTFT P99 of 32 requests is their slowest) is not read as TTFT growing faster
    # than throughput: with a 1-ms prefill, CI's three test workers once measured a knee at 1
    itl = 0.010
    s = server(itl_s=itl, knee=4.0, max_num_seqs=64, prefill_s_per_token=0.0001)
    p = _run(_cfg(s.url, slo_ttft_p99_seconds=1.0, slo_tpot_p99_seconds=3 * itl))
    assert p.complete
    assert [(x.phase, x.concurrency) for x in p.steps] == [
        ("baseline", 1),
        ("ramp", 1),
        ("ramp", 4),
        ("ramp", 16),
    ]
    for step in p.steps:
        assert step.errors == step.timeouts == 0
        assert step.output_tokens_mean == 20  # forced output length, from the usage chunk
        assert step.input_tokens_mean == 500  # built to length with /tokenize
        assert step.waiting_mean is not None  # /metrics sampled during the step
    # the fake engine's next token comes after itl × (1 + running / knee)
    one, four, sixteen = (p.step_at(c) for c in (1, 4, 16))
    assert one is not None
    assert four is not None
    assert sixteen is not None
    assert one.tpot_p50_seconds == pytest.approx(itl * (1 + 1 / 4), rel=0.35)
    assert sixteen.tpot_p50_seconds is not None
    assert sixteen.tpot_p50_seconds > 2.5 * itl
    assert one.output_tps < four.output_tps < sixteen.output_tps
    # TPOT grows ×(1 + 16/4)/(1 + 4/4) = 2.5 from 4 to 16 while throughput grows less than 4
    assert p.knee_concurrency == 4
    assert p.operating_concurrency == 4  # 16 misses the 30 ms TPOT SLO (5 × itl at 16)


def test_errors_and_timeouts_are_counted_not_fatal(server: Callable[..., OpenAIServer]) -> None:
    s = server(error_every=4)
    p = _run(_cfg(s.url, concurrency=(2,), step_requests=40))
    ramp = p.step_at(2)
    assert ramp is not None
    assert ramp.errors == pytest.approx(10, abs=2)
    assert ramp.requests + ramp.errors == 40
    slow = server(stall_s=3.0)
    p = _run(_cfg(slow.url, concurrency=(2,), step_requests=4, request_timeout_s=0.5))
    assert p.steps[0].timeouts > 0


def test_a_slow_stream_shows_in_the_inter_token_p99(server: Callable[..., OpenAIServer]) -> None:
    s = server(stall_s=0.3)
    p = _run(_cfg(s.url, concurrency=(2,), step_requests=8))
    ramp = p.step_at(2)
    assert ramp is not None
    assert ramp.itl_p99_seconds is not None
    assert ramp.itl_p99_seconds >= 0.3
    assert ramp.tpot_p50_seconds is not None
    assert ramp.tpot_p50_seconds > 0.3 / 19


def test_without_tokenize_the_prompt_is_calibrated(server: Callable[..., OpenAIServer]) -> None:
    s = server(tokenize=False)
    p = _run(_cfg(s.url, concurrency=(1,), step_requests=4))
    assert any("no /tokenize" in n for n in p.notes)
    assert p.steps[-1].input_tokens_mean == pytest.approx(500, abs=5)


def test_a_server_dying_mid_phase_ends_the_run_with_what_was_measured(
    server: Callable[..., OpenAIServer],
) -> None:
    s = server(itl_s=0.01)
    killer = threading.Timer(1.5, s.stop)
    killer.start()
    started = time.monotonic()
    p = _run(_cfg(s.url, concurrency=(1, 2, 4, 8), step_requests=400, output_tokens=50))
    killer.join()
    assert time.monotonic() - started < 30  # no hang
    assert not p.complete
    assert p.steps[0].requests > 0  # the baseline before the death is kept
    assert any(step.errors for step in p.steps)
    assert any("no request succeeded" in n for n in p.notes)


def test_an_interrupt_keeps_a_valid_partial_profile(server: Callable[..., OpenAIServer]) -> None:
    s = server()
    state = BenchState()
    cfg = _cfg(s.url, concurrency=(1,), step_requests=4)
    asyncio.run(run_bench(cfg, state, lambda what, fraction: None))
    state.complete = False
    p = partial_profile(cfg, state)
    assert not p.complete
    assert "interrupted" in p.notes[-1]
    assert BenchProfile.model_validate_json(p.model_dump_json()) == p


def test_cli_writes_a_profile_and_a_plot(
    server: Callable[..., OpenAIServer], tmp_path: Path
) -> None:
    s = server(max_model_len=4096)
    out, png = tmp_path / "profile.yaml", tmp_path / "curves.png"
    trace = tmp_path / "trace.jsonl"
    trace.write_text(
        "\n".join(
            json.dumps({"timestamp": i * 100, "input_length": 100, "output_length": 5})
            for i in range(10)
        )
    )
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "--url",
            s.url,
            "--model",
            "fake",
            "--concurrency",
            "1,2",
            "--step-requests",
            "6",
            "--output-tokens",
            "10",
            "--input-tokens",
            "200",
            "--mix-requests",
            "10",
            "--trace",
            str(trace),
            "--replay-rps",
            "20",
            "--profile-out",
            str(out),
            "--plot",
            str(png),
            "--slo-tpot",
            "0.5",
        ],
    )
    assert result.exit_code == 0, result.output
    profile = BenchProfile.model_validate(yaml.safe_load(out.read_text()))
    assert [x.phase for x in profile.steps] == ["baseline", "ramp", "ramp", "mix", "replay"]
    mix = profile.steps[3]
    # the 32k-token share of the mix was cut to fit the server's 4,096-token context
    assert mix.errors == 0
    replay = profile.steps[4]
    assert replay.requests == 10
    assert replay.rate_rps is not None
    assert replay.rate_rps > 5  # 10 arrivals in ~0.5 s
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert "knee at concurrency" in result.output


def test_cli_bad_concurrency_names_the_fix() -> None:
    result = CliRunner().invoke(
        app, ["bench", "--url", "http://127.0.0.1:9", "--model", "m", "--concurrency", "a,b"]
    )
    assert result.exit_code == 2
    assert "expected integers like 1,2,4,8" in result.output


def test_cli_compares_the_measured_curve_with_the_plans(
    server: Callable[..., OpenAIServer], tmp_path: Path
) -> None:
    s = server(max_model_len=4096)
    png = tmp_path / "curves.png"
    plan = ROOT / "deploy" / "examples" / "llama-3.1-8b-l4.yaml"
    args = [
        "bench", "--url", s.url, "--model", "fake", "--concurrency", "1,2",
        "--step-requests", "4", "--output-tokens", "8", "--input-tokens", "100",
        "--baseline-requests", "1", "--no-mix", "--plan", str(plan),
    ]  # fmt: skip
    result = CliRunner().invoke(app, [*args, "-o", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["planComparison"]
    assert [r["concurrency"] for r in rows] == [1, 2]
    for row in rows:
        assert row["ttft_mean_seconds_predicted"] > 0
        measured = row["ttft_mean_seconds_measured"]
        assert row["ttft_mean_seconds_error"] == pytest.approx(
            row["ttft_mean_seconds_predicted"] / measured - 1.0
        )
    table = CliRunner().invoke(app, [*args, "--plot", str(png)])
    assert table.exit_code == 0, table.output
    assert "measured vs predicted" in table.output
    assert png.read_bytes()[:4] == b"\x89PNG"
    bad = CliRunner().invoke(app, [*args[:-1], str(tmp_path / "missing.yaml")])
    assert bad.exit_code == 2
    assert "missing.yaml" in bad.output
