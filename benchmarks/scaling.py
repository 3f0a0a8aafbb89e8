"""Decision speed: one decision (target < 1 ms) and one evaluation cycle over N
InferenceServices against a real Prometheus (target < 5 s at 1,000).

Run: ``python benchmarks/scaling.py [--services 200] [--cycles 5] [--per-query]``. The cycle
is what the operator does every interval: one fleet-wide read of ~27 PromQL queries, then
per service the
parse and plan (through the operator's plan memo, controller/plans.py: planned once per
distinct spec) and the engine's decision. For comparison the same cycle is also timed with a
fresh parse and plan per service (what the operator did before the memo). Up to 50 vLLM
metrics emulators serve the services' series (each scraped under several services' labels,
every 10 s, by a local Prometheus). The emulators run in a child process: the measured
process, like the operator's, serves no scrapes (in-process, their hundred scrapes a second
competed with the cycle for the interpreter). Medians; this machine has 2 cores shared with
Prometheus and the emulators: the load average and the machine's idle CPU during the cycles
are printed with the figures.
"""

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parents[1]
EMULATORS = 50
SCRAPE_S = 10.0
"""A production-like scrape interval: 1,000 scrapes a second would starve this machine."""
sys.path.insert(0, str(ROOT))

from tests.helpers import spec as make_spec  # noqa: E402
from tests.support.vllm_emulator import Load, VllmMetricsEmulator  # noqa: E402
from tokenscale.api.manifest import parse_inference_service  # noqa: E402
from tokenscale.controller.plans import PlanMemo  # noqa: E402
from tokenscale.metrics import PrometheusConfig, PrometheusSource  # noqa: E402
from tokenscale.metrics.promql import queries  # noqa: E402
from tokenscale.planning import plan_service  # noqa: E402
from tokenscale.playground.processes import wait_for  # noqa: E402
from tokenscale.playground.prometheus import PrometheusServer  # noqa: E402
from tokenscale.scaling import EngineInput, ScalingState, Snapshot, decide  # noqa: E402


def cpu_times() -> tuple[float, float]:
    """(idle, total) jiffies of the whole machine, from ``/proc/stat``."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    return fields[3] + fields[4], sum(fields)


def one_decision(repeat: int = 500, pinned_knobs: bool = False) -> float:
    """The median time of one decision. ``pinned_knobs``: with the spec's chunk budget and
    sequence cap set to the forecast's, so the live re-plan checks the budget the fleet runs
    instead of searching every budget again (not what the engine does today: a comparison)."""
    spec = make_spec(workload={"rps": {"mean": 2}})
    forecast = plan_service(spec)
    if pinned_knobs:
        serving = spec.serving.model_copy(
            update={
                "max_num_batched_tokens": forecast.max_num_batched_tokens,
                "max_num_seqs": forecast.max_num_seqs,
            }
        )
        spec = spec.model_copy(update={"serving": serving})
    snap = Snapshot(
        at=1e6,
        replicas_reporting=2,
        waiting=1.0,
        running=16.0,
        kv_usage_max=0.5,
        kv_usage_mean=0.5,
        ttft_p99_s=0.5,
        tpot_p99_s=0.02,
        tpot_p50_s=0.015,
        request_rate_rps=1.0,
        prompt_tps=1000.0,
        generation_tps=200.0,
        newest_sample_age_s=1.0,
    )
    inp = EngineInput(
        spec=spec,
        forecast=forecast,
        snapshot=snap,
        state=ScalingState(decided_replicas=2),
        now_s=1e6,
        interval_s=15.0,
    )
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        decide(inp)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def serve_emulators(count: int, conn: Any, stop: Any) -> None:
    """In a child process: ``count`` emulators under steady load; their scrape targets go back
    through ``conn``; they stop when ``stop`` is set."""
    pods: list[VllmMetricsEmulator] = []
    for i in range(count):
        pod = VllmMetricsEmulator(model_name=f"m{i}").start()
        pod.set_state(running=8, waiting=i % 3, kv_usage=(i % 10) / 10)
        pod.set_load(Load(rps=0.5))
        pods.append(pod)
    conn.send([pod.target for pod in pods])
    stop.wait()
    for pod in pods:
        pod.stop()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--services", type=int, default=200)
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument(
        "--per-query",
        action="store_true",
        help="after the cycles, time each query of the fleet read alone (one after another)",
    )
    args = parser.parse_args()
    decision_s = one_decision()
    pinned_s = one_decision(pinned_knobs=True)
    work = Path(tempfile.mkdtemp(prefix="tokenscale-scaling-"))
    prometheus = PrometheusServer(work, scrape_interval_s=SCRAPE_S).start()
    spawn = multiprocessing.get_context("spawn")
    ours, theirs = spawn.Pipe()
    stop = spawn.Event()
    emulators = spawn.Process(
        target=serve_emulators, args=(min(args.services, EMULATORS), theirs, stop), daemon=True
    )
    emulators.start()
    try:
        targets: list[str] = ours.recv()
        groups = [
            {
                "targets": [targets[i % len(targets)]],
                "labels": {"namespace": "bench", "inferenceservice": f"svc-{i:04d}"},
            }
            for i in range(args.services)
        ]
        prometheus.targets_file.write_text(json.dumps(groups))
        spec = make_spec(workload={"rps": {"mean": 2}})
        body = {
            "apiVersion": "tokenscale.io/v1alpha1",
            "kind": "InferenceService",
            "spec": spec.model_dump(by_alias=True, exclude_none=True, mode="json"),
        }
        source = PrometheusSource(PrometheusConfig(url=prometheus.url))
        wait_for(
            lambda: len(source.snapshots(["bench"], time.time())) == args.services,
            180,
            "every service visible in Prometheus",
            interval_s=2,
        )
        memo = PlanMemo()
        cycles, reads, fresh = [], [], []
        load_before = os.getloadavg()[0]
        idle_before = cpu_times()
        for n in range(2 * args.cycles):
            memoized = n % 2 == 0
            start = time.perf_counter()
            snaps = source.snapshots(["bench"], time.time())
            read = time.perf_counter() - start
            for key in sorted(snaps):
                doc = {**body, "metadata": {"namespace": key[0], "name": key[1]}}
                if memoized:
                    service, forecast = memo.planned(doc, lambda s: s)
                else:
                    service = parse_inference_service(doc)
                    forecast = plan_service(service.spec, key[1])
                decide(
                    EngineInput(
                        spec=service.spec,
                        forecast=forecast,
                        snapshot=snaps[key],
                        state=ScalingState(decided_replicas=2),
                        now_s=time.time(),
                        interval_s=15.0,
                    )
                )
            elapsed = time.perf_counter() - start
            if memoized:
                cycles.append(elapsed)
                reads.append(read)
            else:
                fresh.append(elapsed)
        idle_after = cpu_times()
        load_after = os.getloadavg()[0]
        per_query: list[tuple[float, str, int]] = []
        if args.per_query:
            cfg = source.cfg.query
            for name, promql in queries(cfg, ["bench"]).items():
                start = time.perf_counter()
                answer = requests.get(
                    f"{prometheus.url}/api/v1/query", params={"query": promql}, timeout=60
                )
                per_query.append(
                    (time.perf_counter() - start, name, len(answer.json()["data"]["result"]))
                )
    finally:
        stop.set()
        emulators.join(30)
        prometheus.stop()
    print(f"one decision (re-plan included)   median {decision_s * 1e3:8.3f} ms   target < 1 ms")
    print(
        f"  the same, live plan at the forecast's chunk budget (comparison) "
        f"{pinned_s * 1e3:8.3f} ms"
    )
    cycle_s = statistics.median(cycles)
    print(f"cycle over {args.services} services           median {cycle_s:8.3f} s    target < 5 s")
    print(
        f"  of which the fleet read (PromQL) median {statistics.median(reads):8.3f} s "
        f"({len(snaps)} snapshots)"
    )
    print(f"  runs: {', '.join(f'{c:.2f}' for c in cycles)} s")
    idle = (idle_after[0] - idle_before[0]) / max(1e-9, idle_after[1] - idle_before[1])
    print(
        f"  machine during the cycles: load average {load_before:.1f} -> {load_after:.1f}, "
        f"{idle:.1%} idle CPU ({os.cpu_count()} cores)"
    )
    for took, name, series in sorted(per_query, reverse=True):
        print(f"  query {name:<24} alone {took:7.3f} s  {series:6d} series")
    print(
        f"same cycle, parse and plan per service median {statistics.median(fresh):8.3f} s "
        f"(runs: {', '.join(f'{c:.2f}' for c in fresh)} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
