"""Live vs simulated (benchmarks/live_vs_sim.py) on a short slice: the playground (real API
server, Prometheus and ``tokenscale run`` as a child process) and the simulator on one spec,
slice, cold start and seed, compared minute by minute."""

import itertools
import json
from pathlib import Path

import pytest
from benchmarks.live_vs_sim import compare, compare_pd, report

from tokenscale.data import AZURE_CONVERSATION, bundled_trace
from tokenscale.playground.service import PD_SPEC, default_spec_path
from tokenscale.simulation import parse_trace

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # over 30 s: `pytest -m slow`

MINUTES = 6.0
SPEED = 5.0


def test_the_playground_and_the_simulator_run_one_slice_and_are_compared(
    tmp_path: Path,
) -> None:
    path = bundled_trace(AZURE_CONVERSATION)
    source = parse_trace(path.read_text(), source=path.name)
    c = compare(default_spec_path(), source, SPEED, MINUTES, 0.0, 0.2, 60.0, 0, tmp_path)
    print(report(c))
    # both sides read every minute of the slice (the playground's JSON timeline, per minute)
    assert [m.minute for m in c.sim.minutes] == list(range(int(MINUTES)))
    assert [m.minute for m in c.live.minutes] == [m.minute for m in c.sim.minutes]
    live = json.loads((tmp_path / "playground.json").read_text())
    assert live["requests"] == c.requests  # the same slice was replayed, request for request
    assert {"slo_attainment", "gpu_hours", "scale_events", "replicas_max"} <= set(live)
    assert live["gpu_hours"] >= live["gpu_hours_during_load"] > 0
    for m in live["timeline"]:
        assert m["desired"] >= 1
        assert m["ready"] >= 1
    # every decision the runner saw carries the signals its status wrote (what the report's
    # first divergence compares), and the twins' arrivals are measured against the trace
    assert all("signals" in d for d in live["decisions"])
    assert any(d["signals"] for d in live["decisions"] if d["t_s"] > 0)
    late = live["arrival_late_s"]
    assert late is not None
    assert 0.0 <= late["p50"] <= late["p99"] <= late["max"]
    # both closed loops decide the same way and the live one serves the load: on these six
    # minutes the launch fleet (2 replicas, the plan at the spec's peak) serves it on both
    # sides, so neither scales (earlier rounds' loops climbed 1 -> 6 here on TTFT reads of
    # 2.0-2.4 s; docs/playground.md)
    assert c.live.scale_events == c.sim.scale_events
    assert live["completed"] >= 0.95 * live["requests"]
    # the live operator observes every interval (fixed-rate resync, modelled clock): every
    # decision the status reported (the runner watches it) is 15 s after the previous one, or
    # a whole number of intervals where a cycle overran its period on a busy machine and the
    # loop skipped the starts it missed (at most one in these six minutes)
    times = [d["t_s"] for d in live["decisions"]]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert gaps
    assert max(abs(g - 15.0 * max(1, round(g / 15.0))) for g in gaps) < 1.5, gaps
    assert len(c.skipped) <= 1, c.skipped
    # each replica a scale-up asked for is Ready one cold start after the observation that
    # asked for it, give or take the control plane's latency at its real length and the event
    # loop (a second or so; counted at speed x wall time it was 2-5 s at x5, 20-40 s at x20),
    # and Prometheus first scrapes it within a scrape interval (5 modelled s) of Ready
    if any(b.desired > a.desired for a, b in itertools.pairwise(c.live.minutes)):
        assert c.starts  # a scale-up's pods are timed
    for observed, late, first_scrape in c.starts:
        assert -1e-3 <= late < 2.0, (observed, late)
        assert 0.0 <= first_scrape < 5.0 + 1.0, (observed, first_scrape)
    # the agreement itself (minutes 0-6 of the hour at x0.2, cold start 60 s). Tolerances: one
    # of the six minutes may read apart (5 of 6 = 83 %): a signal read within a few hundredths
    # of its watermark on one side and not the other moves one step by a decision or two;
    # GPU-hours within 10 % and attainment within one point (the targets).
    assert c.agreement >= 5 / 6 - 1e-9, c.disagree
    assert abs(c.gpu_hours_ratio - 1.0) <= 0.1
    assert abs(c.attainment_gap_points) <= 1.0


def test_a_prefill_decode_service_is_compared_pool_by_pool(tmp_path: Path) -> None:
    """``--shape pd``: the playground's P/D example live, and the per-role replay ``tokenscale
    simulate`` runs on it, minute by minute for each role (not a one-pool replay of the spec)."""
    path = bundled_trace(AZURE_CONVERSATION)
    source = parse_trace(path.read_text(), source=path.name)
    c = compare_pd(default_spec_path(PD_SPEC), source, 20.0, MINUTES, 0.0, 0.2, 60.0, 0, tmp_path)
    print(report(c))
    assert c.roles is not None
    assert set(c.roles) == {"prefill", "decode"}
    for role, r in c.roles.items():
        # each side read every minute of the slice for this role, from its own decisions
        assert [m.minute for m in r.sim] == list(range(int(MINUTES))), role
        assert [m.minute for m in r.live] == [m.minute for m in r.sim], role
        assert r.live_decisions >= MINUTES * 60.0 / 20.0 - 2, role
        assert r.sim_decisions >= MINUTES * 60.0 / 20.0 - 2, role
    live = json.loads((tmp_path / "playground.json").read_text())
    assert live["completed"] >= 0.95 * live["requests"]
    # each pool is the live one within a replica at every minute's end (a one-pool replay of
    # the spec asks 6 where live runs 1 + 3). Not the 90 % of minutes: on this slice the
    # decode pool's 3 -> 4 step turns on one running-gauge reading (7.67 against a 7.56
    # watermark) that the simulated run reads over or under with its decision phase, so a run
    # agrees in 6 of 6 minutes or in 3 (docs/playground.md)
    for role, r in c.roles.items():
        sim = {m.minute: m.desired for m in r.sim}
        assert all(abs(m.desired - sim[m.minute]) <= 1 for m in r.live), (role, r.disagree)
    assert abs(c.gpu_hours_ratio - 1.0) <= 0.25
