"""Render a mix plan (``spec.hardware.variants``) for people: the mix against each variant
alone, each variant's share and why, then each variant's own plan."""

from rich.console import Console, Group
from rich.panel import Panel
from rich.text import Text

from tokenscale.cli.fit import Column, FittedTable
from tokenscale.cli.plan_figures import duration_text, latencies
from tokenscale.cli.plan_view import plan_renderable
from tokenscale.cli.pool_view import fleet_text
from tokenscale.planning.result import Plan


def _cell(value: float | None, fmt: str) -> str:
    return "—" if value is None else f"{value:{fmt}}"


def mix_renderable(p: Plan) -> Panel:
    """The mix panel of a plan with ``mix`` set."""
    assert p.mix is not None  # callers pass mix plans only
    m = p.mix
    rows = []
    for v in p.variants:
        alone = v.single_variant
        rows.append(
            [
                v.name,
                v.gpu,
                str(v.tensor_parallel_size),
                f"{v.replicas} / {v.max_replicas}",
                str(v.gpus),
                f"{v.rps_share:.0%}",
                f"{v.rps_per_replica:,.2f}",
                f"{v.capacity_rps_per_replica:,.2f}",
                v.binding_constraint,
                _cell(v.cost_per_hour, ",.2f"),
                _cell(
                    None if v.ttft_p99_at_share_s is None else v.ttft_p99_at_share_s * 1e3, ",.0f"
                ),
                _cell(None if v.tpot_at_share_s is None else v.tpot_at_share_s * 1e3, ",.1f"),
                f"{alone.replicas} → {_cell(alone.cost_per_hour, ',.2f')}/h"
                if alone.feasible
                else "cannot alone",
            ]
        )
    # left out first when narrow: what the reasons below also say, then the latencies; the
    # variant, its GPU, its replicas and its price stay
    drop = {
        "capacity RPS per replica": 9,
        "RPS share": 8,
        "GPUs": 7,
        "TPOT ms": 6,
        "TTFT P99 ms": 5,
        "alone": 4,
        "RPS per replica": 3,
        "binds": 2,
    }
    left = ("variant", "gpu", "binds", "alone")
    columns = [
        Column(
            h,
            justify="left" if h in left else "right",
            drop=drop.get(h, 0),
            prose=h == "alone",
        )
        for h in (
            "variant",
            "gpu",
            "TP",
            "replicas",
            "GPUs",
            "RPS share",
            "RPS per replica",
            "capacity RPS per replica",
            "binds",
            f"{p.currency}/h",
            "TTFT P99 ms",
            "TPOT ms",
            "alone",
        )
    ]
    t = FittedTable(
        columns,
        rows,
        title=f"Variants ({m.routing} routing; minimising {m.objective}; {m.solver})",
    )
    parts: list[Text | FittedTable] = [
        Text(m.comparison, style="bold"),
        fleet_line(p),
        t,
        Text("\n".join(f"· {r}" for r in m.reasons)),
    ]
    if p.infeasible_reasons:
        parts.append(Text("\n".join(f"✗ {r}" for r in p.infeasible_reasons), style="red"))
    if p.warnings:
        parts.append(Text("\n".join(f"! {w}" for w in p.warnings), style="yellow"))
    status = "[green]feasible[/]" if p.feasible else "[red]INFEASIBLE[/]"
    return Panel(
        Group(*parts),
        title=f"mix plan {p.name} — {status} — demand {m.demand_rps:,.2f} RPS, "
        f"carries {m.capacity_rps:,.2f}",
        title_align="left",
    )


def fleet_line(p: Plan) -> Text:
    """The fleet the mix runs and its latencies against the SLOs: the largest over the pools,
    each at the load it carries (the ``-o short`` and ``-o json`` figures)."""
    lat = " · ".join(
        f"{x.name} {duration_text(x.estimate_s)}"
        + ("" if x.target_s is None else f" {'≤' if x.met else '>'} {duration_text(x.target_s)}")
        + ("" if x.met is None else f" {'✓' if x.met else '✗'}")
        for x in latencies(p)
        if x.estimate_s is not None
    )
    return Text(f"pools {fleet_text(p)} · {lat}" if lat else f"pools {fleet_text(p)}")


def print_mix(console: Console, p: Plan) -> None:
    """The mix panel, then each variant's own plan at the layout the mix runs (what that
    layout would be alone)."""
    console.print(mix_renderable(p))
    for v, own in zip(p.variants, p.variant_plans, strict=True):
        console.print(
            Text(f"variant {v.name} alone at TP {own.tensor_parallel_size}:", style="bold")
        )
        console.print(plan_renderable(own))
