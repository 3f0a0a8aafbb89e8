"""The simulator at zero replicas: requests held at the gateway while no replica is ready,
the shared stepper waking the fleet, the cost of waking (the first request's TTFT ≈ one cold
start), none lost, and back to zero after the idle window."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.helpers import ROOT
from tests.helpers import spec as make_spec
from tokenscale.cli.app import app
from tokenscale.simulation import Setup, SimOptions, simulate
from tokenscale.simulation.workloads import idle_burst

IDLE_S = 300


@pytest.mark.parametrize("source", ["gateway", "activation"])
def test_idle_bursts_go_zero_to_n_to_zero_and_lose_nothing(source: str) -> None:
    wake = (
        {"gateway": {"inferencePool": {}}}
        if source == "gateway"
        else {"scaling": {"activation": {"query": "sum(pending)"}}}
    )
    spec = make_spec(
        workload={"rps": {"mean": 2}},
        scaling={
            "minReplicas": 0,
            "maxReplicas": 8,
            "scaleToZero": {"idleSeconds": IDLE_S},
            **wake.get("scaling", {}),
        },
        **({"gateway": wake["gateway"]} if "gateway" in wake else {}),
    )
    trace = idle_burst(requests=60, rps=2.0, gap_s=1800.0, bursts=2)
    opts = SimOptions()
    r = simulate(Setup(spec, trace, opts, "idle-burst"), "tokenscale")
    # none lost: every request finished, none rejected, none left in flight
    assert (r.completed, r.rejected, r.unfinished) == (len(trace.requests), 0, 0)
    # the plan's count, then 0 → n → 0 → n (the trace ends with its last burst)
    targets = [p.replicas_target for p in r.timeline]
    runs = [targets[0]]
    for n in targets[1:]:
        if (n == 0) != (runs[-1] == 0):
            runs.append(n)
    shape = ["0" if n == 0 else "n" for n in runs]
    assert shape == ["n", "0", "n", "0", "n"], shape
    # the cost of waking: the requests that found the fleet at zero waited one cold start
    # (and at most one decision interval for the wake-up), not more
    assert r.arrived_at_zero >= 2
    assert r.wake_ttft_max_s is not None
    assert (
        opts.cold_start_s <= r.wake_ttft_max_s <= opts.cold_start_s + 2 * opts.decision_interval_s
    )
    # nothing runs while asleep: far fewer GPU-hours than one replica for the whole trace
    assert r.gpu_hours < 0.5 * trace.duration_s / 3600.0


def test_a_service_that_cannot_scale_to_zero_keeps_one_replica() -> None:
    spec = make_spec(workload={"rps": {"mean": 2}}, scaling={"minReplicas": 1, "maxReplicas": 8})
    trace = idle_burst(requests=60, rps=2.0, gap_s=1800.0, bursts=2)
    r = simulate(Setup(spec, trace, SimOptions(), "idle-burst"), "tokenscale")
    assert min(p.replicas_target for p in r.timeline) == 1
    assert r.arrived_at_zero == 0
    assert r.wake_ttft_max_s is None


def test_simulate_says_what_waking_cost(tmp_path: Path) -> None:
    trace = idle_burst(requests=20, rps=2.0, gap_s=1200.0, bursts=2)
    csv = tmp_path / "idle.csv"
    rows = "".join(
        f"{r.arrival_s:.3f},{r.input_tokens},{r.output_tokens}\n" for r in trace.requests
    )
    csv.write_text("arrival,input,output\n" + rows)
    spec = tmp_path / "zero.yaml"
    spec.write_text(
        (ROOT / "deploy" / "examples" / "gateway" / "llama-3.1-8b-inferencepool-zero.yaml")
        .read_text()
        .replace("idleSeconds: 900", "idleSeconds: 300")
    )
    cols = "arrival=arrival,input=input,output=output"
    out = CliRunner().invoke(
        app, ["simulate", str(spec), "--trace", str(csv), "--columns", cols], env={"COLUMNS": "200"}
    )
    assert out.exit_code == 0, out.output
    assert "requests found the fleet at zero replicas" in out.output
    assert "worst TTFT" in out.output
