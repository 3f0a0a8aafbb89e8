"""The planner's speculative-decoding model against published measurements
(benchmarks/accuracy/speculative.yaml).

Run: ``python -m benchmarks.accuracy_speculative [-o json]``. Each entry is rebuilt as a spec
(target, GPU, TP 1, BF16, the entry's lengths) with ``spec.serving.speculative`` set to the
entry's method and ``k``; the acceptance rate α is the one that gives the entry's mean accepted
length τ through the planner's own formula τ = (1 − α^(k+1)) / (1 − α) (solved by bisection:
τ rises monotonically with α). The planner's timing models with and without speculation
(``perf_at``) give the TPOT at the entry's batch; the estimate is the speed-up
TPOT without ÷ TPOT with (and the TPOT with speculation where the source states it). Errors are
(estimate − measured) ÷ measured, reported per entry and as the median absolute error of the fit
set and of the held-out set apart, on ``validity: measured`` entries only (the held-out set is
whole sources, ``split: held-out`` in ``sources:``; an ``excluded`` entry is printed, not scored).
"""

import argparse
import dataclasses
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import yaml

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning import forecast_conditions, resolve
from tokenscale.planning.planner import perf_at
from tokenscale.planning.speculative import (
    HEAD_FORWARD_OVERHEAD_SECONDS,
    HEAD_METHODS,
    SpeculativePerfModel,
    tokens_per_step,
)

DATA = Path(__file__).resolve().parent / "accuracy" / "speculative.yaml"

#: Drafts the catalog does not carry, as their Hugging Face ``config.json`` fields.
DRAFT_CONFIGS: dict[str, dict[str, Any]] = {
    # Qwen/Qwen3-1.7B config.json (Apache-2.0): 28 layers, hidden 2048, 16 heads, 8 KV heads.
    "qwen3-1.7b": {
        "model_type": "qwen3",
        "num_hidden_layers": 28,
        "hidden_size": 2048,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "intermediate_size": 6144,
        "vocab_size": 151936,
        "max_position_embeddings": 40960,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
    }
}
#: The draft checkpoints vLLM loads for the EAGLE entries (the spec requires a name).
EAGLE_HEADS = {
    "eagle": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B",
    "eagle3": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
}


def acceptance_from_tau(tau: float, k: int) -> float:
    """α with (1 − α^(k+1)) / (1 − α) = τ (bisection; τ is clamped to [1, k + 1))."""
    target = min(max(tau, 1.0), k + 1 - 1e-9)
    lo, hi = 0.0, 1.0 - 1e-12
    for _ in range(100):
        mid = (lo + hi) / 2.0
        if tokens_per_step(mid, k) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def _spec(m: dict[str, Any], alpha: float) -> InferenceServiceSpec:
    method = m["method"]
    speculative: dict[str, Any] = {
        "method": method,
        "numSpeculativeTokens": m["k"],
        "acceptanceRate": min(alpha, 0.99),
    }
    if method == "draft_model":
        draft = m["draft"]
        speculative["draftModel"] = {"name": draft, "hfConfig": DRAFT_CONFIGS[draft]}
    elif method in EAGLE_HEADS:
        speculative["draftModel"] = {"name": EAGLE_HEADS[method]}
    return InferenceServiceSpec.model_validate(
        {
            "model": {"name": m["model"], "catalog": m["model"], "weightDtype": "bf16"},
            "hardware": {"gpu": m["gpu"], "tensorParallelSize": m.get("tp", 1)},
            "workload": {
                "rps": {"mean": 0.1},
                "inputTokens": {"mean": m["input_tokens"]},
                "outputTokens": {"mean": m["output_tokens"]},
                "maxContextTokens": 4096,
            },
            "serving": {"speculative": speculative},
        }
    )


def _models(m: dict[str, Any]) -> tuple[SpeculativePerfModel, Any, float]:
    """The planner's timing models with and without speculation for entry ``m``, and its α."""
    alpha = acceptance_from_tau(m["mean_accepted_length"], m["k"])
    r = resolve(_spec(m, alpha), m["id"])
    s = r.speculative
    assert s is not None
    cond = forecast_conditions(r)
    tp = m.get("tp", 1)
    on = perf_at(dataclasses.replace(r, speculative=dataclasses.replace(s, enabled=True)), cond, tp)
    off = perf_at(
        dataclasses.replace(r, speculative=dataclasses.replace(s, enabled=False)), cond, tp
    )
    assert isinstance(on, SpeculativePerfModel)
    return on, off, alpha


def fit_head_forward_overhead(entries: list[dict[str, Any]]) -> tuple[float, int]:
    """Least-squares per-forward overhead of EAGLE/MTP heads over the fit rows that state the
    TPOT with speculation at batch 1: a measured step is ``TPOT × τ`` and the model's is
    ``t_verify + overhead + k·(roofline + c)``, so ``c = Σ k·residual ÷ Σ k²``."""
    num = den = 0.0
    rows = 0
    for m in entries:
        if m["held_out"] or m["validity"] == "excluded":
            continue
        if m["method"] not in HEAD_METHODS or m.get("tpot_ms_with") is None:
            continue
        if m["batch"] != 1:
            continue
        on, _, _ = _models(m)
        k = m["k"]
        step = on.assumptions.step_overhead_seconds
        roofline = (on.draft_seconds(1.0) - step) / k - HEAD_FORWARD_OVERHEAD_SECONDS
        measured = m["tpot_ms_with"] * 1e-3 * m["mean_accepted_length"]
        residual = measured - on.verify_seconds(1.0) - step - k * roofline
        num += k * residual
        den += k * k
        rows += 1
    return (num / den if den else 0.0), rows


def score(m: dict[str, Any]) -> dict[str, Any]:
    """The planner's speed-up and TPOTs for one entry, beside the measured ones."""
    on, off, alpha = _models(m)
    batch = float(m["batch"])
    tpot_on, tpot_off = on.tpot_seconds(batch), off.tpot_seconds(batch)
    measured = m.get("speedup") or m["tpot_ms_without"] / m["tpot_ms_with"]
    out: dict[str, Any] = {
        "id": m["id"],
        "held_out": bool(m.get("held_out")),
        "validity": m["validity"],
        "method": m["method"],
        "k": m["k"],
        "tau": m["mean_accepted_length"],
        "alpha": round(alpha, 4),
        "batch": m["batch"],
        "speedup_measured": round(measured, 3),
        "speedup_estimate": round(tpot_off / tpot_on, 3),
        "speedup_error": round((tpot_off / tpot_on - measured) / measured, 4),
        "tpot_ms_without_estimate": round(tpot_off * 1e3, 2),
        "tpot_ms_with_estimate": round(tpot_on * 1e3, 2),
    }
    if m.get("tpot_ms_with") is not None:
        out["tpot_ms_with_measured"] = m["tpot_ms_with"]
        out["tpot_with_error"] = round((tpot_on * 1e3 - m["tpot_ms_with"]) / m["tpot_ms_with"], 4)
    if m.get("tpot_ms_without") is not None:
        out["tpot_ms_without_measured"] = m["tpot_ms_without"]
    return out


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [r for r in rows if r["validity"] != "excluded"]
    if not rows:
        return {"entries": 0}
    speed = [r["speedup_error"] for r in rows]
    tpot = [r["tpot_with_error"] for r in rows if "tpot_with_error" in r]
    return {
        "entries": len(rows),
        "speedup_median_abs_error": round(statistics.median(abs(e) for e in speed), 4),
        "speedup_median_signed_error": round(statistics.median(speed), 4),
        "tpot_with_median_abs_error": round(statistics.median(abs(e) for e in tpot), 4)
        if tpot
        else None,
    }


def load() -> list[dict[str, Any]]:
    """The entries, each completed by the file's ``defaults`` and its source's split
    (``held_out``: the whole source is held out)."""
    data = yaml.safe_load(DATA.read_text())
    defaults: dict[str, Any] = data["defaults"]
    sources: dict[str, Any] = data["sources"]
    return [
        defaults | m | {"held_out": sources[m["source"]].get("split") == "held-out"}
        for m in data["measurements"]
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", choices=["table", "json"], default="table")
    parser.add_argument(
        "--fit",
        action="store_true",
        help="print the least-squares per-forward head overhead over the fit rows and exit",
    )
    args = parser.parse_args(argv)
    if args.fit:
        c, n = fit_head_forward_overhead(load())
        print(
            f"head forward overhead: {c * 1e3:.3f} ms (least squares over {n} fit rows; "
            f"the planner uses {HEAD_FORWARD_OVERHEAD_SECONDS * 1e3:.3f} ms)"
        )
        return 0
    rows = [score(m) for m in load()]
    result: dict[str, Any] = {
        "entries": rows,
        "fit": _summary([r for r in rows if not r["held_out"]]),
        "held_out": _summary([r for r in rows if r["held_out"]]),
    }
    if args.output == "json":
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"{'entry':20} {'set':8} {'validity':9} {'k':>2} {'τ':>5} {'α':>6} "
        f"{'speed-up meas/est':>18} "
        f"{'err':>7} {'TPOT ms off est':>15} {'TPOT ms on meas/est':>20}"
    )
    for r in rows:
        on = f"{r.get('tpot_ms_with_measured', '–')}/{r['tpot_ms_with_estimate']}"
        print(
            f"{r['id']:20} {'held-out' if r['held_out'] else 'fit':8} {r['validity']:9} "
            f"{r['k']:>2} {r['tau']:>5.2f} "
            f"{r['alpha']:>6.3f} {r['speedup_measured']:>8.2f}/{r['speedup_estimate']:<9.2f} "
            f"{r['speedup_error']:>+7.1%} {r['tpot_ms_without_estimate']:>15.2f} {on:>20}"
        )
    for name in ("fit", "held_out"):
        s = result[name]
        if not s["entries"]:
            print(f"{name}: no measured entry")
            continue
        tpot = s["tpot_with_median_abs_error"]
        print(
            f"{name}: {s['entries']} entries, speed-up median |error| "
            f"{s['speedup_median_abs_error']:.1%} (signed {s['speedup_median_signed_error']:+.1%})"
            + (f", TPOT-with median |error| {tpot:.1%}" if tpot is not None else "")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
