"""Re-fit the timing model's efficiencies and overheads on the accuracy dataset's fit set.

Run: ``python benchmarks/accuracy_refit.py`` (``--json`` for machine-readable output).

Only the fit set's timing entries that are not excluded take part (decode, TTFT, throughput;
the held-out third is never read by the search). The objective is the sum over those groups of
the mean absolute error of the ``measured`` points; ``lower-bound`` entries are constraints,
scored pass/fail as the benchmark scores them: a candidate that misses more of them than the
starting point does is refused. The search is a coordinate descent over a fixed grid per
constant (five ``spec.assumptions`` defaults and the timing model's
``WEIGHT_ONLY_DECODE_BANDWIDTH_EFFICIENCY``), from the current values, until a full round moves
nothing; it prints the optimum and every group's error before and after, fit and held-out apart
(the held-out figures are computed after the search, for the report only), and the INT4
constant's optimum with everything else as it is.
"""

import sys

# The script's own folder holds ``accuracy.py`` and friends; ``python benchmarks/X.py`` puts it
# first on the path, which would shadow the standard library's ``operator`` were one named so.
if sys.path and sys.path[0].rstrip("/").endswith("benchmarks"):
    del sys.path[0]

import argparse
import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

from benchmarks import accuracy  # noqa: E402
from tokenscale.api.assumptions import Assumptions  # noqa: E402
from tokenscale.planning import decode_gpu, performance  # noqa: E402

TIMING = ("decode", "ttft", "throughput")

#: The timing model's module constant searched beside the ``spec.assumptions`` fields.
INT4 = "WEIGHT_ONLY_DECODE_BANDWIDTH_EFFICIENCY"

#: The constants searched (``spec.assumptions`` names, and ``INT4``) and the values tried.
GRID: dict[str, list[float]] = {
    "decodeBandwidthEfficiency": [0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9],
    "stepOverheadSeconds": [0.0006, 0.0008, 0.001, 0.0012, 0.0015, 0.002, 0.0025, 0.003, 0.004],
    "prefillComputeEfficiency": [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9],
    "allreduceLatencySeconds": [4e-6, 8e-6, 12e-6, 16e-6, 24e-6, 32e-6],
    "requestOverheadSeconds": [0.004, 0.008, 0.012, 0.016, 0.024, 0.032, 0.04, 0.048, 0.056, 0.064],
    INT4: [round(0.3 + 0.05 * i, 2) for i in range(15)],
}

_FIELDS = {
    "decodeBandwidthEfficiency": "decode_bandwidth_efficiency",
    "stepOverheadSeconds": "step_overhead_seconds",
    "prefillComputeEfficiency": "prefill_compute_efficiency",
    "allreduceLatencySeconds": "allreduce_latency_seconds",
    "requestOverheadSeconds": "request_overhead_seconds",
}


def defaults() -> dict[str, float]:
    """The values the planner uses now, by the names of ``GRID``."""
    a = Assumptions()
    now = {name: float(getattr(a, field)) for name, field in _FIELDS.items()}
    return now | {INT4: performance.WEIGHT_ONLY_DECODE_BANDWIDTH_EFFICIENCY}


def evaluate(data: dict[str, Any], values: dict[str, float]) -> list[accuracy.Row]:
    """The benchmark's rows with ``values`` in place of the planner's constants."""
    kept = performance.WEIGHT_ONLY_DECODE_BANDWIDTH_EFFICIENCY
    performance.WEIGHT_ONLY_DECODE_BANDWIDTH_EFFICIENCY = values[INT4]
    try:
        return accuracy.evaluate(data, {k: v for k, v in values.items() if k != INT4})
    finally:
        performance.WEIGHT_ONLY_DECODE_BANDWIDTH_EFFICIENCY = kept


def timing_subset(data: dict[str, Any], split: str) -> dict[str, Any]:
    """The data with only the timing entries of one set that are scored (the sources, and so
    each entry's set, stay as they are)."""
    splits = accuracy.split_of(data)
    keep = [
        e
        for e in data["measurements"]
        if splits[str(e["id"])] == split
        and accuracy.group_of(e) in TIMING
        and accuracy.validity(e) != "excluded"
    ]
    return {**data, "measurements": keep}


@dataclass(frozen=True)
class OverheadFit:
    """The request overhead (``requestOverheadSeconds`` + prompt tokens ×
    ``requestOverheadPerTokenSeconds``) fitted on the TTFTs at concurrency 1."""

    seconds: float
    seconds_per_token: float
    fit_ids: tuple[str, ...]
    errors: dict[str, dict[str, float]]
    """Per set, entry id → the error at the fitted overhead."""


#: The TTFT kinds whose estimate carries the request overhead once per request.
_TTFT_KINDS = ("ttft_s", "pd_ttft_s", "pd_ttft_at_rate_s")


def _solve_2x2(a: list[list[float]], b: list[float]) -> tuple[float, float]:
    det = a[0][0] * a[1][1] - a[0][1] * a[1][0]
    if abs(det) < 1e-300:
        raise SystemExit("the fit set's TTFTs do not separate the two overhead terms")
    return (
        (b[0] * a[1][1] - a[0][1] * b[1]) / det,
        (a[0][0] * b[1] - b[0] * a[1][0]) / det,
    )


def fit_request_overhead(files: dict[str, dict[str, Any]] | None = None) -> OverheadFit:
    """Least squares on the relative error over the fit set's TTFTs (every file, ``measured``
    entries of the overhead and TTFT groups): each estimate is ``rest + k·O + k·n·P`` (``k``
    requests per TTFT: 2 through the toy P/D proxy; ``n`` the prompt's tokens, which every
    request tokenizes), linear in the fixed overhead ``O`` and the per-token one ``P``: the two
    normal equations of ``Σ (1 − (rest + k·O + k·n·P)/m)²``. The short prompts pin ``O``, the
    long ones ``P``; the prefill, the transfer and the queue stay the planner's."""
    files = accuracy.load_files() if files is None else files
    now = Assumptions()
    entries = {
        str(e["id"]): e
        for data in files.values()
        for e in data["measurements"]
        if e.get("kind") in _TTFT_KINDS
    }
    rows = [
        r
        for r in accuracy.evaluate_all(files)
        if r.id in entries and r.group in ("overhead", "ttft") and r.validity == "measured"
    ]

    def terms(r: accuracy.Row) -> tuple[float, float, float]:
        e = entries[r.id]
        unit = 1e3 if r.unit == "ms" else 1.0
        k, n = int(e.get("proxy_requests", 1)) * unit, float(e["input_tokens"])
        rest = r.estimate - k * (now.request_overhead_seconds)
        rest -= k * n * now.request_overhead_per_token_seconds
        return k, k * n, rest

    a = [[0.0, 0.0], [0.0, 0.0]]
    b = [0.0, 0.0]
    for r in rows:
        if r.split != "fit":
            continue
        x0, x1, rest = terms(r)
        u = (x0 / r.measured, x1 / r.measured)
        y = 1.0 - rest / r.measured
        for i in range(2):
            b[i] += u[i] * y
            for j in range(2):
                a[i][j] += u[i] * u[j]
    if not a[0][0]:
        raise SystemExit("no fit-set entry measures the request overhead")
    fixed, per_token = _solve_2x2(a, b)
    errors: dict[str, dict[str, float]] = {"fit": {}, "held-out": {}}
    for r in rows:
        x0, x1, rest = terms(r)
        errors[r.split][r.id] = (rest + x0 * fixed + x1 * per_token) / r.measured - 1.0
    fit_ids = tuple(errors["fit"])
    return OverheadFit(fixed, per_token, fit_ids, errors)


def bounds_missed(rows: list[accuracy.Row]) -> int:
    return sum(1 for r in rows if r.group in TIMING and r.bound_held is False)


def objective(rows: list[accuracy.Row]) -> float:
    """Sum over the timing groups of the mean absolute error of the measured points."""
    total = 0.0
    for group in TIMING:
        errs = [abs(r.error) for r in rows if r.group == group and r.validity == "measured"]
        if errs:
            total += statistics.fmean(errs)
    return total


def refit(
    fit: dict[str, Any], names: tuple[str, ...] = tuple(GRID)
) -> tuple[dict[str, float], float, float]:
    """Coordinate descent over ``names`` from the current values (the others stay):
    (optimum, objective before, after)."""
    current = defaults()
    rows = evaluate(fit, current)
    allowed = bounds_missed(rows)
    before = best = objective(rows)
    moved = True
    while moved:
        moved = False
        for name in names:
            for v in GRID[name]:
                if v == current[name]:
                    continue
                trial = current | {name: v}
                rows = evaluate(fit, trial)
                score = objective(rows) if bounds_missed(rows) <= allowed else math.inf
                if score < best - 1e-9:
                    best, current, moved = score, trial, True
    return current, before, best


def _groups(rows: list[accuracy.Row]) -> dict[str, dict[str, Any]]:
    summary = accuracy.summarize(rows)
    return {g: s for g, s in summary["all"].items() if g in TIMING}


def _errors(s: dict[str, Any]) -> str:
    if not s["n"]:
        return "-"
    return f"{s['mean_abs_error']:.1%} / {s['worst_abs_error']:.1%}"


def _decode_rows(data: dict[str, Any], ids: set[str]) -> list[accuracy.Row]:
    subset = {**data, "measurements": [e for e in data["measurements"] if e["id"] in ids]}
    return [r for r in accuracy.evaluate(subset) if r.validity == "measured"]


def _mean_abs(rows: list[accuracy.Row]) -> float:
    return statistics.fmean(abs(r.error) for r in rows) if rows else math.nan


def _decode_ids(data: dict[str, Any], split: str, keep: Any) -> set[str]:
    splits = accuracy.split_of(data)
    return {
        str(e["id"])
        for e in data["measurements"]
        if accuracy.group_of(e) == "decode"
        and accuracy.validity(e) == "measured"
        and splits[str(e["id"])] == split
        and keep(e)
    }


#: The values tried for an engine generation's own step cost (seconds) and a GPU's factor.
ENGINE_GRID = [round(0.00025 * i, 5) for i in range(33)]
GPU_GRID = [round(0.70 + 0.01 * i, 2) for i in range(41)]


def fit_engine_generations(data: dict[str, Any]) -> dict[str, tuple[float, float, float]]:
    """Each engine generation's step cost on the fit set's decode points of that generation:
    generation → (cost, fit mean |error|, held-out mean |error|)."""
    out = {}
    kept = dict(accuracy.ENGINE_STEP_OVERHEAD_S)
    try:
        for generation in kept:

            def mine(e: dict[str, Any], g: str = generation) -> bool:
                return accuracy.engine_generation(e) == g

            fit, held = _decode_ids(data, "fit", mine), _decode_ids(data, "held-out", mine)
            best = (math.inf, 0.0)
            for cost in ENGINE_GRID:
                accuracy.ENGINE_STEP_OVERHEAD_S[generation] = cost
                best = min(best, (_mean_abs(_decode_rows(data, fit)), cost))
            accuracy.ENGINE_STEP_OVERHEAD_S[generation] = best[1]
            out[generation] = (best[1], best[0], _mean_abs(_decode_rows(data, held)))
    finally:
        accuracy.ENGINE_STEP_OVERHEAD_S.update(kept)
    return out


def fit_gpu_factors(data: dict[str, Any]) -> dict[str, tuple[float, int, float, int, float]]:
    """Each GPU's decode bandwidth factor on the fit set's decode points of today's engines
    (no engine-generation term): GPU → (factor, fit n, fit mean |error|, held-out n, held-out
    mean |error|)."""
    table = decode_gpu.DECODE_BANDWIDTH_FACTOR
    kept = dict(table)
    out = {}
    gpus = sorted({str(e["gpu"]) for e in data["measurements"]})
    try:
        for gpu in gpus:

            def mine(e: dict[str, Any], g: str = gpu) -> bool:
                return e["gpu"] == g and accuracy.engine_generation(e) is None

            fit, held = _decode_ids(data, "fit", mine), _decode_ids(data, "held-out", mine)
            if not fit:
                continue
            best = (math.inf, 1.0)
            for factor in GPU_GRID:
                table[gpu] = factor
                best = min(best, (_mean_abs(_decode_rows(data, fit)), factor))
            table[gpu] = best[1]
            held_err = _mean_abs(_decode_rows(data, held))
            out[gpu] = (best[1], len(fit), best[0], len(held), held_err)
            table.clear()
            table.update(kept)
    finally:
        table.clear()
        table.update(kept)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=tuple(GRID),
        metavar="NAME",
        help="search only these constants (the others stay at their current values)",
    )
    parser.add_argument(
        "--overhead",
        action="store_true",
        help="fit requestOverheadSeconds and requestOverheadPerTokenSeconds on the TTFTs at "
        "concurrency 1 (every file) and exit",
    )
    parser.add_argument(
        "--engine",
        action="store_true",
        help="fit each engine generation's own step cost (benchmarks/accuracy.py) and exit",
    )
    parser.add_argument(
        "--gpu",
        action="store_true",
        help="fit each GPU's decode bandwidth factor (planning/decode_gpu.py) and exit",
    )
    args = parser.parse_args()
    if args.engine or args.gpu:
        data = yaml.safe_load(accuracy.DATA.read_text())
        if args.engine:
            for generation, (cost, fit_err, held_err) in fit_engine_generations(data).items():
                print(
                    f"engine {generation}: step cost {cost * 1e3:.2f} ms (now "
                    f"{accuracy.ENGINE_STEP_OVERHEAD_S[generation] * 1e3:.2f}); decode mean "
                    f"|error| fit {fit_err:.1%}, held-out {held_err:.1%}"
                )
        if args.gpu:
            for gpu, (f, n_fit, e_fit, n_held, e_held) in fit_gpu_factors(data).items():
                now = decode_gpu.decode_bandwidth_factor(gpu)
                held = f"{e_held:.1%}" if n_held else "-"
                print(
                    f"gpu {gpu}: decode bandwidth factor {f:.2f} (now {now:.2f}); decode mean "
                    f"|error| fit {e_fit:.1%} (n={n_fit}), held-out {held} (n={n_held})"
                )
        return 0
    if args.overhead:
        found = fit_request_overhead()
        a = Assumptions()
        print(
            f"requestOverheadSeconds {found.seconds:.4f} (now {a.request_overhead_seconds:g}), "
            f"requestOverheadPerTokenSeconds {found.seconds_per_token:.3g} (now "
            f"{a.request_overhead_per_token_seconds:g}), least squares on the relative error "
            f"over {len(found.fit_ids)} fit TTFTs"
        )
        for split, errs in found.errors.items():
            for entry, err in errs.items():
                print(f"  {split:9} {entry:44} {err:+.1%}")
        return 0
    data = yaml.safe_load(accuracy.DATA.read_text())
    fit, held = timing_subset(data, "fit"), timing_subset(data, "held-out")
    optimum, before, after = refit(fit, tuple(args.only) if args.only else tuple(GRID))
    alone, _, alone_after = refit(fit, (INT4,))
    start = defaults()
    tables = {
        split: {
            "before": _groups(evaluate(subset, start)),
            "after": _groups(evaluate(subset, optimum)),
        }
        for split, subset in (("fit", fit), ("held-out", held))
    }
    if args.json:
        report = {
            "current": start,
            "optimum": optimum,
            "objective": {"before": before, "after": after},
            "int4_alone": {"value": alone[INT4], "objective": alone_after},
            **tables,
        }
        print(json.dumps(report, indent=2))
        return 0
    for name, value in optimum.items():
        mark = "" if value == start[name] else f"  (now {start[name]:g})"
        print(f"{name:40} {value:g}{mark}")
    print(f"objective (fit set): {before:.4f} → {after:.4f}")
    print(
        f"{INT4} alone (the assumptions as they are): {alone[INT4]:g}, "
        f"objective {alone_after:.4f}\n"
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
