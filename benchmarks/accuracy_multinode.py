"""The planner's multi-node layouts against published figures (benchmarks/accuracy/multinode.yaml).

Run: ``python -m benchmarks.accuracy_multinode``. Each entry is rebuilt as a spec (model, GPU,
weight dtype, lengths) and planned at the entry's layout with ``plan_at``; the estimate is the
replica's output tokens/s at its operating batch (no SLO: the knee), per GPU or per node where
the source reports so. Entries marked ``validity: excluded`` are printed with the reason (the
source's setup goes beyond what the planner models, or its conditions are not stated); the
others get an error.
"""

import sys
from pathlib import Path
from typing import Any

import yaml

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.catalog.models import find_model
from tokenscale.planning import Layout, Plan, forecast_conditions, plan_at, resolve

DATA = Path(__file__).resolve().parent / "accuracy" / "multinode.yaml"


def catalog_key(m: dict[str, Any]) -> str:
    """The catalog model the entry ran (an FP8 checkpoint is its base model's shapes)."""
    name = m.get("model_config") or m["model"]
    entry = find_model(name) or find_model(name.replace("Meta-Llama", "Llama").split("-FP8")[0])
    if entry is None:
        raise SystemExit(f"{m['id']}: {name} is not in the catalog")
    return entry.key


def _spec(m: dict[str, Any]) -> InferenceServiceSpec:
    key = catalog_key(m)
    return InferenceServiceSpec.model_validate(
        {
            "model": {"name": m["model"], "catalog": key, "weightDtype": m["weight_dtype"]},
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


def plan_of(m: dict[str, Any]) -> tuple[Plan, Layout]:
    """The entry planned at its layout (the smallest EP layout that fits where the source
    does not state the EP degree)."""
    layout = _layout(m)
    if layout is None:
        layout = Layout(tp=1, dp=16, ep=True, nodes=2)
    r = resolve(_spec(m), m["id"])
    return plan_at(r, forecast_conditions(r), layout), layout


def estimate(m: dict[str, Any]) -> float | None:
    """The planner's figure in the entry's unit; None for a ratio of layouts."""
    if m["kind"] == "layout_ratio":
        return None
    plan, _ = plan_of(m)
    return _estimate(m, plan)


def main() -> int:
    data = yaml.safe_load(DATA.read_text())
    for m in data["measurements"]:
        source = data["sources"][m["source"]]["title"]
        if m["kind"] == "layout_ratio":
            print(
                f"{m['id']}: measured {m['value']}×, {m['validity']} — "
                f"{m['validity_reason']}\n  ({source})"
            )
            continue
        plan, layout = plan_of(m)
        estimate = _estimate(m, plan)
        shape = f"TP {layout.tp} × PP {layout.pp} × DP {layout.dp}, {layout.nodes} node(s)"
        if m["validity"] != "excluded":
            error = (estimate - m["value"]) / m["value"]
            verdict = f"error {error:+.1%}"
        else:
            verdict = "excluded: " + m["validity_reason"][:120]
        print(
            f"{m['id']}: measured {m['value']:,} {m['unit']}, estimate {estimate:,.0f} "
            f"({shape}, batch {plan.operating_batch:.0f}); {verdict}\n  ({source})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
