"""Decision speed: one decision (target < 1 ms) and one evaluation cycle over 200
InferenceServices against a real Prometheus (target < 5 s).

Run: ``python benchmarks/scaling.py [--services 200] [--cycles 5]``. The cycle is what the
operator does every interval: one fleet-wide read of ~20 PromQL queries (200 vLLM metrics
emulators scraped every second by a local Prometheus), then per service the forecast plan and
the engine's decision. Medians; this machine has 2 cores shared with Prometheus and the
emulators.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers import spec as make_spec  # noqa: E402
from tests.support.vllm_emulator import Load, VllmMetricsEmulator  # noqa: E402
from tokenscale.metrics import PrometheusConfig, PrometheusSource  # noqa: E402
from tokenscale.planning import plan_service  # noqa: E402
from tokenscale.playground.processes import wait_for  # noqa: E402
from tokenscale.playground.prometheus import PrometheusServer  # noqa: E402
from tokenscale.scaling import EngineInput, ScalingState, Snapshot, decide  # noqa: E402


def one_decision(repeat: int = 500) -> float:
    spec = make_spec(workload={"rps": {"mean": 2}})
    forecast = plan_service(spec)
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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--services", type=int, default=200)
    parser.add_argument("--cycles", type=int, default=5)
    args = parser.parse_args()
    decision_s = one_decision()
    work = Path(tempfile.mkdtemp(prefix="tokenscale-scaling-"))
    prometheus = PrometheusServer(work).start()
    pods: list[VllmMetricsEmulator] = []
    try:
        for i in range(args.services):
            pod = VllmMetricsEmulator(model_name=f"m{i}").start()
            pod.set_state(running=8, waiting=i % 3, kv_usage=(i % 10) / 10)
            pod.set_load(Load(rps=0.5))
            prometheus.add_target(pod.target, "bench", f"svc-{i:03d}")
            pods.append(pod)
        spec = make_spec(workload={"rps": {"mean": 2}})
        source = PrometheusSource(PrometheusConfig(url=prometheus.url))
        wait_for(
            lambda: len(source.snapshots(["bench"], time.time())) == args.services,
            120,
            "every service visible in Prometheus",
            interval_s=2,
        )
        cycles, reads = [], []
        for _ in range(args.cycles):
            start = time.perf_counter()
            snaps = source.snapshots(["bench"], time.time())
            read = time.perf_counter() - start
            for key in sorted(snaps):
                forecast = plan_service(spec, key[1])
                decide(
                    EngineInput(
                        spec=spec,
                        forecast=forecast,
                        snapshot=snaps[key],
                        state=ScalingState(decided_replicas=2),
                        now_s=time.time(),
                        interval_s=15.0,
                    )
                )
            cycles.append(time.perf_counter() - start)
            reads.append(read)
    finally:
        for pod in pods:
            pod.stop()
        prometheus.stop()
    print(f"one decision (re-plan included)   median {decision_s * 1e3:8.3f} ms   target < 1 ms")
    cycle_s = statistics.median(cycles)
    print(f"cycle over {args.services} services           median {cycle_s:8.3f} s    target < 5 s")
    print(
        f"  of which the fleet read (PromQL) median {statistics.median(reads):8.3f} s "
        f"({len(snaps)} snapshots)"
    )
    print(f"  runs: {', '.join(f'{c:.2f}' for c in cycles)} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
