"""Re-fit the timing model's efficiencies and overheads on the accuracy dataset's fit set.

Run: ``python benchmarks/accuracy_refit.py`` (``--json`` for machine-readable output).

Only the fit set's timing entries that are not excluded take part (decode, TTFT, throughput;
the held-out third is never read by the search). The objective is the sum over those groups of
the mean absolute error of the ``measured`` points, plus, for every ``lower-bound`` entry the
estimate falls short of by more than the group's mean target, that shortfall. The search is a
coordinate descent over a fixed grid per constant, from the current defaults, until a full round
moves nothing; it prints the optimum and every group's error before and after, fit and held-out
apart (the held-out figures are computed after the search, for the report only).
"""

import sys

# The script's own folder holds ``accuracy.py`` and friends; ``python benchmarks/X.py`` puts it
# first on the path, which would shadow the standard library's ``operator`` were one named so.
if sys.path and sys.path[0].rstrip("/").endswith("benchmarks"):
    del sys.path[0]

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

from benchmarks import accuracy  # noqa: E402
from tokenscale.api.assumptions import Assumptions  # noqa: E402
from tokenscale.planning import performance  # noqa: E402

TIMING = ("decode", "ttft", "throughput")

#: The constants searched, by their ``spec.assumptions`` name, and the values tried.
GRID: dict[str, list[float]] = {
    "decodeBandwidthEfficiency": [0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9],
    "stepOverheadSeconds": [0.0006, 0.0008, 0.001, 0.0012, 0.0015, 0.002, 0.0025, 0.003, 0.004],
    "prefillComputeEfficiency": [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9],
    "allreduceLatencySeconds": [4e-6, 8e-6, 12e-6, 16e-6, 24e-6, 32e-6],
}

_FIELDS = {
    "decodeBandwidthEfficiency": "decode_bandwidth_efficiency",
    "stepOverheadSeconds": "step_overhead_seconds",
    "prefillComputeEfficiency": "prefill_compute_efficiency",
    "allreduceLatencySeconds": "allreduce_latency_seconds",
}


def defaults() -> dict[str, float]:
    a = Assumptions()
    return {name: float(getattr(a, field)) for name, field in _FIELDS.items()}


def timing_subset(data: dict[str, Any], split: str) -> dict[str, Any]:
    """The data with only the timing entries of one set that are scored."""
    splits = accuracy.split_of(data)
    keep = [
        e
        for e in data["measurements"]
        if splits[str(e["id"])] == split
        and accuracy.GROUPS[e["kind"]] in TIMING
        and accuracy.validity(e) != "excluded"
    ]
    # pin the split so the subset keeps each entry's set
    pinned = [e | {"split": split} for e in keep]
    return {**data, "measurements": pinned}


def objective(rows: list[accuracy.Row]) -> float:
    total = 0.0
    for group in TIMING:
        errs = [abs(r.error) for r in rows if r.group == group and r.validity == "measured"]
        if errs:
            total += statistics.fmean(errs)
        margin = accuracy.TARGETS[group][0]
        for r in rows:
            if r.group == group and r.validity == "lower-bound":
                total += max(0.0, (1.0 - margin) - r.estimate / r.measured)
    return total


def refit(fit: dict[str, Any]) -> tuple[dict[str, float], float, float]:
    """Coordinate descent from the defaults: (optimum, objective before, objective after)."""
    current = defaults()
    before = best = objective(accuracy.evaluate(fit, current))
    moved = True
    while moved:
        moved = False
        for name, values in GRID.items():
            for v in values:
                if v == current[name]:
                    continue
                trial = current | {name: v}
                score = objective(accuracy.evaluate(fit, trial))
                if score < best - 1e-9:
                    best, current, moved = score, trial, True
    return current, before, best


#: Values tried for ``WEIGHT_ONLY_DECODE_BANDWIDTH_EFFICIENCY`` (a module constant of the timing
#: model, not a ``spec.assumptions`` field).
INT4_GRID = [round(0.3 + 0.05 * i, 2) for i in range(15)]


def int4_decode_errors(data: dict[str, Any], value: float) -> list[float]:
    """Absolute errors of the INT4 decode entries in ``data`` with the constant at ``value``."""
    kept = performance.WEIGHT_ONLY_DECODE_BANDWIDTH_EFFICIENCY
    performance.WEIGHT_ONLY_DECODE_BANDWIDTH_EFFICIENCY = value
    try:
        rows = accuracy.evaluate(data)
    finally:
        performance.WEIGHT_ONLY_DECODE_BANDWIDTH_EFFICIENCY = kept
    return [
        abs(r.error)
        for r in rows
        if r.group == "decode" and r.weight_dtype == "int4" and r.validity == "measured"
    ]


def refit_int4(fit: dict[str, Any]) -> tuple[float, float]:
    """The grid value with the lowest mean error on the fit set's INT4 decode entries."""
    best = min(INT4_GRID, key=lambda v: statistics.fmean(int4_decode_errors(fit, v) or [0.0]))
    return best, statistics.fmean(int4_decode_errors(fit, best) or [0.0])


def _groups(rows: list[accuracy.Row]) -> dict[str, dict[str, Any]]:
    summary = accuracy.summarize(rows)
    return {g: s for g, s in summary["all"].items() if g in TIMING}


def _errors(s: dict[str, Any]) -> str:
    if not s["n"]:
        return "-"
    return f"{s['mean_abs_error']:.1%} / {s['worst_abs_error']:.1%}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    args = parser.parse_args()
    data = yaml.safe_load(accuracy.DATA.read_text())
    fit, held = timing_subset(data, "fit"), timing_subset(data, "held-out")
    optimum, before, after = refit(fit)
    start = defaults()
    tables = {
        split: {
            "before": _groups(accuracy.evaluate(subset, start)),
            "after": _groups(accuracy.evaluate(subset, optimum)),
        }
        for split, subset in (("fit", fit), ("held-out", held))
    }
    int4_best, int4_error = refit_int4(fit)
    int4_now = performance.WEIGHT_ONLY_DECODE_BANDWIDTH_EFFICIENCY
    int4_held = int4_decode_errors(held, int4_now)
    int4 = {
        "constant": "WEIGHT_ONLY_DECODE_BANDWIDTH_EFFICIENCY",
        "current": int4_now,
        "optimum": int4_best,
        "fit_mean_abs_error": int4_error,
        "held_out_abs_errors": int4_held,
    }
    if args.json:
        report = {
            "defaults": start,
            "optimum": optimum,
            "objective": {"before": before, "after": after},
            "int4": int4,
            **tables,
        }
        print(json.dumps(report, indent=2))
        return 0
    for name, value in optimum.items():
        mark = "" if value == start[name] else f"  (default {start[name]:g})"
        print(f"{name:28} {value:g}{mark}")
    print(f"objective (fit set): {before:.4f} → {after:.4f}")
    held_errs = ", ".join(f"{e:.1%}" for e in int4_held)
    print(
        f"WEIGHT_ONLY_DECODE_BANDWIDTH_EFFICIENCY {int4_best:g} on the fit set's INT4 decode "
        f"(mean |err| {int4_error:.1%}; now {int4_now:g}; held-out |err| {held_errs})\n"
    )
    print(f"{'set':9} {'metric':11} {'n':>3} {'before':>15} {'after':>15} {'bounds':>12}")
    for split, table in tables.items():
        for group, b in table["before"].items():
            a = table["after"][group]
            bounds = f"{b['bounds_held']}/{b['bounds']} → {a['bounds_held']}/{a['bounds']}"
            print(
                f"{split:9} {group:11} {b['n']:>3} {_errors(b):>15} {_errors(a):>15} "
                f"{bounds if b['bounds'] else '-':>12}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
