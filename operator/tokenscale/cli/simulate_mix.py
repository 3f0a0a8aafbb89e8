"""``tokenscale simulate`` on a spec with ``spec.hardware.variants``: the planner's mix and each
variant alone, as fixed fleets (a pinned policy) replayed against the trace, then the mix
autoscaled by the operator's mix policy and each variant alone autoscaled, under any
``--stockout`` — every one through the one loop (``simulation/mix.py``)."""

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict

from tokenscale.api.inference_service import InferenceService
from tokenscale.cli.console import stdout_console
from tokenscale.cli.fit import Column, FittedTable
from tokenscale.planning import plan_service
from tokenscale.simulation.fleet import GpuStockout, SimRouting
from tokenscale.simulation.mix import (
    MixScaleOptions,
    MixTokenscale,
    StaticMix,
    VariantTokenscale,
    mix_engines,
    replay_mix,
)
from tokenscale.simulation.result import FleetRun
from tokenscale.simulation.run import SimulationError
from tokenscale.simulation.trace import Trace


def mixed_runs(isvc: InferenceService, trace: Trace, mismatch: float) -> list[tuple[str, FleetRun]]:
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
            replay_mix(engines, trace, spec, StaticMix(planned, "planner's mix"), routing),
        )
    ]
    for e in engines:
        alone = next(v.single_variant for v in plan.variants if v.name == e.name)
        if alone.feasible and alone.replicas:
            pinned = StaticMix({e.name: alone.replicas}, f"{e.name} alone")
            runs.append((f"{e.name} alone", replay_mix(engines, trace, spec, pinned, routing)))
    return runs


def parse_stockout(text: str, moment: Callable[[str, str], float]) -> GpuStockout:
    """``VARIANT@MM:SS[-MM:SS]`` → a stockout of that variant from (until) then; ``moment``
    reads one time (exits 2 on a bad one)."""
    variant, at, when = text.partition("@")
    if not at or not variant or not when:
        raise ValueError(
            f"--stockout {text!r}: use VARIANT@MM:SS or VARIANT@MM:SS-MM:SS "
            "(e.g. h100-sxm-80gb@10:00)"
        )
    start, dash, end = when.partition("-")
    from_s = moment(start, "--stockout")
    until_s = moment(end, "--stockout") if dash else float("inf")
    if until_s <= from_s:
        raise ValueError(f"--stockout {text!r}: the end must come after the start")
    return GpuStockout(variant, from_s, until_s)


def autoscaled_runs(
    isvc: InferenceService,
    trace: Trace,
    mismatch: float,
    cold_start_s: float,
    scrape_interval_s: float,
    interval_s: float,
    stockouts: Sequence[GpuStockout],
    timeline: bool = False,
) -> list[tuple[str, FleetRun]]:
    """The mix scaled by the operator's mix policy, then each variant alone scaled by the
    shared stepper, from the plan's counts, under ``stockouts`` (each with its timeline when
    ``timeline``)."""
    spec = isvc.spec
    plan = plan_service(spec, isvc.metadata.name)
    engines = mix_engines(spec, plan, trace.block_tokens, mismatch)
    names = [e.name for e in engines]
    for s in stockouts:
        if s.variant not in names:
            raise ValueError(
                f"--stockout {s.variant}@…: no variant of the plan is named {s.variant!r}; "
                f"use one of {', '.join(names)}"
            )
    routing: SimRouting = "least-loaded" if spec.gateway.load_aware else "round-robin"
    opts = MixScaleOptions(
        cold_start_s=cold_start_s,
        scrape_interval_s=scrape_interval_s,
        decision_interval_s=interval_s,
    )
    ours = MixTokenscale(spec, plan, interval_s)
    runs = [
        (
            "tokenscale (mix)",
            replay_mix(engines, trace, spec, ours, routing, opts, stockouts, timeline),
        )
    ]
    for e in engines:
        alone = VariantTokenscale(spec, plan, e.name, interval_s)
        runs.append(
            (
                f"tokenscale, {e.name} alone",
                replay_mix(engines, trace, spec, alone, routing, opts, stockouts, timeline),
            )
        )
    return runs


def print_mixed(
    runs: list[tuple[str, FleetRun]],
    as_json: bool,
    title: str,
    scaled: Sequence[tuple[str, FleetRun]] = (),
) -> None:
    if as_json:
        docs = [{"fleet": label, **asdict(r)} for label, r in runs]
        docs += [{"fleet": label, **asdict(r)} for label, r in scaled]
        print(json.dumps(docs, indent=2))
        return
    rows: list[list[str]] = [
        [
            label,
            " + ".join(f"{n} × {name}" for name, n in r.counts.items() if n),
            r.routing,
            f"{r.slo_attainment:.2%}",
            f"{r.ttft_p99_s:.2f}",
            f"{r.tpot_p99_s * 1e3:.1f}",
            "; ".join(
                f"{v.name}: {v.requests:,}, {v.attainment:.1%}" for v in r.pools if v.replicas_end
            ),
            f"{r.gpu_hours:.2f}",
            "—" if r.cost_per_hour is None else f"{r.cost_per_hour:,.2f}",
        ]
        for label, r in runs
    ]
    columns = [
        Column("fleet", prose=True),
        Column("replicas", prose=True),
        Column("routing", drop=3),
        Column("attainment", "right"),
        Column("TTFT P99 s", "right", drop=2),
        Column("TPOT P99 ms", "right", drop=1),
        Column("per variant (requests, attainment)", prose=True, drop=4),
        Column("GPU-hours", "right"),
        Column("cost/h", "right", drop=5),
    ]
    console = stdout_console()
    console.print(FittedTable(columns, rows, title))
    if scaled:
        console.print(_scaled_table(scaled, f"{title}: autoscaled"))


def _scaled_table(scaled: Sequence[tuple[str, FleetRun]], title: str) -> FittedTable:
    rows: list[list[str]] = [
        [
            label,
            " + ".join(f"{n} × {name}" for name, n in r.replicas_max.items() if n),
            f"{r.slo_attainment:.2%}",
            f"{r.ttft_p99_s:.2f}",
            f"{r.tpot_p99_s * 1e3:.1f}",
            f"{r.gpu_hours:.2f}",
            "—" if r.cost is None else f"{r.cost:,.2f}",
            "; ".join(f"{v} at {t_s:,.0f} s" for t_s, v, _ in r.marked) or "—",
        ]
        for label, r in scaled
    ]
    columns = [
        Column("fleet", prose=True),
        Column("peak replicas", prose=True),
        Column("attainment", "right"),
        Column("TTFT P99 s", "right", drop=2),
        Column("TPOT P99 ms", "right", drop=1),
        Column("GPU-hours", "right"),
        Column("cost", "right", drop=3),
        Column("exhausted", prose=True),
    ]
    return FittedTable(columns, rows, title)
