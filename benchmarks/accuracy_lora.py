"""The planner's LoRA step model against published measurements (benchmarks/accuracy/lora.yaml).

Run: ``python benchmarks/accuracy_lora.py [-o json] [--fit]``. Each entry is rebuilt as a spec
(its model, GPU, TP 1, BF16, its lengths) with ``spec.lora`` holding ``adapters`` equal-share
adapters of the entry's rank, ``maxLoras`` and ``maxLoraRank``; the planner's timing model
(``perf_at``) gives the LoRA part of a decode step at the entry's batch,
``kernel_seconds_for(D)`` with ``D`` the expected distinct adapters among ``batch`` requests
(``planning/lora.py``). A decode entry is scored on that extra against
``itl_with − itl_without``; a throughput entry on the planner's TPOT without ÷ with at ``batch``
against ``throughput_with ÷ throughput_without``. Errors are (estimate − measured) ÷ measured,
reported per entry and as the median absolute error of the fit set and of the held-out set apart,
on ``validity: measured`` entries only (the held-out set is whole sources, ``split: held-out`` in
``sources:``; an ``excluded`` entry is printed, not scored).

``--fit`` prints the least-squares kernel constants over the fit set's decode entries: the model
is ``extra = 2·G·L·(t_kernel + D·t_adapter) + D·slot_bytes / HBM``, linear in the two unknowns
once the slot reads are taken off, solved by the 2 × 2 normal equations.
"""

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: benchmarks/ is first on the path
sys.path.insert(0, str(ROOT / "operator"))

import dataclasses  # noqa: E402

import yaml  # noqa: E402

from tokenscale.api.inference_service import InferenceServiceSpec  # noqa: E402
from tokenscale.planning import forecast_conditions, resolve  # noqa: E402
from tokenscale.planning.lora import (  # noqa: E402
    LORA_ADAPTER_KERNEL_SECONDS,
    LORA_GROUPS,
    LORA_KERNEL_SECONDS,
    LoraPerfModel,
    expected_distinct,
    slot_bytes_per_gpu,
)
from tokenscale.planning.performance import PerfModel  # noqa: E402
from tokenscale.planning.planner import perf_at  # noqa: E402

DATA = ROOT / "benchmarks" / "accuracy" / "lora.yaml"


def _spec(m: dict[str, Any]) -> InferenceServiceSpec:
    lora = {
        "zipfExponent": 0.0,  # equal shares: the sources spread requests evenly
        "maxLoras": m["max_loras"],
        "maxLoraRank": m["max_lora_rank"],
        "maxCpuLoras": max(m["max_loras"], m["adapters"]),
        "adapters": [
            {"name": f"a{i}", "source": f"/adapters/a{i}", "rank": m["rank"]}
            for i in range(m["adapters"])
        ],
    }
    return InferenceServiceSpec.model_validate(
        {
            "model": {"name": m["model"], "catalog": m["model"], "weightDtype": "bf16"},
            "hardware": {"gpu": m["gpu"], "tensorParallelSize": 1},
            "workload": {
                "rps": {"mean": 0.1},
                "inputTokens": {"mean": m["input_tokens"]},
                "outputTokens": {"mean": m["output_tokens"]},
                "maxContextTokens": 4096,
            },
            "lora": lora,
        }
    )


def models(m: dict[str, Any]) -> tuple[LoraPerfModel, PerfModel]:
    """The planner's timing models of entry ``m`` with and without LoRA."""
    r = resolve(_spec(m), m["id"])
    cond = forecast_conditions(r)
    on = perf_at(r, cond, 1)
    off = perf_at(dataclasses.replace(r, lora=None), cond, 1)
    assert isinstance(on, LoraPerfModel)
    assert on.lora is not None
    return on, off


def distinct(m: dict[str, Any]) -> float:
    """Expected distinct adapters among ``batch`` requests over ``adapters`` equal shares."""
    n = m["adapters"]
    return expected_distinct([1.0 / n] * n, float(m["batch"]), m["max_loras"])


def score(m: dict[str, Any]) -> dict[str, Any]:
    """The planner's LoRA extra (or throughput ratio) for one entry, beside the measured one."""
    out: dict[str, Any] = {
        "id": m["id"],
        "held_out": m["held_out"],
        "validity": m["validity"],
        "adapters": m["adapters"],
    }
    if m["validity"] == "excluded":
        return out
    on, off = models(m)
    assert on.lora is not None
    d = distinct(m)
    out["distinct"] = round(d, 1)
    batch = float(m["batch"])
    if m.get("itl_ms_with") is not None:
        est = on.lora.kernel_seconds_for(d, 1, on._bw) * 1e3
        measured = m["itl_ms_with"] - m["itl_ms_without"]
        out |= {"kind": "step extra ms", "measured": round(measured, 2), "estimate": round(est, 2)}
    else:
        est = off.tpot_seconds(batch) / on.tpot_seconds(batch)
        measured = m["throughput_with"] / m["throughput_without"]
        out |= {
            "kind": "throughput ratio",
            "measured": round(measured, 3),
            "estimate": round(est, 3),
        }
    out["error"] = round((est - measured) / measured, 4)
    return out


def fit(entries: list[dict[str, Any]]) -> tuple[float, float, int]:
    """Least-squares ``(t_kernel, t_adapter)`` over the fit set's measured decode entries."""
    rows: list[tuple[float, float]] = []
    for m in entries:
        if m["held_out"] or m["validity"] != "measured" or m.get("itl_ms_with") is None:
            continue
        on, _ = models(m)
        assert on.lora is not None
        d = distinct(m)
        kernels = 2.0 * LORA_GROUPS * on.lora.arch.layers
        reads = d * slot_bytes_per_gpu(on.lora.arch, on.lora.max_lora_rank, 1) / on._bw
        y = ((m["itl_ms_with"] - m["itl_ms_without"]) * 1e-3 - reads) / kernels
        rows.append((d, y))
    n = len(rows)
    if n < 2:
        return LORA_KERNEL_SECONDS, LORA_ADAPTER_KERNEL_SECONDS, n
    sx = sum(d for d, _ in rows)
    sy = sum(y for _, y in rows)
    sxx = sum(d * d for d, _ in rows)
    sxy = sum(d * y for d, y in rows)
    slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    return (sy - slope * sx) / n, slope, n


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [r for r in rows if r["validity"] == "measured"]
    if not rows:
        return {"entries": 0}
    errors = [r["error"] for r in rows]
    return {
        "entries": len(rows),
        "median_abs_error": round(statistics.median(abs(e) for e in errors), 4),
        "median_signed_error": round(statistics.median(errors), 4),
        "worst_abs_error": round(max(abs(e) for e in errors), 4),
    }


def load(path: Path = DATA) -> list[dict[str, Any]]:
    """The entries, each completed by the file's ``defaults`` and its source's split."""
    data = yaml.safe_load(path.read_text())
    defaults: dict[str, Any] = data["defaults"]
    sources: dict[str, Any] = data["sources"]
    return [
        defaults | m | {"held_out": sources[m["source"]].get("split") == "held-out"}
        for m in data["measurements"]
    ]


def evaluate(entries: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [score(m) for m in entries]
    return {
        "entries": rows,
        "fit": _summary([r for r in rows if not r["held_out"]]),
        "held_out": _summary([r for r in rows if r["held_out"]]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("-o", "--output", choices=["table", "json"], default="table")
    parser.add_argument(
        "--fit", action="store_true", help="print the least-squares kernel constants and exit"
    )
    args = parser.parse_args(argv)
    entries = load()
    if args.fit:
        t_kernel, t_adapter, n = fit(entries)
        print(
            f"t_kernel {t_kernel * 1e6:.2f} µs, t_adapter {t_adapter * 1e6:.3f} µs per distinct "
            f"adapter (least squares over {n} fit rows; the planner uses "
            f"{LORA_KERNEL_SECONDS * 1e6:.2f} µs and {LORA_ADAPTER_KERNEL_SECONDS * 1e6:.3f} µs)"
        )
        return 0
    result = evaluate(entries)
    if args.output == "json":
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"{'entry':20} {'set':8} {'validity':9} {'N':>4} {'D':>6} {'kind':17} "
        f"{'meas/est':>16} {'err':>7}"
    )
    for r in result["entries"]:
        s = "held-out" if r["held_out"] else "fit"
        if r["validity"] == "excluded":
            print(f"{r['id']:20} {s:8} {'excluded':9} {r['adapters']:>4}")
            continue
        both = f"{r['measured']}/{r['estimate']}"
        print(
            f"{r['id']:20} {s:8} {r['validity']:9} {r['adapters']:>4} {r['distinct']:>6.1f} "
            f"{r['kind']:17} {both:>16} {r['error']:>+7.1%}"
        )
    for name in ("fit", "held_out"):
        s = result[name]
        if not s["entries"]:
            print(f"{name}: no measured entry")
            continue
        print(
            f"{name}: {s['entries']} entries, median |error| {s['median_abs_error']:.1%} "
            f"(signed {s['median_signed_error']:+.1%}), worst {s['worst_abs_error']:.1%}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
