"""The autoscaling suite's misses traced: per shape, tokenscale's timeline around every minute
whose arrivals met the SLO less than the target, each such minute classified
(``tokenscale.simulation.miss_trace``: unannounced — a burst no load announced within one
cold start —, late — fewer replicas ready than the held load seen a cold start earlier
needed —, recurrent — as late, but announced by an earlier burst that went away —, or with
the oracle's need ready).

Each shape is built as ``benchmarks/autoscaling.py`` builds it (same trace, spec, capacity
probe and verified oracle), and only tokenscale is replayed, so a shape costs the probe, the
oracle's repair rounds and one run.

    python benchmarks/autoscaling_misses.py --shapes step-s23 on-off [--cold-start 180]
        [--mismatch 1.0] [--around 3] [--json out.jsonl] [--from-json out.jsonl]
"""

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a script: benchmarks/ is first on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.autoscaling import HELD_OUT, SUITE, Entry
from tokenscale.simulation import Setup, SimOptions
from tokenscale.simulation.miss_trace import MissTrace, classified, timeline_text, trace_misses
from tokenscale.simulation.run import ORACLE_ROUNDS


def trace_entry(
    entry: Entry, cold_start_s: float = 180.0, mismatch: float = 1.0, capacity_requests: int = 1500
) -> MissTrace:
    """One shape as the suite runs it, tokenscale's misses traced."""
    trace, spec = entry.build()
    opts = SimOptions(
        mismatch=mismatch,
        cold_start_s=cold_start_s,
        capacity_requests=capacity_requests,
        timeline=False,
        oracle_repair_rounds=ORACLE_ROUNDS,
    )
    return trace_misses(Setup(spec, trace, opts, entry.name), entry.name)


def report(t: MissTrace, around_min: int = 3) -> str:
    r = t.result
    by = t.missed_by_class()
    suite = "dev" if t.shape in {e.name for e in SUITE} else "held-out"
    head = (
        f"== {t.shape} ({suite}), cold start {t.cold_start_s:g} s: tokenscale "
        f"{r.slo_attainment * 100:.2f} % at {r.gpu_hours:.2f} GPU-h; "
        f"{r.requests - round(r.slo_attainment * r.requests)} requests missed, "
        f"{sum(by.values())} of them in {len(t.missed_rows)} minutes under the "
        f"{t.target_attainment * 100:g} % target: unannounced {by['unannounced']}, "
        f"late {by['late']}, recurrent {by['recurrent']}, need ready {by['need ready']}"
    )
    if not t.missed_rows:
        return head
    return head + "\n" + timeline_text(t, around_min)


def main(argv: Sequence[str] | None = None) -> None:
    entries = {e.name: e for e in (*SUITE, *HELD_OUT)}
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", nargs="+", choices=list(entries), required=True)
    ap.add_argument("--cold-start", type=float, default=180.0)
    ap.add_argument("--mismatch", type=float, default=1.0)
    ap.add_argument("--around", type=int, default=3, help="Minutes shown around each miss.")
    ap.add_argument("--json", type=Path, help="Append each shape's trace here.")
    ap.add_argument(
        "--from-json",
        type=Path,
        help="Only read traces stored with --json again (classified under today's rule).",
    )
    args = ap.parse_args(argv)
    if args.from_json is not None:
        for line in args.from_json.read_text().splitlines():
            t = classified(MissTrace.model_validate_json(line))
            if t.shape in args.shapes:
                print(report(t, args.around), flush=True)
        return
    for name in args.shapes:
        t = trace_entry(entries[name], args.cold_start, args.mismatch)
        print(report(t, args.around), flush=True)
        if args.json is not None:
            with args.json.open("a") as out:
                out.write(json.dumps(t.model_dump(mode="json")) + "\n")


if __name__ == "__main__":
    main()
