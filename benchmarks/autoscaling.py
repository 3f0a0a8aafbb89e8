"""Autoscaling benchmark: replay the Azure conversation trace against the simulated fleet.

Trace: the bundled azure-2023-conv.csv (tokenscale/data/traces; Patel et al., "Splitwise",
ISCA 2024; CC-BY-4.0),
**rate-scaled ×4** (a superposition of four such services, ≈ 22 RPS mean, ≈ 34 RPS 1-minute
peak) so the fleet of Llama-3.1-8B on L40S needs 4–12 replicas. The InferenceService is
benchmarks/specs/azure-conv-llama-8b-l40s.yaml with the forecast set to the scaled trace's
mean rate (burst factor 1.5), as a team would write it before launch.

For mismatch 0.7, 1.0 and 1.3 (the real engines' speed ÷ the planner's assumption) it prints,
per policy, SLO attainment, GPU-hours and GPU-hours ÷ oracle, then checks the targets of the
issue and the time of one policy's run (median of the runs made here).

    python benchmarks/autoscaling.py [--rate-scale 4] [--mismatch 0.7 1.0 1.3]
"""

import argparse
import statistics
import time
from pathlib import Path

from tokenscale.api.manifest import parse_manifests
from tokenscale.data import AZURE_CONVERSATION, bundled_trace
from tokenscale.simulation import (
    POLICIES,
    Setup,
    SimOptions,
    SimResult,
    parse_trace,
    scale_trace,
    simulate,
)
from tokenscale.simulation.trace import trace_stats

ROOT = Path(__file__).resolve().parents[1]
TRACE = bundled_trace(AZURE_CONVERSATION)
SPEC = ROOT / "benchmarks" / "specs" / "azure-conv-llama-8b-l40s.yaml"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate-scale", type=float, default=4.0)
    ap.add_argument("--mismatch", type=float, nargs="+", default=[0.7, 1.0, 1.3])
    args = ap.parse_args()

    trace = scale_trace(
        parse_trace(TRACE.read_text(), source=TRACE.name), rate_scale=args.rate_scale
    )
    stats = trace_stats(trace)
    isvc = parse_manifests(SPEC.read_text())[0]
    w = isvc.spec.workload
    rps = w.rps.model_copy(update={"mean": round(stats.mean_rps, 1), "burst_factor": 1.5})
    spec = isvc.spec.model_copy(update={"workload": w.model_copy(update={"rps": rps})})
    print(
        f"trace {TRACE.name} ×{args.rate_scale:g}: {stats.requests:,} requests over "
        f"{stats.duration_s / 60:.1f} min, mean {stats.mean_rps:.1f} RPS, 1-min peak "
        f"{stats.peak_rps:.1f} RPS; {isvc.spec.model.name} on {isvc.spec.hardware.gpu}, "
        f"SLO TTFT P99 {spec.slo.ttft_p99_seconds} s / TPOT P99 {spec.slo.tpot_p99_seconds} s, "
        "cold start 180 s"
    )
    seconds: list[float] = []
    verdicts: list[str] = []
    for mismatch in args.mismatch:
        setup = Setup(spec, trace, SimOptions(mismatch=mismatch), isvc.metadata.name)
        print(
            f"\nmismatch {mismatch:g}: one replica sustains {setup.capacity_rps:.2f} RPS at the "
            f"SLOs (planner {setup.forecast.rps_per_replica:.2f}); oracle "
            f"{setup.oracle_gpu_hours:.2f} GPU-hours"
        )
        print(f"  {'policy':16} {'attainment':>10} {'GPU-hours':>9} {'÷ oracle':>8} {'run s':>6}")
        results: dict[str, SimResult] = {}
        for name in POLICIES:
            t0 = time.perf_counter()
            r = simulate(setup, name)
            elapsed = time.perf_counter() - t0
            seconds.append(elapsed)
            results[name] = r
            print(
                f"  {name:16} {r.slo_attainment * 100:9.2f}% {r.gpu_hours:9.2f} "
                f"{r.gpu_hours_vs_oracle:7.2f}× {elapsed:6.1f}"
            )
        ours = results["tokenscale"]
        checks = [
            (f"attainment ≥ 99 % at mismatch {mismatch:g}", ours.slo_attainment >= 0.99),
            (
                f"fewer GPU-hours than static at mismatch {mismatch:g}",
                ours.gpu_hours < results["static"].gpu_hours,
            ),
        ]
        if mismatch == 1.0:
            checks.append(
                ("≤ 1.25 × oracle GPU-hours at mismatch 1", ours.gpu_hours_vs_oracle <= 1.25)
            )
        for name in ("queue-threshold", "kv-threshold"):
            other = results[name]
            checks.append(
                (
                    f"higher attainment than {name} at mismatch {mismatch:g}"
                    + (" (it used fewer GPU-hours)" if other.gpu_hours < ours.gpu_hours else ""),
                    ours.slo_attainment > other.slo_attainment,
                )
            )
        verdicts += [f"{'PASS' if ok else 'MISS'}  {what}" for what, ok in checks]
    print("\ntargets for tokenscale:")
    for v in verdicts:
        print(" ", v)
    median = statistics.median(seconds)
    print(
        f"  {'PASS' if median < 20 else 'MISS'}  one policy over the trace: "
        f"median {median:.1f} s (< 20 s)"
    )


if __name__ == "__main__":
    main()
