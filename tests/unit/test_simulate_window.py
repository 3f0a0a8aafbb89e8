"""`tokenscale simulate --start/--duration`: part of a trace, shifted to start at 0; the footer
says which token mix the planner's figure is for; the plot has a TPOT panel."""

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image  # matplotlib's own dependency
from typer.testing import CliRunner

from tokenscale.cli.app import app
from tokenscale.simulation import TraceError
from tokenscale.simulation.trace import Trace, TraceRequest
from tokenscale.simulation.window import window

runner = CliRunner()
SPEC = Path(__file__).resolve().parents[2] / "benchmarks/specs/azure-conv-llama-8b-l40s.yaml"


def _trace(arrivals: list[float]) -> Trace:
    return Trace(tuple(TraceRequest(a, 100, 10) for a in sorted(arrivals)), "t")


@given(
    st.lists(st.floats(0, 1000), min_size=1, max_size=50),
    st.floats(0, 900),
    st.floats(1, 500),
)
def test_the_window_keeps_exactly_its_arrivals_shifted(
    arrivals: list[float], start: float, duration: float
) -> None:
    trace = _trace(arrivals)
    inside = sorted(a - start for a in arrivals if start <= a < start + duration)
    if not inside:
        with pytest.raises(TraceError):
            window(trace, start, duration)
        return
    part = window(trace, start, duration)
    assert [r.arrival_s for r in part.requests] == pytest.approx(inside)
    assert all(0 <= r.arrival_s < duration for r in part.requests)


def test_no_window_is_the_trace_itself() -> None:
    trace = _trace([1.0, 2.0])
    assert window(trace) is trace


def _trace_file(tmp_path: Path) -> Path:
    f = tmp_path / "t.csv"
    rows = ["arrival,input,output"] + [f"{i * 0.5},{800 + i % 7},{150 + i % 5}" for i in range(600)]
    f.write_text("\n".join(rows) + "\n")
    return f


def _sim(tmp_path: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(
        app,
        [
            "simulate",
            str(SPEC),
            "--trace",
            str(_trace_file(tmp_path)),
            "--format",
            "csv",
            "--columns",
            "arrival=arrival,input=input,output=output",
            *args,
        ],
        env={"COLUMNS": "160"},
    )
    return result.exit_code, result.output


def test_start_and_duration_replay_part_of_the_trace(tmp_path: Path) -> None:
    code, out = _sim(tmp_path, "--start", "1:00", "--duration", "60", "-o", "json")
    assert code == 0, out
    data = json.loads(out)
    assert data["requests"] == 120  # arrivals every 0.5 s, from 60 s to 120 s


def test_a_window_outside_the_trace_exits_2(tmp_path: Path) -> None:
    code, out = _sim(tmp_path, "--start", "1:00:00")
    assert code == 2
    assert "no request arrives" in out
    code, out = _sim(tmp_path, "--duration", "ten")
    assert code == 2
    assert "--duration" in out


def test_the_footer_names_both_token_mixes(tmp_path: Path) -> None:
    code, out = _sim(tmp_path, "--duration", "120")
    assert code == 0, out
    flat = " ".join(out.split())
    assert "the planner's" in flat
    assert "for the spec's token mix (mean 1,155 in / 211 out)" in flat
    assert "on the trace's requests (mean 803 in / 152 out)" in flat
    assert "from 0:00" in flat


def test_the_plot_has_a_tpot_panel(tmp_path: Path) -> None:
    png = tmp_path / "t.png"
    code, out = _sim(tmp_path, "--duration", "60", "--plot", str(png))
    assert code == 0, out
    with Image.open(png) as image:
        width, height = image.size
    # six stacked panels: 12 × 15 in at 90 dpi (five were 13 in tall)
    assert (width, height) == (12 * 90, 15 * 90)


def test_explain_prints_no_unrounded_floats(tmp_path: Path) -> None:
    code, out = _sim(tmp_path, "--duration", "120", "--explain", "1:30")
    assert code == 0, out
    snapshot = next(line for line in out.splitlines() if "snapshot:" in line)
    assert "KV max" in snapshot
    # at most three significant figures per number (a small one reads 0.00905); was
    # "KV max 0.323916988873984"
    for number in re.findall(r"\d+\.\d+", snapshot):
        assert len(number.replace(".", "").lstrip("0")) <= 3, snapshot


def test_explain_and_fault_moments_both_count_from_start(tmp_path: Path) -> None:
    """One rule: with --start 1:00, `--explain 1:30` and `--fault …@1:30` are 1:30 into the
    replay (2:30 of the trace); a moment past the replay's end is refused for both, saying so."""
    code, out = _sim(tmp_path, "--start", "1:00", "--duration", "120", "--explain", "1:30")
    assert code == 0, out
    assert "at 1:30 (90 s)" in out, out
    code, out = _sim(tmp_path, "--start", "1:00", "--duration", "120", "--explain", "2:30")
    assert "no tokenscale decision at or after that moment" in out, out
    assert "moments count from --start 1:00" in " ".join(out.split()), out
    code, out = _sim(
        tmp_path, "--start", "1:00", "--duration", "120", "--fault", "cache-flush@2:30"
    )
    assert code == 2, out
    assert "moments count from --start 1:00" in " ".join(out.split()), out
