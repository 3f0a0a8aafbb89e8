"""``tokenscale bench`` against endpoints that misbehave, and with options out of range.

The fake engine (tests/support/openai_server.py) runs in a thread on a local port: each case
ends in seconds, with exit 2 naming the option or exit 1 saying why the endpoint failed.
"""

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.openai_server import OpenAIServer
from tokenscale.cli.app import app
from tokenscale.playground.processes import free_port

runner = CliRunner()
QUICK = [
    "--concurrency",
    "1,2",
    "--step-requests",
    "4",
    "--baseline-requests",
    "2",
    "--no-mix",
    "--input-tokens",
    "50",
    "--output-tokens",
    "5",
]


def _bench(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["bench", *args])
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--timeout", "0"], "--timeout"),
        (["--timeout", "nan"], "--timeout"),
        (["--baseline-requests", "-1"], "--baseline-requests"),
        (["--tp", "0"], "--tp"),
        (["--slo-ttft", "-1"], "--slo-ttft"),
        (["--output-tokens", "-3"], "--output-tokens"),
        (["--step-seconds", "inf"], "--step-seconds"),
        (["--profile-out", "/nonexistent-folder/p.json"], "--profile-out"),
    ],
)
def test_bad_options_exit_2_before_any_request(args: list[str], flag: str) -> None:
    code, out = _bench("--url", "http://127.0.0.1:9", "--model", "m", *args)
    assert code == 2, out
    assert flag in out
    assert "[red]" not in out


def test_a_server_that_never_answers_fails_within_the_timeout(
    server: Callable[..., OpenAIServer],
) -> None:
    s = server(hang=True)
    started = time.monotonic()
    code, out = _bench("--url", s.url, "--model", "fake", "--timeout", "1", *QUICK)
    assert time.monotonic() - started < 15
    assert code == 1, out
    assert "did not answer" in out


def test_an_unreachable_endpoint_says_why() -> None:
    code, out = _bench("--url", f"http://127.0.0.1:{free_port()}", "--model", "m", *QUICK)
    assert code == 1, out
    assert "cannot reach" in out


def test_failing_requests_show_their_errors(server: Callable[..., OpenAIServer]) -> None:
    s = server(error_every=1, models=False)
    code, out = _bench("--url", s.url, "--model", "fake", "--timeout", "5", *QUICK)
    assert code == 1, out
    assert "no request succeeded" in out
    assert "HTTP 500" in out
    assert "injected failure" in out


def test_lengths_beyond_the_server_max_model_len_exit_2(
    server: Callable[..., OpenAIServer],
) -> None:
    s = server(max_model_len=256)
    code, out = _bench("--url", s.url, "--model", "fake", "--timeout", "5")
    assert code == 2, out
    assert "max_model_len 256" in out
    assert "--input-tokens" in out


def test_a_model_the_server_does_not_serve_exits_2(server: Callable[..., OpenAIServer]) -> None:
    s = server()
    code, out = _bench("--url", s.url, "--model", "other", *QUICK)
    assert code == 2, out
    assert "it serves fake" in out


def test_non_prometheus_metrics_are_a_note_not_a_crash(
    server: Callable[..., OpenAIServer], tmp_path: Path
) -> None:
    s = server(metrics_text="<html>login required</html>\n")
    out_file = tmp_path / "p.json"
    code, out = _bench(
        "--url", s.url, "--model", "fake", "--timeout", "5", "--profile-out", str(out_file), *QUICK
    )
    assert code == 0, out
    assert "not Prometheus text" in out
    assert out_file.exists()


@pytest.mark.parametrize("count", ["1e400", "-3", "1e30", '"many"', "null"])
def test_an_absurd_tokenize_count_is_not_trusted(
    server: Callable[..., OpenAIServer], tmp_path: Path, count: str
) -> None:
    s = server(tokenize_count=count)
    out_file = tmp_path / "p.json"
    code, out = _bench(
        "--url", s.url, "--model", "fake", "--timeout", "5", "--profile-out", str(out_file), *QUICK
    )
    assert code == 0, out
    assert out_file.exists()


@pytest.mark.parametrize("tokens", ["1e400", "-5", "1e30", "2.5e9"])
def test_absurd_usage_fails_the_request_not_the_run(
    server: Callable[..., OpenAIServer], tokens: str
) -> None:
    """A usage that is not a count the request could have (1e400, negative, beyond what was
    asked) makes that request an error with the reason: no OverflowError, no ValidationError."""
    s = server(usage_tokens=tokens)
    code, out = _bench("--url", s.url, "--model", "fake", "--timeout", "5", *QUICK)
    assert code == 1, out
    assert "no request succeeded" in out
    assert "usage" in out


def test_absurd_engine_gauges_are_not_sampled(
    server: Callable[..., OpenAIServer], tmp_path: Path
) -> None:
    page = (
        "# TYPE vllm:num_requests_waiting gauge\n"
        'vllm:num_requests_waiting{engine="0"} 1e308\n'
        'vllm:num_requests_waiting{engine="1"} 1e308\n'
        "# TYPE vllm:kv_cache_usage_perc gauge\n"
        'vllm:kv_cache_usage_perc{engine="0"} -1\n'
    )
    s = server(metrics_text=page)
    out_file = tmp_path / "p.json"
    code, out = _bench(
        "--url", s.url, "--model", "fake", "--timeout", "5", "--profile-out", str(out_file), *QUICK
    )
    assert code == 0, out
    steps = json.loads(out_file.read_text())["steps"]
    assert [s.get("waitingMean") for s in steps] == [None] * len(steps)
    assert [s.get("kvUsageMax") for s in steps] == [None] * len(steps)
