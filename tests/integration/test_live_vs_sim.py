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
SPEED = 10.0


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
    # the same policy on the same input: both scale up from the forecast's fleet, reach about
    # the same size and spend about the same. (The targets, ≥ 90 % of minutes, 10 % and one
    # point, are measured by the benchmark, not asserted: until one decision per observation
    # lands, the live operator re-decides on Deployment events and steps up faster.)
    assert c.live.scale_events >= 1
    assert c.sim.scale_events >= 1
    assert abs(c.live.replicas_max - c.sim.replicas_max) <= 2, report(c)
    assert 0.0 <= c.agreement <= 1.0
    assert 0.5 <= c.gpu_hours_ratio <= 2.0, report(c)
    # latency is the part a loaded machine moves most (twins at 10× on a shared event loop):
    # a sanity bound only, both sides serve most requests within the SLO
    assert abs(c.attainment_gap_points) <= 50.0, report(c)
    assert c.live.slo_attainment >= 0.4, report(c)
