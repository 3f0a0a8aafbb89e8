"""What the engine plans for: arrivals from first tokens, output lengths from finished requests."""

import pytest

from tests.helpers import spec as make_spec
from tokenscale.scaling import Snapshot
from tokenscale.simulation import Setup, SimOptions, simulate, synthetic_trace


def test_started_requests_and_finished_lengths_win_over_ratios_of_rates() -> None:
    # a long-output service ramping up: 10 requests/s start, 1/s has finished so far
    s = Snapshot(
        at=0.0,
        replicas_reporting=1,
        request_rate_rps=1.0,
        started_rps=10.0,
        output_tokens_mean=900.0,
        prompt_tps=5_000.0,
        generation_tps=20_000.0,
    )
    assert s.arrival_rps == 10.0
    assert s.mean_input_tokens == pytest.approx(500.0)  # both counted at the first token
    assert s.mean_output_tokens == 900.0  # not 20,000 / 1 = 20,000
    old = s.model_copy(update={"started_rps": None, "output_tokens_mean": None})
    assert old.arrival_rps == 1.0
    assert old.mean_output_tokens == pytest.approx(20_000.0)


def test_a_long_output_ramp_does_not_read_as_a_huge_workload() -> None:
    """Reasoning traffic (4k-token answers): during the first minutes few requests have
    finished; the engine must neither see the arrival rate low nor the outputs enormous."""
    trace = synthetic_trace(240, lambda t: 2.0, lambda r: 500, lambda r: 4000, seed=1)
    spec = make_spec(
        workload={
            "rps": {"mean": 2},
            "inputTokens": {"mean": 500, "p99": 500},
            "outputTokens": {"mean": 4000, "p99": 4000},
        },
        scaling={"minReplicas": 1, "maxReplicas": 8},
    )
    setup = Setup(spec, trace, SimOptions(capacity_requests=200), "ramp")
    result = simulate(setup, "tokenscale", explain_at_s=60.0)
    assert result.explanation is not None
    assert result.explanation.snapshot is not None
    snap = result.explanation.snapshot
    # Prometheus' rate() over a window the series is younger than reads low (as live: it
    # divides by the whole window); the outputs must still not read enormous
    assert snap.arrival_rps is not None
    assert 0.8 <= snap.arrival_rps <= 2.0
    full = simulate(
        Setup(spec, trace, SimOptions(capacity_requests=200), "ramp"), "tokenscale", None, 150.0
    )
    assert full.explanation is not None
    assert full.explanation.snapshot is not None
    assert full.explanation.snapshot.arrival_rps == pytest.approx(2.0, rel=0.1)
    assert snap.request_rate_rps is not None
    assert snap.request_rate_rps < 1.0
    assert snap.mean_output_tokens is not None
    assert snap.mean_output_tokens <= 4000
