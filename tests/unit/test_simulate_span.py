"""``simulate`` on traces whose span cannot be replayed: idle gaps cut, long replays refused.

Each case runs the CLI in a subprocess with a deadline, so a regression that starts simulating
a year fails the test instead of hanging it.
"""

import itertools
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tokenscale.simulation.errors import TraceError
from tokenscale.simulation.span import MAX_IDLE_GAP_S, MAX_SPAN_S, check_span, cut_idle_gaps
from tokenscale.simulation.trace import parse_azure

SPEC = ROOT / "benchmarks" / "specs" / "azure-conv-llama-8b-l40s.yaml"
HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


def _simulate(tmp_path: Path, rows: str, *args: str, deadline_s: float = 60) -> tuple[int, str]:
    trace = tmp_path / "t.csv"
    trace.write_text(HEADER + rows)
    cmd = [
        str(Path(sys.executable).parent / "tokenscale"),
        "simulate",
        str(SPEC),
        "--trace",
        str(trace),
    ]
    done = subprocess.run(
        [*cmd, "--policy", "static", "-o", "json", *args],
        capture_output=True,
        text=True,
        timeout=deadline_s,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout + done.stderr


def _minute(start: str = "2024-05-01 10:00:") -> str:
    return "".join(f"{start}{s:02d},500,50\n" for s in range(0, 60, 2))


def test_a_row_dated_9999_is_an_idle_gap_cut_to_an_hour(tmp_path: Path) -> None:
    code, out = _simulate(tmp_path, _minute() + "9999-12-31 23:59:59,500,50\n")
    assert code == 0, out
    assert "idle gap(s) longer than 1.0 h cut to 1.0 h" in out
    assert "7,9" in out  # the gap, in years
    assert "not in the GPU-hours" in out


def test_rows_a_year_apart_replay_in_seconds(tmp_path: Path) -> None:
    started = time.monotonic()
    code, out = _simulate(tmp_path, _minute("2023-05-01 10:00:") + _minute("2024-05-01 10:00:"))
    assert code == 0, out
    assert "1.0 years" in out
    assert time.monotonic() - started < 60


def test_a_time_scale_beyond_a_day_is_refused_naming_the_largest_that_fits(
    tmp_path: Path,
) -> None:
    code, out = _simulate(tmp_path, _minute(), "--time-scale", "1e6")
    assert code == 2, out
    assert "--time-scale 1e+06 stretches" in out
    assert "at most 1.0 days" in out
    assert "--time-scale 1489 or less" in out  # 86,400 s / 58 s, rounded down


def test_cutting_keeps_order_and_busy_stretches() -> None:
    rows = _minute("2024-05-01 10:00:") + _minute("2024-05-03 10:00:")
    trace = parse_azure(HEADER + rows)
    cut = cut_idle_gaps(trace)
    arrivals = [r.arrival_s for r in cut.trace.requests]
    assert arrivals == sorted(arrivals)
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert max(gaps) == pytest.approx(MAX_IDLE_GAP_S)
    assert gaps[:29] == pytest.approx([2.0] * 29)  # the busy minute untouched
    assert cut.cut_s == pytest.approx(2 * 86_400 - 58 - MAX_IDLE_GAP_S)
    assert cut_idle_gaps(parse_azure(HEADER + _minute())).notes == ()


def test_a_dense_trace_longer_than_the_limit_is_refused() -> None:
    hours = int(MAX_SPAN_S // 1800) + 4
    rows = "".join(f"{i * 1800},500,50\n" for i in range(hours))
    trace = parse_azure(HEADER + rows)
    with pytest.raises(TraceError, match="cut the trace"):
        check_span(cut_idle_gaps(trace).trace, 1.0)
