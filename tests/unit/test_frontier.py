"""Honest yardsticks: the replay-verified oracle (one function for the CLI and the suite), the
static frontier beside tokenscale and its verdict, in ``tokenscale simulate``'s table and JSON."""

import functools
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.helpers import spec as make_spec
from tokenscale.cli.app import app
from tokenscale.simulation import Setup, SimOptions, simulate, synthetic_trace
from tokenscale.simulation.frontier import static_frontier
from tokenscale.simulation.run import static_fleet, verified_oracle

ROOT = Path(__file__).resolve().parents[2]
SPEC_FILE = ROOT / "benchmarks" / "specs" / "azure-conv-llama-8b-l40s.yaml"


@functools.cache
def _bursty(rounds: int, target: float = 0.99) -> Setup:
    """Ten minutes at 4 RPS with a 10-second burst at 40 RPS each minute: the per-minute
    formula sees only the minute's mean and misses inside the bursts (one per arguments: the
    capacity probe and the oracle's replays are the slow part)."""
    trace = synthetic_trace(
        600, lambda t: 40.0 if t % 60 < 10 else 4.0, lambda r: 4000, lambda r: 300, seed=5
    )
    spec = make_spec(
        workload={"rps": {"mean": 4}},
        scaling={"minReplicas": 1, "maxReplicas": 12, "targetAttainment": target},
    )
    return Setup(spec, trace, SimOptions(capacity_requests=400, oracle_repair_rounds=rounds), "b")


def test_the_verified_oracle_returns_only_a_schedule_it_replayed() -> None:
    formula = _bursty(0)
    assert simulate(formula, "oracle").slo_attainment < 0.99  # the formula alone misses
    # one round: repaired once, and what comes back is what was replayed (before, the last
    # round's extra replicas were added after the last replay and never checked)
    once = _bursty(1)
    assert once.oracle_attainment is not None
    assert once.oracle_attainment == simulate(once, "oracle").slo_attainment
    full = _bursty(8)
    assert full.oracle_attainment is not None
    assert full.oracle_attainment >= 0.99
    assert full.oracle_replayed() == simulate(full, "oracle").slo_attainment
    assert simulate(full, "oracle").oracle_attainment == full.oracle_attainment
    # the same function, called directly, gives the same schedule
    assert verified_oracle(formula, 8) == (full.oracle_schedule, full.oracle_attainment)


def test_the_yardsticks_are_judged_against_target_attainment() -> None:
    strict, loose = _bursty(8, 0.99), _bursty(8, 0.9)
    assert loose.oracle_attainment is not None
    assert loose.oracle_attainment >= 0.9
    assert sum(loose.oracle_schedule) <= sum(strict.oracle_schedule)
    best = simulate(loose, "best-static")
    assert best.slo_attainment >= 0.9
    assert best.target_attainment == 0.9
    n = best.static_replicas
    assert n is not None
    if n > 1:
        assert static_fleet(loose, n - 1).slo_attainment < 0.9


def test_the_frontier_lists_every_fixed_fleet_up_to_best_static_with_a_verdict() -> None:
    setup = _bursty(0)
    ours = simulate(setup, "tokenscale")
    f = static_frontier(setup, ours)
    best = simulate(setup, "best-static")
    assert [p.replicas for p in f.points] == list(range(1, (best.static_replicas or 1) + 1))
    per_replica_h = setup.forecast.gpus_per_replica * setup.trace.duration_s / 3600.0
    for p in f.points:
        assert p.gpu_hours == pytest.approx(p.replicas * per_replica_h, rel=1e-6)
        if p.complete:  # a finished replay is the fleet's attainment
            assert p.slo_attainment == static_fleet(setup, p.replicas).slo_attainment
        else:  # stopped early: an upper bound, and the full replay is below it
            assert static_fleet(setup, p.replicas).slo_attainment < p.slo_attainment
    assert f.points[-1].slo_attainment >= 0.99
    # the verdict, against runs we build: a dear run that misses is dominated by best static
    # (or a smaller fleet); a free run that meets everything is on the frontier
    dear = ours.model_copy(update={"gpu_hours": 1e6, "slo_attainment": 0.5})
    verdict = static_frontier(setup, dear)
    assert verdict.dominated_by is not None
    assert verdict.verdict == f"dominated by a fixed fleet of {verdict.dominated_by}"
    free = ours.model_copy(update={"gpu_hours": 1e-6, "slo_attainment": 1.0})
    assert static_frontier(setup, free).verdict == "on the frontier"
    assert static_frontier(setup, free).dominated_by is None


def test_simulate_prints_the_verified_oracles_and_the_frontier(tmp_path: Path) -> None:
    trace = synthetic_trace(240, 5.0, lambda r: 800, lambda r: 80, seed=2)
    csv_path = tmp_path / "t.csv"
    csv_path.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        + "".join(f"{r.arrival_s},{r.input_tokens},{r.output_tokens}\n" for r in trace.requests)
    )
    args = ["simulate", str(SPEC_FILE), "--trace", str(csv_path)]
    result = CliRunner().invoke(app, [*args, "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["policy"] == "tokenscale"
    assert data["oracle_attainment"] >= data["target_attainment"] == 0.99
    assert data["lead_time_oracle_attainment"] is not None
    frontier = data["frontier"]
    assert frontier["points"][-1]["replicas"] == frontier["best_static_replicas"]
    assert frontier["verdict"] in (
        "on the frontier",
        f"dominated by a fixed fleet of {frontier['dominated_by']}",
    )
    table = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert "static frontier" in table.output
    assert frontier["verdict"] in table.output
    assert "replayed" in table.output
