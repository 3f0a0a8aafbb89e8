"""The workload suite: seeded shapes match their stated parameters; a tiny grid runs end to end."""

import statistics
from itertools import pairwise

import pytest
from benchmarks.autoscaling import (
    CI_GRID,
    HELD_OUT,
    SUITE,
    Entry,
    frontier_lines,
    h100_spec,
    markdown,
    misses,
    run_suite,
)

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning import plan_service
from tokenscale.simulation import POLICIES, Trace
from tokenscale.simulation.trace import percentile, trace_stats, window_rates
from tokenscale.simulation.workloads import (
    CODE,
    CONVERSATION,
    REASONING,
    bursty,
    decline,
    diurnal,
    idle_gaps,
    on_off,
    staircase,
    steady,
    step,
)


def test_bursty_has_the_stated_dispersion_and_spikes() -> None:
    trace = bursty(3600, 10.0, CONVERSATION, cv=3.5, spike_every_s=300, seed=1)
    gaps = [b.arrival_s - a.arrival_s for a, b in pairwise(trace.requests)]
    cv = statistics.pstdev(gaps) / statistics.fmean(gaps)
    assert 2.5 < cv < 4.5
    ten_s = window_rates(trace, 10.0)
    assert max(ten_s) >= 4.0 * statistics.fmean(ten_s)  # 10-second spikes at ~5× the mean
    assert bursty(600, 10.0, seed=7) == bursty(600, 10.0, seed=7)  # seeded


def test_diurnal_and_step_shapes() -> None:
    d = window_rates(diurnal(8.0, CONVERSATION, seed=2), 300.0)
    assert max(d) / d[0] == pytest.approx(4.0, rel=0.25)
    assert d[-1] == pytest.approx(d[0], rel=0.3)
    s = window_rates(step(10.0, CONVERSATION, seed=3), 300.0)
    assert s[3] / s[0] == pytest.approx(3.0, rel=0.2)
    assert s[-1] == pytest.approx(s[0], rel=0.25)


@pytest.mark.parametrize(
    ("mix", "in_mean", "in_p99", "out_mean"),
    [(CODE, 2000, 7500, 30), (REASONING, 500, 1500, 4000), (CONVERSATION, 1000, 4000, 200)],
)
def test_token_mixes_have_their_mean_and_p99(
    mix: object, in_mean: float, in_p99: float, out_mean: float
) -> None:
    trace = steady(3600, 4.0, mix, seed=4)  # type: ignore[arg-type]
    ins = [r.input_tokens for r in trace.requests]
    outs = [r.output_tokens for r in trace.requests]
    assert statistics.fmean(ins) == pytest.approx(in_mean, rel=0.1)
    assert percentile(ins, 0.99) == pytest.approx(in_p99, rel=0.2)
    assert statistics.fmean(outs) == pytest.approx(out_mean, rel=0.1)


def test_idle_gaps() -> None:
    trace = idle_gaps(200, 20.0, 4 * 3600.0, seed=6)
    assert len(trace.requests) == 201
    assert trace.requests[-1].arrival_s - trace.requests[-2].arrival_s == pytest.approx(4 * 3600)


def test_every_suite_entry_builds_a_feasible_service() -> None:
    names = {e.name for e in SUITE}
    assert {"azure-conv", "mooncake", "bursty", "diurnal", "step", "code", "reasoning"} <= names
    assert "idle" in names


def test_the_held_out_suite_is_apart_from_the_dev_suite_and_plans() -> None:
    assert not {e.name for e in HELD_OUT} & {e.name for e in SUITE}
    served = set()
    for entry in HELD_OUT:
        trace, spec = entry.build()
        assert trace.requests
        assert plan_service(spec).feasible, entry.name
        served.add((spec.model.catalog, spec.hardware.gpu, spec.hardware.tensor_parallel_size))
    # other models and GPUs than the suite's 8B on H100 / L40S
    assert len(served) >= 4


def test_a_tiny_grid_runs_every_policy_and_reports_the_targets() -> None:
    tiny = Entry(
        "tiny-step",
        "4 → 12 RPS for 4 min",
        _tiny,
    )
    cases = run_suite([tiny], CI_GRID, capacity_requests=300)
    assert len(cases) == 1
    case = cases[0]
    assert set(case.results) == set(POLICIES)
    assert case.results["best-static"].static_replicas is not None
    table = markdown(cases)
    assert "tiny-step" in table
    assert table.count("\n") == 2
    assert isinstance(misses(cases), list)
    assert {what for what, _ in case.verdicts()} >= {
        "attainment ≥ 99 %",
        "≤ best static GPU-hours",
    }
    lead = case.lead_time_oracle_gpu_hours
    assert lead is not None
    assert lead >= case.results["oracle"].oracle_gpu_hours
    assert "lead-time oracle GPU-h" in table
    # the static frontier beside tokenscale: every fixed fleet up to best static, a verdict
    f = case.frontier
    assert f is not None
    best = case.results["best-static"]
    assert [p.replicas for p in f.points] == list(range(1, (best.static_replicas or 1) + 1))
    assert f.points[-1].gpu_hours == pytest.approx(best.gpu_hours)
    ours = case.ours
    if f.dominated_by is None:
        assert f.verdict == "on the frontier"
    else:  # the fleet that dominates has ≥ our attainment at ≤ our GPU-hours, or the target
        p = f.points[f.dominated_by - 1]
        assert p.gpu_hours <= ours.gpu_hours * (1 + 1e-9)
        assert p.slo_attainment >= min(ours.slo_attainment, 0.99) - 1e-9
    assert f.verdict in table
    lines = frontier_lines(cases)
    on = 1 if f.dominated_by is None else 0
    assert (
        lines[0]
        == f"static frontier: {on} of 1 on the frontier, {1 - on} dominated by a fixed fleet"
    )
    # a run some fixed fleet dominates is listed with that fleet's figures
    top = f.best_static_replicas
    dear = f.model_copy(
        update={"dominated_by": top, "verdict": f"dominated by a fixed fleet of {top}"}
    )
    case.results["tokenscale"] = ours.model_copy(update={"frontier": dear})
    lines = frontier_lines(cases)
    assert lines[0] == "static frontier: 0 of 1 on the frontier, 1 dominated by a fixed fleet"
    assert lines[1].startswith("  DOMINATED tiny-step mismatch 1 cold start 180 s")
    assert f"dominated by a fixed fleet of {top}" in lines[1]
    assert f"{best.gpu_hours:.2f} GPU-h)" in lines[1]


def _tiny() -> tuple[Trace, InferenceServiceSpec]:
    trace = step(4.0, CONVERSATION, factor=3.0, before_s=180, hold_s=240, after_s=180, seed=9)
    return trace, h100_spec(trace)


def test_h100_spec_takes_the_traces_statistics_as_the_forecast() -> None:
    trace = steady(600, 5.0, CODE, seed=1)
    spec = h100_spec(trace)
    stats = trace_stats(trace)
    assert spec.workload.rps.mean == pytest.approx(stats.mean_rps, abs=0.01)
    assert spec.workload.input_tokens.mean == round(stats.input_mean)


def test_staircase_on_off_and_decline_shapes() -> None:
    stairs = window_rates(staircase(6.0, CONVERSATION, factor=1.5, stairs=3, seed=31), 480.0)
    assert len(stairs) == 7
    for k, level in enumerate([0, 1, 2, 3, 2, 1, 0][:-1]):  # the last stair is cut short
        assert stairs[k] == pytest.approx(6.0 * 1.5**level, rel=0.15)
    wave = on_off(12.0, CONVERSATION, factor=2.5, on_s=240, off_s=360, cycles=4, seed=32)
    assert wave.duration_s == pytest.approx(4 * 600 + 360, abs=5)
    by_minute = window_rates(wave, 60.0)
    assert statistics.fmean(by_minute[7:10]) == pytest.approx(30.0, rel=0.15)  # on: 6–10 min
    assert statistics.fmean(by_minute[1:5]) == pytest.approx(12.0, rel=0.15)  # off: 0–6 min
    fall = window_rates(decline(24.0, 6.0, 1800.0, CODE, seed=33), 300.0)
    assert fall[0] == pytest.approx(21.0, rel=0.15)  # the first 5 minutes' mean
    assert fall[-1] < fall[0] / 2.5
    assert all(b < a * 1.1 for a, b in pairwise(fall))


def test_new_held_out_shapes_are_judged_on_moving_load() -> None:
    moving = {e.name for e in HELD_OUT if e.moves}
    assert {"staircase", "on-off", "decline-code", "step-down"} <= moving
    assert {e.name for e in SUITE if e.moves} == {"mooncake", "step", "diurnal", "azure-conv"}
