"""The cost and the saving of scaling to zero, in the simulator (issue 20 §5).

A service that sleeps: ``--bursts`` bursts of ``--requests`` Poisson arrivals at ``--rps``,
each after ``--gap`` seconds of silence (``simulation/workloads.py::idle_burst``), replayed
under tokenscale's policy (the operator's stepper) for Llama-3.1-8B BF16 on one H100 per replica,
``minReplicas: 0`` with an InferencePool (the gateway's held requests wake it) and
``scaleToZero.idleSeconds`` ``--idle``, against the same service with ``minReplicas: 1``.
Default simulator options (cold start 180 s, scrapes and decisions every 15 s). One run per
row (the simulator is deterministic for a seed).

    python benchmarks/scale_to_zero.py [--requests 60] [--rps 2] [--gap 1800] [--bursts 2]
                                       [--idle 300]
"""

import argparse
import sys
from typing import Any

from tokenscale.api import InferenceService
from tokenscale.simulation import Setup, SimOptions, SimResult, simulate
from tokenscale.simulation.workloads import idle_burst


def _service(min_replicas: int, idle_s: int) -> InferenceService:
    scaling: dict[str, Any] = {"minReplicas": min_replicas, "maxReplicas": 8}
    spec: dict[str, Any] = {
        "model": {"name": "meta-llama/Llama-3.1-8B-Instruct", "catalog": "llama-3.1-8b"},
        "hardware": {"gpu": "H100-SXM-80GB", "tensorParallelSize": 1},
        "workload": {
            "rps": {"mean": 2},
            "inputTokens": {"mean": 1000, "p99": 4000},
            "outputTokens": {"mean": 200, "p99": 800},
            "maxContextTokens": 16384,
        },
        "slo": {"ttftP99Seconds": 2.0, "tpotP99Seconds": 0.05},
        "scaling": scaling,
        "cost": {"gpuHourPrice": 3.0},
    }
    if min_replicas == 0:
        scaling["scaleToZero"] = {"idleSeconds": idle_s}
        spec["gateway"] = {"inferencePool": {}}
    return InferenceService.model_validate(
        {"apiVersion": "tokenscale.io/v1alpha1", "kind": "InferenceService",
         "metadata": {"name": f"sleepy-min{min_replicas}"}, "spec": spec}
    )  # fmt: skip


def _row(label: str, r: SimResult) -> str:
    wake = "–" if r.wake_ttft_max_s is None else f"{r.wake_ttft_max_s:.0f} s"
    lost = r.requests - r.completed
    return (
        f"| {label} | {r.completed} / {lost} | {r.arrived_at_zero} | {wake} | "
        f"{r.slo_attainment * 100:.1f} % | {r.gpu_hours:.2f} |"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=60)
    ap.add_argument("--rps", type=float, default=2.0)
    ap.add_argument("--gap", type=float, default=1800.0)
    ap.add_argument("--bursts", type=int, default=2)
    ap.add_argument("--idle", type=int, default=300)
    args = ap.parse_args()
    trace = idle_burst(args.requests, args.rps, args.gap, args.bursts)
    opts = SimOptions()
    print(
        f"{len(trace.requests)} requests in {args.bursts} bursts at {args.rps:g} req/s, each "
        f"after {args.gap:g} s of silence ({trace.duration_s / 60:.0f} min); cold start "
        f"{opts.cold_start_s:g} s, decisions every {opts.decision_interval_s:g} s"
    )
    print(
        "| service | completed / lost | found it at zero | worst TTFT of those | "
        "SLO attainment | GPU-hours |"
    )
    print("|---|---|---|---|---|---|")
    for min_replicas in (0, 1):
        svc = _service(min_replicas, args.idle)
        r = simulate(Setup(svc.spec, trace, opts, "idle-burst"), "tokenscale")
        label = f"minReplicas 0, idle {args.idle} s" if min_replicas == 0 else "minReplicas 1"
        print(_row(label, r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
