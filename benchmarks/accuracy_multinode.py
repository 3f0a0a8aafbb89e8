"""The planner's multi-node layouts against published figures (benchmarks/accuracy/multinode.yaml).

Run: ``python -m benchmarks.accuracy_multinode``. Each entry is rebuilt as a spec (model, GPU,
weight dtype, lengths) and planned at the entry's layout with ``plan_at``; the estimate is the
replica's output tokens/s at its operating batch (no SLO: the knee), per GPU or per node where
the source reports so. Entries marked ``scored: false`` are printed as bounds with the reason
(the source's setup goes beyond what the planner models); the others get an error.
"""

import sys
from pathlib import Path
from typing import Any

import yaml

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.catalog.models import find_model
from tokenscale.planning import Layout, Plan, forecast_conditions, plan_at, resolve

DATA = Path(__file__).resolve().parent / "accuracy" / "multinode.yaml"


def _spec(m: dict[str, Any]) -> InferenceServiceSpec:
    name = m.get("model_config") or m["model"]
    entry = find_model(name) or find_model(name.replace("Meta-Llama", "Llama").split("-FP8")[0])
    if entry is None:
        raise SystemExit(f"{m['id']}: {name} is not in the catalog")
    return InferenceServiceSpec.model_validate(
        {
            "model": {"name": m["model"], "catalog": entry.key, "weightDtype": m["weight_dtype"]},
            "hardware": {"gpu": m["gpu"], "tensorParallelSize": m["layout"]["tp"]},
            "workload": {
                "rps": {"mean": 1},
                "inputTokens": {"mean": m.get("input_tokens") or 2000},
                "outputTokens": {"mean": m.get("output_tokens") or 500},
                "maxContextTokens": 8192,
            },
        }
    )


def _layout(m: dict[str, Any]) -> Layout | None:
    lay = m["layout"]
    if lay.get("dp") is None or lay.get("nodes") is None:
        return None
    return Layout(lay["tp"], lay.get("pp", 1), lay["dp"], lay.get("ep", False), lay["nodes"])


def _estimate(m: dict[str, Any], plan: Plan) -> float:
    per_replica = plan.output_tps_per_replica
    if m["kind"] == "throughput_tok_s_per_gpu":
        return per_replica / plan.gpus_per_replica
    if m["kind"] == "throughput_tok_s_per_node":
        return per_replica / plan.nodes_per_replica
    return per_replica


def main() -> int:
    data = yaml.safe_load(DATA.read_text())
    for m in data["measurements"]:
        source = data["sources"][m["source"]]["title"]
        if m["kind"] == "layout_ratio":
            print(f"{m['id']}: measured {m['value']}×, not scored — {m['note']}\n  ({source})")
            continue
        layout = _layout(m)
        if layout is None:  # the source does not state the EP degree: the smallest that fits
            layout = Layout(tp=1, dp=16, ep=True, nodes=2)
        spec = _spec(m)
        r = resolve(spec, m["id"])
        plan = plan_at(r, forecast_conditions(r), layout)
        estimate = _estimate(m, plan)
        shape = f"TP {layout.tp} × PP {layout.pp} × DP {layout.dp}, {layout.nodes} node(s)"
        if m.get("scored", True):
            error = (estimate - m["value"]) / m["value"]
            verdict = f"error {error:+.1%}"
        else:
            verdict = "bound (not scored): " + m["note"][:120]
        print(
            f"{m['id']}: measured {m['value']:,} {m['unit']}, estimate {estimate:,.0f} "
            f"({shape}, batch {plan.operating_batch:.0f}); {verdict}\n  ({source})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
