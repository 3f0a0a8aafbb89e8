"""Fault drills on the autoscaling suite's shapes: each fault alone, at the middle of the
trace, under the tokenscale policy (mismatch 1.0, cold start 180 s), beside the same run
without it (``tokenscale.simulation.drills``).

    python benchmarks/fault_drills.py [--shapes azure-conv mooncake ...]
        [--faults replica-loss cache-flush ...] [--markdown drills.md]

The default is the small grid: two shapes (``azure-conv`` without prefix reuse, ``mooncake``
with it) × the five faults. Prints one row per (shape, fault): recovery, attainment during the
fault (and without it), the largest queue and KV usage during it, the whole run's attainment,
the operator's replica changes in the window, and wall seconds; with a replica loss, the
smallest ``spareReplicas`` that holds through it.
"""

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.autoscaling import SUITE  # noqa: E402
from tokenscale.simulation import Setup, SimOptions  # noqa: E402
from tokenscale.simulation.drills import drill, recommend_redundancy  # noqa: E402
from tokenscale.simulation.faults import FAULT_KINDS, Fault  # noqa: E402

DEFAULT_SHAPES = ("azure-conv", "mooncake")


def _clock(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m}:{s:02d}"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", nargs="+", default=list(DEFAULT_SHAPES))
    ap.add_argument("--faults", nargs="+", default=list(FAULT_KINDS), choices=FAULT_KINDS)
    ap.add_argument("--markdown", type=Path, help="Also write the table here.")
    args = ap.parse_args(argv)
    entries = {e.name: e for e in SUITE}
    unknown = [s for s in args.shapes if s not in entries]
    if unknown:
        sys.exit(f"unknown shape(s) {', '.join(unknown)}; use {', '.join(entries)}")
    lines = [
        "| shape | fault at | recovery | attainment during (without) | max queue (without) | "
        "max KV (without) | whole run (without) | operator's replica changes | wall s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    advice_lines: list[str] = []
    for shape in args.shapes:
        trace, spec = entries[shape].build()
        setup = Setup(spec, trace, SimOptions(), shape)
        at_s = round(trace.duration_s / 2.0)
        for kind in args.faults:
            started = time.perf_counter()
            d = drill(setup, (Fault(kind, float(at_s)),))
            wall = time.perf_counter() - started
            r = d.reports[0]
            recovery = "not recovered" if r.recovery_s is None else f"{r.recovery_s:.0f} s"
            changes = "; ".join(x.split(" replicas")[0] for x in r.decisions[:4]) or "none"
            row = (
                f"| {shape} | {kind} {_clock(at_s)} | {recovery} | "
                f"{r.slo_attainment_during:.1%} ({r.slo_attainment_during_without:.1%}) | "
                f"{r.max_waiting_during} ({r.max_waiting_during_without}) | "
                f"{r.kv_usage_max_during:.0%} ({r.kv_usage_max_during_without:.0%}) | "
                f"{d.faulted.slo_attainment:.2%} ({d.baseline.slo_attainment:.2%}) | "
                f"{changes} | {wall:.0f} |"
            )
            lines.append(row)
            print(row, flush=True)
            if kind == "replica-loss":
                advice = recommend_redundancy(setup, float(at_s))
                advice_lines.append(f"- {shape}: {advice.reason}")
                print(advice_lines[-1], flush=True)
    text = "\n".join([*lines, "", *advice_lines]) + "\n"
    if args.markdown is not None:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
