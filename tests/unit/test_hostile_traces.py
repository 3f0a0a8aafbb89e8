"""Hostile traces for ``tokenscale simulate``: every bad row is a ``TraceError`` naming the line
and the field (exit 2 on the command line), never a traceback and never a replayed absurdity."""

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tokenscale.api.base import MAX_TOKENS
from tokenscale.cli.app import app
from tokenscale.simulation.errors import TraceError
from tokenscale.simulation.span import check_size
from tokenscale.simulation.trace import parse_trace

EXAMPLE = Path(__file__).parents[2] / "deploy" / "examples" / "llama-3.1-8b-l4.yaml"
runner = CliRunner()
COLUMNS = {"arrival": "t", "input": "in", "output": "out"}


def _line(**rec: object) -> str:
    return json.dumps({"timestamp": 0, "input_length": 100, "output_length": 10} | rec)


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ('{"timestamp": 0, "input_length": 1e400, "output_length": 5}', "input_length inf"),
        ('{"timestamp": 0, "input_length": 5, "output_length": -Infinity}', "output_length -inf"),
        ('{"timestamp": NaN, "input_length": 5, "output_length": 5}', "arrival nan"),
        ('{"timestamp": 1e400, "input_length": 5, "output_length": 5}', "arrival inf"),
        (_line(input_length=10 * MAX_TOKENS), "above 10,000,000 tokens"),
        (_line(output_length=True), "output_length True is not a number"),
        (_line(timestamp=[1]), "timestamp [1] is not a number"),
        (_line(hash_ids="abc"), "hash_ids 'abc' is not a list"),
        (_line(hash_ids=[1e400]), "line 1"),
        ('"just a string"', "not an object"),
    ],
)
def test_a_bad_mooncake_line_names_the_line_and_the_field(line: str, words: str) -> None:
    with pytest.raises(TraceError, match="line 1") as info:
        parse_trace(line, "mooncake", source="t.jsonl")
    assert words in str(info.value)


@pytest.mark.parametrize(
    ("row", "words"),
    [
        ("0,inf,5", "in 'inf' is not a finite number"),
        ("0,5,1e400", "out '1e400' is not a finite number"),
        ("inf,5,5", "arrival 'inf' is not a finite time"),
        ("nan,5,5", "arrival 'nan' is not a finite time"),
        ("0,99999999999,5", "in '99999999999' is above 10,000,000 tokens"),
    ],
)
def test_a_bad_csv_row_names_the_line_and_the_column(row: str, words: str) -> None:
    with pytest.raises(TraceError, match="line 2") as info:
        parse_trace(f"t,in,out\n{row}\n", "csv", {"arrival": "t", "input": "in", "output": "out"})
    assert words in str(info.value)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["timestamp", "input_length", "output_length", "hash_ids"]),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.floats(allow_nan=True, allow_infinity=True),
            st.text(max_size=5),
            st.lists(st.integers(), max_size=3),
            st.lists(st.text(max_size=2), max_size=2),
        ),
    )
)
def test_any_json_record_parses_or_is_a_trace_error(record: dict[str, object]) -> None:
    try:
        trace = parse_trace(json.dumps(record), "mooncake")
    except TraceError:
        return
    request = trace.requests[0]
    assert math.isfinite(request.arrival_s)
    assert 0 <= request.input_tokens <= MAX_TOKENS
    assert 0 <= request.output_tokens <= MAX_TOKENS


def test_simulate_exits_2_on_an_infinite_length(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 1e400, "output_length": 5}\n')
    result = runner.invoke(app, ["simulate", str(EXAMPLE), "--trace", str(trace)])
    assert result.exit_code == 2, result.output
    assert "t.jsonl line 1: input_length inf is not a finite number" in result.output


def test_a_fault_after_the_last_request_exits_2(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("t,in,out\n" + "".join(f"{k * 0.5},300,30\n" for k in range(100)))
    args = [
        "simulate",
        str(EXAMPLE),
        "--trace",
        str(trace),
        "--columns",
        "arrival=t,input=in,output=out",
    ]
    late = runner.invoke(app, [*args, "--fault", "replica-loss@99:00:00"])
    assert late.exit_code == 2, late.output
    assert "--fault replica-loss@99:00:00: the replay's last request arrives at 0:50" in late.output
    inside = runner.invoke(app, [*args, "--fault", "replica-loss@0:30", "-o", "json"])
    assert inside.exit_code == 0, inside.output


@pytest.mark.parametrize("flag", ["--interval", "--scrape-interval"])
@pytest.mark.parametrize("value", ["0.001", "0.5"])
def test_a_sub_second_interval_exits_2_before_replaying(flag: str, value: str) -> None:
    trace = EXAMPLE.parents[2] / "operator" / "tokenscale" / "data" / "traces"
    result = runner.invoke(
        app, ["simulate", str(EXAMPLE), "--trace", str(trace / "azure-2023-conv.csv"), flag, value]
    )
    assert result.exit_code == 2, result.output
    assert f"{flag}: {float(value)} is below 1; use a value >= 1 and <= 3600" in result.output


@pytest.mark.parametrize(
    "flag",
    [
        ["--explain", "99:99"],
        ["--start", "0:75"],
        ["--duration", "1:60:00"],
        ["--fault", "replica-loss@0:99"],
    ],
)
def test_a_moment_with_60_or_more_seconds_or_minutes_is_a_typo(flag: list[str]) -> None:
    """Before: ``99:99`` read as 100 min 39 s."""
    trace = (
        EXAMPLE.parents[2] / "operator" / "tokenscale" / "data" / "traces" / "azure-2023-conv.csv"
    )
    result = runner.invoke(app, ["simulate", str(EXAMPLE), "--trace", str(trace), *flag])
    assert result.exit_code == 2, result.output
    assert "below 60" in result.output


def test_a_replay_of_millions_of_requests_is_refused_with_the_scale_that_fits() -> None:
    """Before: --rate-scale 1000 on the bundled 19,366-request trace ran out of memory."""
    azure = (
        EXAMPLE.parents[2] / "operator" / "tokenscale" / "data" / "traces" / "azure-2023-conv.csv"
    )
    result = runner.invoke(
        app, ["simulate", str(EXAMPLE), "--trace", str(azure), "--rate-scale", "1000"]
    )
    assert result.exit_code == 2, result.output
    assert (
        "19,366,000; the simulator replays at most 1,000,000: use --rate-scale 51.63"
        in result.output
    )
    many = parse_trace("t,in,out\n" + "".join(f"{k},5,5\n" for k in range(11)), "csv", COLUMNS)
    check_size(many, 1.0, max_requests=11)
    with pytest.raises(TraceError, match="holds 11 requests; the simulator replays at most 10"):
        check_size(many, 1.0, max_requests=10)
