"""Fault drills: each fault's injection, the report beside the run without it, the redundancy
advice, and `simulate --fault`."""

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tokenscale.api.manifest import parse_manifests
from tokenscale.cli.app import app
from tokenscale.simulation import Setup, SimOptions, Trace, synthetic_trace
from tokenscale.simulation.drills import drill, recommend_redundancy
from tokenscale.simulation.faults import (
    BURST_PER_REPLICA,
    STORM_BACKOFF_S,
    STORM_WINDOW_S,
    Fault,
    faulted_trace,
    parse_fault,
)
from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import Replica, SimRequest

ROOT = Path(__file__).resolve().parents[2]
SPEC_FILE = ROOT / "benchmarks" / "specs" / "azure-conv-llama-8b-l40s.yaml"
RATE = 14.0
runner = CliRunner()


def _trace(duration_s: float = 600.0, rate: float = RATE) -> Trace:
    return synthetic_trace(
        duration_s, rate, lambda r: r.randint(500, 2000), lambda r: r.randint(100, 300), seed=1
    )


@pytest.fixture(scope="module")
def setup() -> Setup:
    """A fleet sized for its traffic with no spare: 3 replicas at 14 req/s."""
    spec = parse_manifests(SPEC_FILE.read_text())[0].spec
    w = spec.workload
    rps = w.rps.model_copy(update={"mean": RATE, "burst_factor": None})
    spec = spec.model_copy(update={"workload": w.model_copy(update={"rps": rps})})
    opts = SimOptions(capacity_requests=300, cold_start_s=120.0)
    return Setup(spec, _trace(), opts, "chat-8b")


@pytest.mark.parametrize(
    ("text", "kind", "at_s"),
    [
        ("replica-loss@20:00", "replica-loss", 1200.0),
        ("cache-flush@1:02:03", "cache-flush", 3723.0),
        ("traffic-x2@90", "traffic-x2", 90.0),
    ],
)
def test_parse_fault(text: str, kind: str, at_s: float) -> None:
    assert parse_fault(text) == Fault(kind, at_s)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["replica-loss", "meteor@1:00", "cache-flush@-1", "x2@a:b"])
def test_a_bad_fault_names_the_allowed_kinds(text: str) -> None:
    with pytest.raises(ValueError, match="--fault"):
        parse_fault(text)


def test_trace_faults_add_the_arrivals_they_say() -> None:
    trace = _trace(300.0, 5.0)
    after = sum(1 for r in trace.requests if r.arrival_s >= 100.0)
    doubled = faulted_trace(trace, (Fault("traffic-x2", 100.0),), 8192, 3)
    assert len(doubled.requests) == len(trace.requests) + after
    arrivals = [r.arrival_s for r in doubled.requests]
    assert arrivals == sorted(arrivals)
    in_storm = sum(1 for r in trace.requests if 100.0 <= r.arrival_s < 100.0 + STORM_WINDOW_S)
    storm = faulted_trace(trace, (Fault("retry-storm", 100.0),), 8192, 3)
    assert len(storm.requests) == len(trace.requests) + in_storm * len(STORM_BACKOFF_S)
    burst = faulted_trace(trace, (Fault("long-burst", 100.0),), 8192, 3)
    added = [r for r in burst.requests if r.input_tokens + r.output_tokens == 8192]
    assert len(added) == BURST_PER_REPLICA * 3
    assert all(100.0 <= r.arrival_s <= 110.0 for r in added)


def test_a_flushed_cache_misses() -> None:
    from tokenscale.simulation.replica import ReplicaConfig  # noqa: PLC0415

    cfg = ReplicaConfig(
        perf=None,  # type: ignore[arg-type]  # not stepped: only the cache is exercised
        kv_blocks=1000,
        block_size=16,
        max_num_seqs=8,
        max_num_batched_tokens=2048,
        chunked_prefill=True,
        prefix_caching=True,
        prefix_block_tokens=512,
    )
    rec = Recorder()
    replica = Replica(cfg, rec, 0.0)
    first = SimRequest(0.0, 1024, 10, (1, 2))
    replica._remember_prefix(first)
    hit = SimRequest(1.0, 1024, 10, (1, 2))
    replica._lookup_prefix(hit)
    assert hit.computed > 0
    replica.flush_prefix_cache()
    miss = SimRequest(2.0, 1024, 10, (1, 2))
    replica._lookup_prefix(miss)
    assert miss.computed == 0


@pytest.fixture(scope="module")
def pinned(setup: Setup) -> Setup:
    """The same traffic on exactly 3 replicas (pinned): no spare, whatever the policy's
    headroom would add."""
    scaling = setup.spec.scaling.model_copy(update={"replicas": 3})
    spec = setup.spec.model_copy(update={"scaling": scaling})
    return Setup(spec, setup.trace, setup.opts, "chat-8b")


def test_a_replica_loss_loses_no_request_and_recovers_after_the_cold_start(pinned: Setup) -> None:
    d = drill(pinned, (Fault("replica-loss", 240.0),))
    f, report = d.faulted, d.reports[0]
    assert f.completed + f.unfinished + f.rejected == f.requests  # lost requests were retried
    assert report.events[0].startswith("4:00: a replica died with")
    assert report.slo_attainment_during < report.slo_attainment_during_without
    assert report.recovery_s is not None
    # the replacement serves after the 120 s cold start: recovery is about that, bins of 30 s
    assert 60.0 <= report.recovery_s <= 240.0
    assert report.kv_usage_max_during > report.kv_usage_max_during_without
    assert d.baseline.requests == f.requests


def test_a_retry_storm_degrades_then_recovers(setup: Setup) -> None:
    d = drill(setup, (Fault("retry-storm", 240.0),))
    report = d.reports[0]
    assert d.faulted.requests > d.baseline.requests
    assert report.slo_attainment_during < 0.9
    assert report.max_waiting_during > report.max_waiting_during_without
    assert report.recovery_s is not None
    assert report.recovery_s >= STORM_WINDOW_S / 2
    assert any("scale up" in x for x in report.decisions)


def test_redundancy_advice_is_the_smallest_spare_that_holds(setup: Setup) -> None:
    advice = recommend_redundancy(setup, 240.0)
    assert advice.spare_replicas is not None
    by = advice.attainment_by_spare
    assert by[advice.spare_replicas] >= 0.99
    assert all(by[k] < 0.99 for k in by if k < advice.spare_replicas)


COLUMNS = ["--columns", "arrival=arrival,input=input,output=output"]


def _files(tmp_path: Path) -> tuple[Path, Path]:
    trace = tmp_path / "trace.csv"
    rows = ["arrival,input,output"] + [
        f"{r.arrival_s:.3f},{r.input_tokens},{r.output_tokens}" for r in _trace(300.0).requests
    ]
    trace.write_text("\n".join(rows) + "\n")
    return SPEC_FILE, trace


def test_simulate_fault_json_adds_faults(tmp_path: Path) -> None:
    spec, trace = _files(tmp_path)
    result = runner.invoke(
        app,
        [
            "simulate",
            str(spec),
            "--trace",
            str(trace),
            *COLUMNS,
            "--fault",
            "cache-flush@2:00",
            "-o",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output)
    (fault,) = data["faults"]
    assert {"kind", "at_s", "recovery_s", "slo_attainment_during"} <= set(fault)
    assert fault["kind"] == "cache-flush"
    assert fault["at_s"] == 120.0
    assert data["without_faults"]["requests"] == data["requests"]
    assert data["redundancy"] is None


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--fault", "meteor@1:00"], "replica-loss"),
        (["--fault", "cache-flush@1:00", "--policy", "all"], "drill one policy"),
    ],
)
def test_simulate_bad_fault_exits_2(tmp_path: Path, args: list[str], words: str) -> None:
    spec, trace = _files(tmp_path)
    result = runner.invoke(app, ["simulate", str(spec), "--trace", str(trace), *COLUMNS, *args])
    assert result.exit_code == 2
    assert words in result.output
