"""Tenants and priorities, planned three ways (docs/tenants.md, "What classes save").

A multi-tenant shape on one Llama-3.1-8B fleet (H100, TP1): an interactive chat class (critical,
a diurnal trace's shape: mean 20, peak 40 RPS), an internal agent (standard, mean 4, peak 8)
and a batch class that arrives in large bursts (sheddable, mean 8, peak 120 RPS). Planned:

1. **classes**: ``spec.workload.classes`` (guaranteed classes at their own SLOs, batch from the
   slack);
2. **one class, strictest SLO**: the three summed and sized at the strictest objective of any
   class (what a platform does without classes: everything guaranteed, at the chat SLO);
3. **three services**: each class its own service at its own SLO (batch at the loose default
   ``spec.slo``, guaranteed).

Printed: GPUs, GPU-hours a day and cost a day for each, the batch class's served fraction
under classes, and the binding class. These are the planner's figures; no trace is replayed
(the simulated engine has no priority scheduling yet), so the critical class's attainment
under a batch burst is the planner's SLO check, not a measured attainment.

    python benchmarks/tenants.py [--json]
"""

import argparse
import json
from typing import Any

from tokenscale.api.inference_service import InferenceService
from tokenscale.planning import plan_service
from tokenscale.planning.result import Plan

CHAT: dict[str, Any] = {
    "name": "chat",
    "priority": "critical",
    "rps": {"mean": 20, "peak": 40},
    "inputTokens": {"mean": 800, "p95": 2500, "p99": 4000},
    "outputTokens": {"mean": 250, "p95": 700, "p99": 1000},
    "slo": {"ttftP99Seconds": 0.5, "tpotP99Seconds": 0.03},
}
AGENT: dict[str, Any] = {
    "name": "agent",
    "priority": "standard",
    "rps": {"mean": 4, "peak": 8},
    "inputTokens": {"mean": 3000, "p95": 8000, "p99": 10000},
    "outputTokens": {"mean": 400, "p95": 1200, "p99": 2000},
    "slo": {"ttftP99Seconds": 4.0, "tpotP99Seconds": 0.08},
}
BATCH: dict[str, Any] = {
    "name": "batch",
    "priority": "sheddable",
    "rps": {"mean": 8, "peak": 120},
    "inputTokens": {"mean": 1500, "p95": 4000, "p99": 6000},
    "outputTokens": {"mean": 300, "p95": 800, "p99": 1200},
}
LOOSE_SLO = {"ttftP99Seconds": 10.0, "tpotP99Seconds": 0.2}
STRICTEST_SLO = {"ttftP99Seconds": 0.5, "tpotP99Seconds": 0.03}


def _service(name: str, workload: dict[str, Any], slo: dict[str, Any]) -> InferenceService:
    return InferenceService.model_validate(
        {
            "apiVersion": "tokenscale.io/v1alpha1",
            "kind": "InferenceService",
            "metadata": {"name": name},
            "spec": {
                "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
                "hardware": {"gpu": "H100-SXM-80GB", "tensorParallelSize": 1},
                "workload": {"maxContextTokens": 16384, **workload},
                "slo": slo,
                "scaling": {"minReplicas": 1, "maxReplicas": 200},
                "cost": {"gpuHourPrice": 3.0},
            },
        }
    )


def _plan(s: InferenceService) -> Plan:
    return plan_service(s.spec, s.metadata.name)


def _alone(c: dict[str, Any]) -> dict[str, Any]:
    return {k: c[k] for k in ("rps", "inputTokens", "outputTokens")}


def _row(name: str, gpus: int, price_h: float) -> dict[str, Any]:
    return {
        "way": name,
        "gpus": gpus,
        "gpu_hours_per_day": gpus * 24,
        "cost_per_day": round(price_h * 24, 2),
    }


def run() -> dict[str, Any]:
    classes = _plan(_service("tenants", {"classes": [CHAT, AGENT, BATCH]}, LOOSE_SLO))
    summed = _service("tenants", {"classes": [CHAT, AGENT, BATCH]}, LOOSE_SLO).spec.workload
    one = _plan(
        _service(
            "one-class",
            {
                "rps": summed.rps.model_dump(by_alias=True, exclude_none=True),
                "inputTokens": summed.input_tokens.model_dump(by_alias=True, exclude_none=True),
                "outputTokens": summed.output_tokens.model_dump(by_alias=True, exclude_none=True),
            },
            STRICTEST_SLO,
        )
    )
    alone = [
        _plan(_service(c["name"], _alone(c), c.get("slo", LOOSE_SLO))) for c in (CHAT, AGENT, BATCH)
    ]
    s = classes.classes_summary
    assert s is not None
    rows = [
        _row("classes (batch from slack)", classes.gpus_total or 0, classes.cost_per_hour or 0),
        _row("one class at the strictest SLO", one.gpus_total or 0, one.cost_per_hour or 0),
        _row(
            "three services",
            sum(p.gpus_total or 0 for p in alone),
            sum(p.cost_per_hour or 0 for p in alone),
        ),
    ]
    chat = next(c for c in classes.classes if c.name == "chat")
    return {
        "rows": rows,
        "binding": s.reason,
        "batch_served_at_guaranteed_peak": round(s.sheddable_served_at_peak, 3),
        "batch_served_at_guaranteed_mean": round(s.sheddable_served_at_mean, 3),
        "guarantee_all_gpus": s.guarantee_all_gpus,
        "batch_rps_slack_at_guaranteed_mean": round(
            s.sheddable_served_at_mean * s.sheddable_rps_design, 2
        ),
        "batch_rps_mean": s.sheddable_rps_mean,
        "chat_slo_checks": [
            {"name": x.name, "estimate_s": round(x.estimate_s, 4), "target_s": x.target_s}
            for x in chat.slo_checks
        ],
        "showback": [
            {
                "class": c.name,
                "gpus": round(c.gpus, 2),
                "cost_per_hour": None if c.cost_per_hour is None else round(c.cost_per_hour, 2),
                "cost_per_million_tokens": None
                if c.cost_per_million_tokens is None
                else round(c.cost_per_million_tokens, 4),
            }
            for c in classes.classes
        ],
        "one_class_feasible": one.feasible,
        "three_services": {p.name: p.gpus_total for p in alone},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    out = run()
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{'way':<34} {'GPUs':>5} {'GPU-h/day':>10} {'cost/day':>10}")
    for r in out["rows"]:
        print(f"{r['way']:<34} {r['gpus']:>5} {r['gpu_hours_per_day']:>10} {r['cost_per_day']:>10}")
    base = out["rows"][1]["gpu_hours_per_day"]
    mine = out["rows"][0]["gpu_hours_per_day"]
    print(f"classes against one class at the strictest SLO: {1 - mine / base:+.1%} GPU-hours saved")
    print(f"binding: {out['binding']}")
    print(
        f"batch served: {out['batch_served_at_guaranteed_peak']:.0%} of its peak at the "
        f"guaranteed peak, {out['batch_served_at_guaranteed_mean']:.0%} at their mean; "
        f"guaranteeing it too: {out['guarantee_all_gpus']} GPUs"
    )
    print(
        f"slack at the guaranteed mean: {out['batch_rps_slack_at_guaranteed_mean']:g} batch "
        f"req/s against the batch's mean {out['batch_rps_mean']:g} req/s"
    )
    print("chat SLO on the shared fleet:", out["chat_slo_checks"])
    print("showback:", out["showback"])
    print("three services:", out["three_services"])


if __name__ == "__main__":
    main()
