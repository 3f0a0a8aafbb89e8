"""The plan for people who read it in a terminal or paste it into a review: a compact view
that fits 80 columns, one line per service, and a Markdown or CSV capacity report.

The full explained table is ``plan_view.plan_renderable`` (``-o wide``); every figure here is
a field of the same :class:`Plan`.
"""

import csv
import io

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from tokenscale.cli.class_view import classes_lines, classes_markdown, short_text
from tokenscale.cli.length_view import length_lines, length_markdown
from tokenscale.cli.length_view import short_text as length_short
from tokenscale.cli.plan_figures import Latency, cannot_serve, duration_text, latencies, why_not
from tokenscale.cli.plan_view import disaggregation_renderable, layout_text, replica_bounds_text
from tokenscale.cli.pool_view import bindings, fleet_text, pool_layout, pool_line, several
from tokenscale.planning.formulas import batch_text, counted
from tokenscale.planning.result import Plan
from tokenscale.scaling.schedule_day import ScheduleDay, day_line, window_line

#: The columns of ``-o csv`` and of the Markdown summary table, in order.
SUMMARY_COLUMNS = (
    "service",
    "model",
    "gpu",
    "weight_dtype",
    "layout",
    "feasible",
    "replicas",
    "gpus",
    "binding",
    "ttft_p99_ms",
    "ttft_p99_slo_ms",
    "tpot_p99_ms",
    "tpot_p99_slo_ms",
    "e2e_p99_s",
    "output_tok_s_per_replica",
    "requests_s_per_replica",
    "cost_per_hour",
    "cost_per_1m_output",
    "currency",
    "why_not",
    "pools",
    "lora",
    "classes",
    "length_classes",
)


def _latency_text(lat: Latency) -> str:
    text = f"{lat.name} {duration_text(lat.estimate_s)}"
    if lat.target_s is not None:
        text += (
            f" {'≤' if lat.met else '>'} {duration_text(lat.target_s)} {'✓' if lat.met else '✗'}"
        )
    return text


def _money(value: float | None, currency: str, fmt: str = ",.2f") -> str:
    return "no price" if value is None else f"{value:{fmt}} {currency}"


def _replicas_text(p: Plan) -> str:
    if p.replicas is None:
        return "no count: this configuration cannot serve"
    if several(p):  # the pools' replicas, not one replica's count
        return f"{fleet_text(p)}  (binding: {bindings(p)})"
    r = p.replicas
    text = (
        f"{r.total:,} × {p.gpus_per_replica} GPU{'s' if p.gpus_per_replica > 1 else ''} = "
        f"{counted(p.gpus_total or 0, 'GPU')}"
    )
    others = ", ".join(f"{c.name} {c.replicas:,.2f}" for c in p.constraints)
    text += f"  (binding: {p.binding_constraint}; {others})"
    if r.total != r.with_redundancy:
        text += f"; {replica_bounds_text(r.with_redundancy, r.total)}"
    return text


def compact_renderable(p: Plan, advice: list[str], schedule: ScheduleDay | None = None) -> Group:
    """The default view: a title, the layout, then labelled lines whose text wraps inside its
    own column (so a narrow terminal breaks no line under another's label)."""
    status = Text("feasible", style="green") if p.feasible else Text("INFEASIBLE", style="red")
    title = Text.assemble(("plan ", "bold"), (p.name, "bold"), " — ", status)
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    grid.add_row("replicas", _replicas_text(p))
    if cannot_serve(p):
        grid.add_row("figures", "none: a replica that cannot serve has no latency or cost")
    else:
        _figure_rows(grid, p)
    for i, line in enumerate(classes_lines(p)):
        grid.add_row("classes" if i == 0 else "", line)
    for i, line in enumerate(length_lines(p)):
        grid.add_row("length" if i == 0 else "", line)
    if p.speculative is not None:
        grid.add_row("speculative", p.speculative.reason)
    if p.lora is not None:
        grid.add_row("lora", f"{p.lora.summary}; {p.lora.max_loras_reason}")
    if schedule is not None:  # spec.scaling.schedule: each window at the need, and a day
        lines = [window_line(w, schedule.need) for w in schedule.windows] + [day_line(schedule)]
        for i, line in enumerate(lines):
            grid.add_row("schedule" if i == 0 else "", line)
    for label, style, notes in (
        ("✗", "red", p.infeasible_reasons),
        ("!", "yellow", p.warnings + (schedule.warnings if schedule is not None else [])),
        ("→", "cyan", advice),
    ):
        for line in notes:
            grid.add_row(Text(label, style=style), Text(line, style=style))
    what = Text(
        f"{p.model} on {p.gpu} · {p.weight_dtype} · KV {p.kv_cache_dtype} · "
        f"{'layout per pool' if several(p) else layout_text(p)} · max len {p.max_model_len:,}"
    )
    parts: list[RenderableType] = [title, Padding(what, (0, 0, 0, 2)), Padding(grid, (0, 0, 1, 2))]
    if p.disaggregation is not None:  # both architectures, side by side
        parts.append(Padding(disaggregation_renderable(p), (0, 0, 1, 2)))
    return Group(*parts)


def _figure_rows(grid: Table, p: Plan) -> None:
    """Latency, per-replica capacity and cost: the rows of a plan that can serve."""
    lat = latencies(p)
    for i, x in enumerate(lat):
        grid.add_row("latency" if i == 0 else "", _latency_text(x))
    if several(p):
        for i, pl in enumerate(p.pools):
            grid.add_row("pools" if i == 0 else "", pool_line(pl, p.currency))
    else:
        grid.add_row(
            "per replica",
            f"{p.rps_per_replica:,.2f} req/s · {p.output_tps_per_replica:,.0f} output tok/s · "
            f"batch {batch_text(p.operating_batch)} · "
            f"KV {p.kv_capacity_tokens_per_replica:,.0f} tokens",
        )
    gpu_hours = f"{_num(p.gpu_hours_per_million_output_tokens)} GPU-h per 1M output"
    if p.cost_per_hour is None:
        cost = f"no price (spec.cost.gpuHourPrice) · {gpu_hours}"
    else:
        cost = (
            f"{_money(p.cost_per_hour, p.currency)}/h · "
            f"{_money(p.cost_per_million_output_tokens, p.currency, ',.3f')} per 1M output · "
            f"{gpu_hours}"
        )
    grid.add_row("cost", cost)


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:,.3f}"


def short_line(p: Plan) -> str:
    """One line per service: verdict, fleet, binding constraint, latency vs SLO, cost."""
    lat = {x.name: x for x in latencies(p)}
    fleet = (
        "no fleet"
        if p.replicas is None
        else f"{p.replicas.total}×{layout_text(p, compact=True)} {p.gpu} "
        f"({counted(p.gpus_total or 0, 'GPU')})"
    )
    if several(p) and p.replicas is not None:
        fleet = fleet_text(p)
    parts = [p.name, "ok" if p.feasible else "INFEASIBLE", fleet]
    if cannot_serve(p):
        return "  ".join([*parts, "why: " + why_not(p)])
    parts += [
        bindings(p) if several(p) else p.binding_constraint,
        "TTFT " + _vs(lat["TTFT P99"]),
        "TPOT " + _vs(lat["TPOT P99"]),
        _money(p.cost_per_million_output_tokens, p.currency, ",.3f") + "/1M out",
    ]
    if p.speculative is not None:
        parts.append(f"speculative {'on' if p.speculative.enabled else 'off'}")
    if p.lora is not None:
        parts.append(
            f"lora {p.lora.adapters}×maxLoras{p.lora.max_loras} "
            f"{p.lora.throughput_ratio - 1.0:+.0%} {p.lora.swaps_per_s_per_replica:.2g} swaps/s"
        )
    if (classes := short_text(p)) is not None:
        parts.append(classes)
    if (length := length_short(p)) is not None:
        parts.append(length)
    return "  ".join(parts)


def _vs(lat: Latency) -> str:
    text = duration_text(lat.estimate_s).replace(" ", "")
    if lat.target_s is not None:
        text += "/" + duration_text(lat.target_s).replace(" ", "")
    return text


def summary_row(p: Plan) -> dict[str, str]:
    """The service as one flat row (``-o csv`` and the Markdown summary): plain numbers."""
    lat = {x.name: x for x in latencies(p)}

    def ms(x: float | None) -> str:
        return "" if x is None else f"{x * 1e3:.1f}"

    def opt(x: float | None, fmt: str) -> str:
        return "" if x is None else f"{x:{fmt}}"

    row = {
        "service": p.name,
        "model": p.model,
        "gpu": p.gpu,
        "weight_dtype": p.weight_dtype,
        "layout": layout_text(p, compact=True),
        "feasible": "yes" if p.feasible else "no",
        "replicas": "" if p.replicas is None else str(p.replicas.total),
        "gpus": "" if p.gpus_total is None else str(p.gpus_total),
        "binding": p.binding_constraint,
        "ttft_p99_ms": ms(lat["TTFT P99"].estimate_s),
        "ttft_p99_slo_ms": ms(lat["TTFT P99"].target_s),
        "tpot_p99_ms": ms(lat["TPOT P99"].estimate_s),
        "tpot_p99_slo_ms": ms(lat["TPOT P99"].target_s),
        "e2e_p99_s": f"{lat['E2E P99'].estimate_s:.2f}",
        "output_tok_s_per_replica": f"{p.output_tps_per_replica:.0f}",
        "requests_s_per_replica": f"{p.rps_per_replica:.3f}",
        "cost_per_hour": opt(p.cost_per_hour, ".2f"),
        "cost_per_1m_output": opt(p.cost_per_million_output_tokens, ".3f"),
        "currency": p.currency,
        "why_not": "; ".join(p.infeasible_reasons),
        "lora": "" if p.lora is None else f"{p.lora.summary}; {p.lora.max_loras_reason}",
    }
    if cannot_serve(p):  # no figures for a replica that cannot run
        for key in SUMMARY_COLUMNS[SUMMARY_COLUMNS.index("binding") :]:
            if key not in ("currency", "why_not", "pools", "lora", "classes", "length_classes"):
                row[key] = ""
    return (
        row
        | _pool_cells(p)
        | {"classes": "; ".join(classes_lines(p)), "length_classes": "; ".join(length_lines(p))}
    )


def _pool_cells(p: Plan) -> dict[str, str]:
    """The pools column, and for several pools the fleet's cells from them: the GPUs and the
    layouts joined, the replicas summed, no one replica's figures."""
    cells = {"pools": "; ".join(pool_line(x, p.currency) for x in p.pools)}
    if not several(p):
        return cells
    running = [x for x in p.pools if x.replicas > 0] or p.pools
    return cells | {
        "gpu": "+".join(dict.fromkeys(x.variant.gpu for x in running)),
        "layout": "+".join(pool_layout(x) for x in running),
        "replicas": "" if p.replicas is None else str(sum(x.replicas for x in p.pools)),
        "binding": bindings(p),
        "output_tok_s_per_replica": "",
        "requests_s_per_replica": "",
    }


def csv_report(plans: list[Plan]) -> str:
    """A header and one row per service."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=SUMMARY_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for p in plans:
        writer.writerow(summary_row(p))
    return out.getvalue()


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_report(
    plans: list[Plan],
    advice: dict[str, list[str]],
    schedules: dict[str, ScheduleDay | None] | None = None,
) -> str:
    """A capacity report to paste into a review: the summary table, then per service its
    constraints, latencies against the SLOs, cost, warnings and advice."""
    head = (
        "| service | model | GPU | layout | replicas | GPUs | binding | TTFT P99 | TPOT P99 "
        "| $/1M out | feasible |"
    )
    lines = ["# Capacity plan", "", head, "|" + "---|" * 11]
    for p in plans:
        lat = {x.name: x for x in latencies(p)}
        flat = _pool_cells(p)
        figures = (
            ["—"] * 4
            if cannot_serve(p)
            else [
                flat.get("binding", p.binding_constraint),
                _vs(lat["TTFT P99"]),
                _vs(lat["TPOT P99"]),
                _money(p.cost_per_million_output_tokens, p.currency, ",.3f"),
            ]
        )
        cells = [
            p.name,
            p.model,
            flat.get("gpu", p.gpu),
            f"{flat.get('layout', layout_text(p, compact=True))} {p.weight_dtype}",
            "—" if p.replicas is None else flat.get("replicas", f"{p.replicas.total:,}"),
            "—" if p.gpus_total is None else f"{p.gpus_total:,}",
            *figures,
            "yes" if p.feasible else "**no**",
        ]
        lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
    for p in plans:
        lines += ["", f"## {p.name}", ""]
        lines.append(
            f"{p.model} on {p.gpu}, {p.weight_dtype} weights, KV {p.kv_cache_dtype}, "
            f"{layout_text(p)}, max model len {p.max_model_len:,}; design load "
            f"{p.design_rps:,.2f} RPS ({p.input_tps:,.0f} input / {p.output_tps:,.0f} output "
            "tok/s)."
        )
        if p.speculative is not None:
            lines += ["", f"Speculative decoding: {_md_cell(p.speculative.reason)}."]
        if p.lora is not None:
            lines += [
                "",
                f"LoRA: {_md_cell(p.lora.summary)}; {_md_cell(p.lora.max_loras_reason)}.",
            ]
        day = (schedules or {}).get(p.name)
        if day is not None:
            lines += ["", "Schedule windows (UTC):", ""]
            lines += [f"- {_md_cell(window_line(w, day.need))}" for w in day.windows]
            lines.append(f"- {_md_cell(day_line(day))}")
        if several(p):
            lines += ["", f"Pools: {fleet_text(p)}.", ""]
            lines += [f"- {_md_cell(pool_line(x, p.currency))}" for x in p.pools]
            lines += ["", _constraints_note(p)]
        if cannot_serve(p):
            lines += ["", "This configuration cannot serve: no latency, throughput or cost."]
        else:
            lines += _markdown_figures(p)
            lines += classes_markdown(p)
            lines += length_markdown(p)
        notes = (
            [f"- ✗ {r}" for r in p.infeasible_reasons]
            + [f"- warning: {w}" for w in p.warnings]
            + [f"- warning: {w}" for w in (day.warnings if day is not None else [])]
            + [f"- advice: {a}" for a in advice.get(p.name, [])]
        )
        if notes:
            lines += ["", *[_md_cell(n) for n in notes]]
    return "\n".join(lines) + "\n"


def _constraints_note(p: Plan) -> str:
    """What the constraint table below the pools describes."""
    rule = p.coordination.rule if p.coordination is not None else "none"
    if rule == "disaggregated":
        return "The constraints below are one shared pool's: the aggregated alternative."
    if rule == "lengthClasses":
        return (
            "The constraints below are one shared pool's for every prompt length: the alternative."
        )
    return "The constraints below are the mix's need in replicas, all pools together."


def _markdown_figures(p: Plan) -> list[str]:
    """The constraints, latencies against the SLOs and cost of a plan that can serve."""
    lines = ["", "| constraint | replicas | how |", "|---|---|---|"]
    for c in p.constraints:
        name = f"**{c.name}** (binding)" if c.name == p.binding_constraint else c.name
        lines.append(f"| {name} | {c.replicas:,.2f} | {_md_cell(c.formula)} |")
    lines += ["", "| latency | estimate | SLO | met |", "|---|---|---|---|"]
    for x in latencies(p):
        target = "—" if x.target_s is None else duration_text(x.target_s)
        met = "—" if x.met is None else ("yes" if x.met else "**no**")
        lines.append(f"| {x.name} | {duration_text(x.estimate_s)} | {target} | {met} |")
    lines += [
        "",
        f"Cost: {_money(p.cost_per_hour, p.currency)} per hour, "
        f"{_money(p.cost_per_million_output_tokens, p.currency, ',.3f')} per 1M output "
        f"tokens, {_num(p.gpu_hours_per_million_output_tokens)} GPU-hours per 1M output "
        "tokens.",
    ]
    return lines
