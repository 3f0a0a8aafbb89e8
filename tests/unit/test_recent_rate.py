"""The need reads a step up within a minute: the first-token rate over the last minute beside
the rate window's, the larger of the two (fast up; down still waits for the rate window)."""

import pytest

from tests.helpers import spec as make_spec
from tests.unit.test_engine import _spec, run, snap
from tokenscale.metrics.promql import QueryConfig, half_window, queries
from tokenscale.scaling import ScalingState
from tokenscale.scaling.engine import observed_workload
from tokenscale.simulation import Setup, SimOptions, simulate, synthetic_trace


def test_the_need_reads_the_larger_of_the_minute_and_the_window() -> None:
    w = _spec().workload
    s = snap(started_rps=10.0)
    assert observed_workload(w, s, "observed").rps.mean == 10.0
    up = s.model_copy(update={"started_rps_recent": 30.0})
    assert observed_workload(w, up, "observed").rps.mean == 30.0  # a step up: at once
    down = s.model_copy(update={"started_rps_recent": 4.0})
    assert observed_workload(w, down, "observed").rps.mean == 10.0  # down: the window's


def test_a_step_seen_in_the_last_minute_raises_the_model_need() -> None:
    # room above the need at the window's rate (18–20 replicas here): the step must show
    spec = _spec()
    spec = spec.model_copy(
        update={"scaling": spec.scaling.model_copy(update={"max_replicas": 200})}
    )
    busy = snap(n=2, kv=0.5, started_rps=20.0).model_copy(
        update={"prompt_tps": 20_000.0, "generation_tps": 4_000.0}
    )
    before = run(spec, busy, ScalingState(decided_replicas=2))
    stepped = run(
        spec, busy.model_copy(update={"started_rps_recent": 60.0}), ScalingState(decided_replicas=2)
    )
    assert before.model_replicas is not None
    assert stepped.model_replicas is not None
    assert stepped.model_replicas > before.model_replicas


def test_the_simulator_reads_the_minute_as_prometheus_rate_over_1m() -> None:
    # 2 req/s, then 8 from 180 s: 75 s after the step the minute reads the new rate, the
    # 2-minute window still a blend
    trace = synthetic_trace(
        360, lambda t: 2.0 if t < 180 else 8.0, lambda r: 300, lambda r: 30, seed=4
    )
    spec = make_spec(workload={"rps": {"mean": 2}}, scaling={"minReplicas": 2, "maxReplicas": 4})
    setup = Setup(spec, trace, SimOptions(capacity_requests=200), "step")
    r = simulate(setup, "tokenscale", explain_at_s=255.0)
    assert r.explanation is not None
    assert r.explanation.snapshot is not None
    s = r.explanation.snapshot
    assert s.started_rps_recent == pytest.approx(8.0, rel=0.2)
    assert s.started_rps is not None
    assert s.started_rps_recent is not None
    assert s.started_rps < s.started_rps_recent - 1.0
    q = queries(QueryConfig(), None)["started_rate_recent"]
    assert "rate(vllm:time_to_first_token_seconds_count" in q
    assert "[60000ms]" in q  # half the 2m rate window
    assert half_window("15s") == "7500ms"
    assert half_window("1m30s") == "45000ms"
    with pytest.raises(ValueError, match="not a Prometheus duration"):
        half_window("2 minutes")
