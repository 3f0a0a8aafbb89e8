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
under classes, and the binding class.

With ``--simulate MINUTES`` each way is also replayed in the simulator on a multi-tenant trace
(chat's rate a sine between 10 and 40 RPS over the run, the agent Poisson at 4 RPS, the batch
class in bursts of 120 RPS for 40 s every 10 minutes; token lengths log-normal through each
class's mean and P99; seed 0) as a static fleet of the plan's count: chat's attainment of its
own SLO, the agent's, the batch class's served and shed requests and its E2E P99, GPU-hours.
The classes' fleet is replayed twice, with vLLM's priority scheduling (as rendered) and first
come, first served (what priorities buy). The three services are replayed too: each class's
slice of the trace on its own fleet of its own plan's count (batch guaranteed at the loose
SLO), each held for the whole trace (a static fleet is paid while its class is idle: the
batch class's slice ends after its burst).

    python benchmarks/tenants.py [--json] [--simulate MINUTES]
"""

import argparse
import dataclasses
import json
import math
import random
from typing import Any

from tokenscale.api.inference_service import InferenceService
from tokenscale.planning import plan_service
from tokenscale.planning.result import Plan
from tokenscale.simulation.result import SimResult
from tokenscale.simulation.run import Setup, SimOptions, static_fleet
from tokenscale.simulation.trace import Trace, TraceRequest

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


def _lengths(rng: random.Random, mean: float, p99: float) -> int:
    """A log-normal draw through ``mean`` and ``p99`` (the smaller sigma root)."""
    z = 2.3263478740408408
    disc = z * z - 2.0 * math.log(p99 / mean)
    sigma = z - math.sqrt(disc) if disc > 0 else z
    mu = math.log(mean) - sigma * sigma / 2.0
    return max(1, int(rng.lognormvariate(mu, sigma)))


def _arrivals(rng: random.Random, rate: Any, end_s: float, top: float) -> list[float]:
    """A Poisson process of rate ``rate(t)`` (thinning under ``top``)."""
    t, out = 0.0, list[float]()
    while True:
        t += rng.expovariate(top)
        if t >= end_s:
            return out
        if rng.random() * top <= rate(t):
            out.append(t)


def trace(minutes: float, seed: int = 0) -> Trace:
    """The multi-tenant trace (module docstring)."""
    rng = random.Random(seed)
    end = minutes * 60.0
    shapes = [
        (CHAT, 10, lambda t: 25.0 - 15.0 * math.cos(2 * math.pi * t / end), 40.0),
        (AGENT, 0, lambda t: 4.0, 4.0),
        (BATCH, -10, lambda t: 120.0 if (t % 600.0) < 40.0 else 0.0, 120.0),
    ]
    reqs = []
    for c, prio, rate, top in shapes:
        for t in _arrivals(rng, rate, end, top):
            n_in = _lengths(rng, c["inputTokens"]["mean"], c["inputTokens"]["p99"])
            n_out = _lengths(rng, c["outputTokens"]["mean"], c["outputTokens"]["p99"])
            reqs.append(TraceRequest(t, min(n_in, 12000), min(n_out, 4000), priority=prio))
    return Trace(tuple(sorted(reqs, key=lambda r: r.arrival_s)), f"tenants {minutes:g} min")


def _replay(s: InferenceService, tr: Trace, replicas: int, fcfs: bool = False) -> SimResult:
    setup = Setup(s.spec, tr, SimOptions(timeline=False, capacity_requests=300), s.metadata.name)
    if fcfs:
        setup.replica = dataclasses.replace(setup.replica, priority_scheduling=False)
    return static_fleet(setup, replicas)


def _chat_attainment(r: SimResult, tr: Trace) -> float:
    """Chat's requests meeting chat's SLO, over chat's arrivals (from the per-class rows with
    classes; from the outcomes' priority otherwise is not kept, so the one-class run is judged
    on all requests at chat's SLO, which it was sized for)."""
    rows = {c.priority: c for c in r.classes}
    if 10 in rows and rows[10].slo_attainment is not None:
        return rows[10].slo_attainment
    return r.slo_attainment


def simulate(minutes: float, planned: dict[str, Any]) -> dict[str, Any]:
    tr = trace(minutes)
    counts = {r["way"]: r["gpus"] for r in planned["rows"]}
    classes_svc = _service("tenants", {"classes": [CHAT, AGENT, BATCH]}, LOOSE_SLO)
    summed = classes_svc.spec.workload
    one_svc = _service(
        "one-class",
        {
            "rps": summed.rps.model_dump(by_alias=True, exclude_none=True),
            "inputTokens": summed.input_tokens.model_dump(by_alias=True, exclude_none=True),
            "outputTokens": summed.output_tokens.model_dump(by_alias=True, exclude_none=True),
        },
        STRICTEST_SLO,
    )
    n_classes = counts["classes (batch from slack)"]
    runs = {
        "classes, priority scheduling": _replay(classes_svc, tr, n_classes),
        "classes' fleet, first come first served": _replay(classes_svc, tr, n_classes, True),
        "one class at the strictest SLO": _replay(
            one_svc, tr, counts["one class at the strictest SLO"]
        ),
    }
    out: dict[str, Any] = {"trace": tr.source, "requests": len(tr.requests), "runs": []}
    for way, r in runs.items():
        rows = {c.priority: c for c in r.classes}
        shed_row = rows.get(-10)
        agent_row = rows.get(0)
        out["runs"].append(
            {
                "way": way,
                "gpus": n_classes if way.startswith("classes") else counts[way],
                "gpu_hours": round(r.gpu_hours, 3),
                "chat_attainment": round(_chat_attainment(r, tr), 5),
                "agent_attainment": (
                    round(agent_row.slo_attainment, 5)
                    if agent_row and agent_row.slo_attainment is not None
                    else None
                ),
                "batch_completed": shed_row.completed if shed_row else None,
                "batch_shed": shed_row.shed if shed_row else 0,
                "batch_e2e_p99_s": round(shed_row.e2e_p99_s, 1) if shed_row else None,
                "chat_ttft_p99_s": round(rows[10].ttft_p99_s, 3) if 10 in rows else None,
            }
        )
    out["runs"].append(three_services(tr))
    return out


def _slice(tr: Trace, priority: int) -> Trace:
    """One class's requests of ``tr`` (told apart by priority), as its own service sees them
    (priority 0: a service without classes schedules first come, first served)."""
    mine = tuple(dataclasses.replace(r, priority=0) for r in tr.requests if r.priority == priority)
    return Trace(mine, f"{tr.source}, priority {priority}", tr.block_tokens)


def three_services(tr: Trace) -> dict[str, Any]:
    """Each class its own service (its own SLO; batch at the loose SLO, guaranteed), its own
    trace slice replayed on a static fleet of its own plan's count. GPU-hours: each fleet held
    for the whole trace; attainment: each service's own, against its own SLO."""
    window_h = tr.duration_s / 3600.0
    per: dict[str, dict[str, Any]] = {}
    for c, prio in ((CHAT, 10), (AGENT, 0), (BATCH, -10)):
        svc = _service(c["name"], _alone(c), c.get("slo", LOOSE_SLO))
        gpus = _plan(svc).gpus_total or 0
        r = _replay(svc, _slice(tr, prio), gpus)
        per[c["name"]] = {
            "gpus": gpus,
            "gpu_hours_held": round(gpus * window_h, 3),
            "requests": r.requests,
            "completed": r.completed,
            "attainment": round(r.slo_attainment, 5),
            "ttft_p99_s": round(r.ttft_p99_s, 3),
            "e2e_p99_s": round(r.e2e_p99_s, 1),
        }
    return {
        "way": "three services",
        "gpus": sum(x["gpus"] for x in per.values()),
        "gpu_hours": round(sum(x["gpu_hours_held"] for x in per.values()), 3),
        "chat_attainment": per["chat"]["attainment"],
        "agent_attainment": per["agent"]["attainment"],
        "batch_completed": per["batch"]["completed"],
        "batch_shed": 0,
        "batch_e2e_p99_s": per["batch"]["e2e_p99_s"],
        "chat_ttft_p99_s": per["chat"]["ttft_p99_s"],
        "services": per,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--simulate", type=float, default=0.0, help="also replay a trace of this many minutes"
    )
    args = parser.parse_args()
    out = run()
    if args.simulate > 0:
        out["simulated"] = simulate(args.simulate, out)
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
    if "simulated" in out:
        sim = out["simulated"]
        print(f"replayed: {sim['trace']} ({sim['requests']} requests)")
        for r in sim["runs"]:
            print(" ", json.dumps(r))


if __name__ == "__main__":
    main()
