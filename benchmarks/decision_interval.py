"""The decision interval changes reaction time, not the steady state (issue 19 §1).

Runs the tokenscale policy of the simulator — the operator's stepper, one decision per
observation with the real time between observations — on the suite's moving shapes
(``benchmarks/autoscaling.py``'s ``step``, ``diurnal`` and ``bursty``) at mismatch 1.0, cold
start 180 s, scraping every 15 s and deciding every 15, 30 and 60 s (``--interval``). Prints
SLO attainment, GPU-hours and scale events per interval, and the mean replicas over the last
quarter of each trace (where the load has settled) as the steady state.

    python benchmarks/decision_interval.py [--shapes step diurnal] [--intervals 15 60]
"""

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.autoscaling import SUITE
from tokenscale.simulation.run import Setup, SimOptions, simulate

SHAPES = ("step", "diurnal", "bursty")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES))
    parser.add_argument("--intervals", nargs="+", type=float, default=[15.0, 30.0, 60.0])
    args = parser.parse_args(argv)
    entries = {e.name: e for e in SUITE}
    print("| shape | interval s | attainment % | GPU-h | scale events | settled replicas |")
    print("|---|---|---|---|---|---|")
    for shape in args.shapes:
        trace, spec = entries[shape].build()
        base = Setup(spec, trace, SimOptions(cold_start_s=180.0), shape)
        for interval in args.intervals:
            opts = base.opts.model_copy(update={"decision_interval_s": interval})
            started = time.perf_counter()
            r = simulate(base.with_options(opts), "tokenscale")
            tail = [p for p in r.timeline if p.t_s >= 0.75 * r.duration_s]
            settled = sum(p.replicas_target for p in tail) / max(len(tail), 1)
            took = time.perf_counter() - started
            print(
                f"| {shape} | {interval:g} | {100 * r.slo_attainment:.2f} | {r.gpu_hours:.2f} | "
                f"{r.scale_events} | {settled:.2f} |  <!-- {took:.0f} s -->",
                flush=True,
            )


if __name__ == "__main__":
    main()
