"""``tokenscale simulate`` on a spec with ``spec.hardware.variants``: the planner's mix and each
variant alone, as fixed fleets replayed against the trace (``simulation/mixed.py``)."""

import json
from dataclasses import asdict

from rich.console import Console
from rich.table import Table

from tokenscale.api.inference_service import InferenceService
from tokenscale.planning import plan_service
from tokenscale.simulation.mixed import MixedRun, SimRouting, mix_engines, replay_mix
from tokenscale.simulation.run import SimulationError
from tokenscale.simulation.trace import Trace


def mixed_runs(isvc: InferenceService, trace: Trace, mismatch: float) -> list[tuple[str, MixedRun]]:
    """The planner's mix, then each variant alone at its own plan's count, replayed under the
    routing ``spec.gateway`` implies (an InferencePool: least-loaded; else round-robin)."""
    spec = isvc.spec
    plan = plan_service(spec, isvc.metadata.name)
    if not plan.feasible:
        raise SimulationError("; ".join(plan.infeasible_reasons))
    engines = mix_engines(spec, plan, trace.block_tokens, mismatch)
    routing: SimRouting = "least-loaded" if spec.gateway.load_aware else "round-robin"
    planned = {v.name: v.replicas for v in plan.variants}
    runs = [
        (
            "planner's mix",
            replay_mix(engines, [planned[e.name] for e in engines], trace, spec.slo, routing),
        )
    ]
    for e in engines:
        alone = next(v.single_variant for v in plan.variants if v.name == e.name)
        if alone.feasible and alone.replicas:
            counts = [alone.replicas if x.name == e.name else 0 for x in engines]
            runs.append((f"{e.name} alone", replay_mix(engines, counts, trace, spec.slo, routing)))
    return runs


def print_mixed(runs: list[tuple[str, MixedRun]], as_json: bool, title: str) -> None:
    if as_json:
        print(json.dumps([{"fleet": label, **asdict(r)} for label, r in runs], indent=2))
        return
    t = Table(title=title, title_justify="left")
    for col in (
        "fleet",
        "replicas",
        "routing",
        "attainment",
        "TTFT P99 s",
        "TPOT P99 ms",
        "per variant (requests, attainment)",
        "GPU-hours",
        "cost/h",
    ):
        t.add_column(col)
    for label, r in runs:
        t.add_row(
            label,
            " + ".join(f"{n} × {name}" for name, n in r.counts.items() if n),
            r.routing,
            f"{r.slo_attainment:.2%}",
            f"{r.ttft_p99_s:.2f}",
            f"{r.tpot_p99_s * 1e3:.1f}",
            "; ".join(
                f"{v.name}: {v.requests:,}, {v.attainment:.1%}" for v in r.per_variant if v.replicas
            ),
            f"{r.gpu_hours:.2f}",
            "—" if r.cost_per_hour is None else f"{r.cost_per_hour:,.2f}",
        )
    Console(width=180).print(t)
