"""Live vs simulated (benchmarks/live_vs_sim.py) on a short slice: the playground (real API
server, Prometheus and ``tokenscale run`` as a child process) and the simulator on one spec,
slice, cold start and seed, compared minute by minute."""

import json
from pathlib import Path

import pytest
from benchmarks.live_vs_sim import compare, report

from tokenscale.data import AZURE_CONVERSATION, bundled_trace
from tokenscale.playground.service import default_spec_path
from tokenscale.simulation import parse_trace

pytestmark = pytest.mark.integration

MINUTES = 4.0
SPEED = 5.0


def test_the_playground_and_the_simulator_run_one_slice_and_are_compared(
    tmp_path: Path,
) -> None:
    path = bundled_trace(AZURE_CONVERSATION)
    source = parse_trace(path.read_text(), source=path.name)
    c = compare(default_spec_path(), source, SPEED, MINUTES, 2.0, 0.2, 30.0, 0, tmp_path)
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
    # both closed loops act on the load and the live one serves it (the agreement figures
    # themselves are measured by the benchmark and reported, not asserted here)
    assert c.live.scale_events >= 1
    assert c.sim.scale_events >= 1
    assert live["completed"] >= 0.95 * live["requests"]
    assert max(m.desired for m in c.live.minutes) > c.live.minutes[0].ready
    assert 0.0 <= c.agreement <= 1.0
    assert c.gpu_hours_ratio > 0
