"""The lead-time oracle: the oracle's per-bin need, each added replica started one cold start
ahead (simulation/capacity.py), as a figure and as a replayed policy."""

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from tokenscale.api.manifest import parse_manifests
from tokenscale.cli.app import app
from tokenscale.simulation import POLICIES, Setup, SimOptions, simulate, synthetic_trace
from tokenscale.simulation.capacity import (
    lead_time_gpu_hours,
    lead_time_replicas_at,
    schedule_gpu_hours,
)

ROOT = Path(__file__).resolve().parents[2]
SPEC_FILE = ROOT / "benchmarks" / "specs" / "azure-conv-llama-8b-l40s.yaml"

schedules = st.lists(st.integers(min_value=1, max_value=20), min_size=1, max_size=30)


def test_a_worked_example() -> None:
    # bins of 60 s needing 1, 1, 3, 3, 1; a 90 s cold start: the two extra replicas of the
    # third bin (from 120 s) are asked for at 30 s and held to the end of the fourth (240 s)
    schedule = [1, 1, 3, 3, 1]
    assert [lead_time_replicas_at(schedule, 60, 90, t) for t in (0, 29, 30, 239, 240)] == [
        1,
        1,
        3,
        3,
        1,
    ]
    replica_seconds = 30 * 1 + 210 * 3 + 60 * 1
    assert lead_time_gpu_hours(schedule, 300, 1, 60, 90) == pytest.approx(replica_seconds / 3600)
    assert schedule_gpu_hours(schedule, 300, 1, 60) == pytest.approx(540 / 3600)


def test_a_dip_shorter_than_a_cold_start_is_held_a_longer_one_released() -> None:
    assert lead_time_gpu_hours([3, 1, 3], 180, 2, 60, 120) == pytest.approx(3 * 180 * 2 / 3600)
    # a 4-minute dip against a 60 s start: released at its start, asked for again 60 s early
    hours = lead_time_gpu_hours([3, 1, 1, 1, 1, 3], 360, 1, 60, 60)
    assert hours == pytest.approx((60 * 3 + 180 * 1 + 60 * 3 + 60 * 3) / 3600)


@given(schedules, st.sampled_from([1, 2, 4]), st.floats(min_value=1.0, max_value=60.0))
def test_without_a_cold_start_it_is_the_oracle(s: list[int], gpus: int, last_s: float) -> None:
    duration = (len(s) - 1) * 60.0 + last_s
    assert lead_time_gpu_hours(s, duration, gpus, 60.0, 0.0) == pytest.approx(
        schedule_gpu_hours(s, duration, gpus, 60.0)
    )


@given(schedules, st.floats(min_value=0, max_value=900), st.floats(min_value=0, max_value=900))
def test_it_grows_with_the_cold_start_and_never_passes_the_peak(
    s: list[int], c1: float, c2: float
) -> None:
    duration = len(s) * 60.0
    lo, hi = sorted((c1, c2))
    oracle = schedule_gpu_hours(s, duration, 1, 60.0)
    a = lead_time_gpu_hours(s, duration, 1, 60.0, lo)
    b = lead_time_gpu_hours(s, duration, 1, 60.0, hi)
    assert oracle * (1 - 1e-9) <= a <= b * (1 + 1e-9)
    assert b <= max(s) * duration / 3600 * (1 + 1e-9)
    # at every moment it asks for at least the bin's own need
    for k, need in enumerate(s):
        assert lead_time_replicas_at(s, 60.0, hi, k * 60.0 + 30.0) >= need


def _step_setup(cold_start_s: float) -> Setup:
    spec = parse_manifests(SPEC_FILE.read_text())[0].spec
    trace = synthetic_trace(
        900, lambda t: 30.0 if 300 <= t < 600 else 8.0, lambda r: 800, lambda r: 120, seed=2
    )
    opts = SimOptions(cold_start_s=cold_start_s, capacity_requests=300, timeline=False)
    return Setup(spec, trace, opts, "step")


def test_the_replayed_policy_spends_its_figure_and_serves_like_the_oracle() -> None:
    assert "oracle-lead-time" in POLICIES
    setup = _step_setup(120.0)
    oracle = simulate(setup, "oracle")
    lead = simulate(setup, "oracle-lead-time")
    figure = setup.lead_time_oracle_gpu_hours
    assert lead.lead_time_oracle_gpu_hours == pytest.approx(figure)
    assert oracle.lead_time_oracle_gpu_hours == pytest.approx(figure)
    assert figure > setup.oracle_gpu_hours
    # replayed: the same allocation shifted by the start, plus draining replicas' tails
    assert lead.gpu_hours == pytest.approx(figure, rel=0.1)
    assert lead.slo_attainment >= oracle.slo_attainment - 0.01
    # a cached result (oracle) carries the lead-time figure of the cold start it is asked at
    other = setup.with_options(setup.opts.model_copy(update={"cold_start_s": 600.0}))
    assert simulate(other, "oracle").lead_time_oracle_gpu_hours == pytest.approx(
        other.lead_time_oracle_gpu_hours
    )
    assert other.lead_time_oracle_gpu_hours > figure


def test_cli_json_reports_it_beside_the_oracle(tmp_path: Path) -> None:
    trace = synthetic_trace(240, 4.0, lambda r: 800, lambda r: 100, seed=1)
    csv_path = tmp_path / "t.csv"
    csv_path.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        + "".join(f"{r.arrival_s},{r.input_tokens},{r.output_tokens}\n" for r in trace.requests)
    )
    result = CliRunner().invoke(
        app,
        [
            "simulate",
            str(SPEC_FILE),
            "--trace",
            str(csv_path),
            "--policy",
            "oracle-lead-time",
            "--cold-start",
            "60",
            "-o",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["policy"] == "oracle-lead-time"
    assert data["lead_time_oracle_gpu_hours"] >= data["oracle_gpu_hours"]


def test_cli_json_of_all_policies_carries_best_static_beside_the_oracles(tmp_path: Path) -> None:
    trace = synthetic_trace(180, 4.0, lambda r: 800, lambda r: 100, seed=3)
    csv_path = tmp_path / "t.csv"
    csv_path.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        + "".join(f"{r.arrival_s},{r.input_tokens},{r.output_tokens}\n" for r in trace.requests)
    )
    result = CliRunner().invoke(
        app, ["simulate", str(SPEC_FILE), "--trace", str(csv_path), "--policy", "all", "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    best = next(r for r in rows if r["policy"] == "best-static")
    for r in rows:
        assert r["best_static_gpu_hours"] == pytest.approx(best["gpu_hours"])
        assert r["lead_time_oracle_gpu_hours"] >= r["oracle_gpu_hours"] * (1 - 1e-9)


def test_playground_json_to_a_missing_folder_is_bad_input(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["playground", "--headless", "--json", str(tmp_path / "nowhere" / "out.json")]
    )
    assert result.exit_code == 2
    assert "does not exist" in result.output
