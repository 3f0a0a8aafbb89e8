"""``tokenscale plan --sweep`` in every output format, each honouring ``--top``.

People's views (table, wide, short, markdown) show the spec's own GPU's best configuration
(marked ★) and the best others, ``--top`` in all (25 by default); the program formats (csv, json,
yaml) carry every configuration in rank order, or the first ``--top``.
"""

import csv
import io
from collections.abc import Sequence
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from tokenscale.api.inference_service import InferenceService
from tokenscale.cli.console import stdout_console
from tokenscale.cli.fit import Column, fitted_table
from tokenscale.cli.plan_figures import cannot_serve, why_not
from tokenscale.cli.plan_view import (
    _aggregated_cells,
    _num,
    _pd_cells,
    disaggregated_counts,
    dumps,
    invalid_summary,
    layout_text,
)
from tokenscale.planning.result import Plan
from tokenscale.planning.sweep import SweepRow, ranking

#: Rows the people's views show without ``--top``.
TABLE_TOP = 25

HEADERS = (
    "gpu",
    "layout",
    "dtype",
    "feasible",
    "replicas",
    "GPUs",
    "tok/s per replica",
    "TPOT ms",
    "TTFT P99 ms",
    "$/1M out",
    "GPU-h/1M out",
    "binding / why not",
)

CSV_COLUMNS = (
    "service",
    "rank",
    "gpu",
    "tensor_parallel_size",
    "layout",
    "weight_dtype",
    "feasible",
    "replicas",
    "gpus",
    "output_tok_s_per_replica",
    "tpot_ms",
    "ttft_p99_ms",
    "cost_per_1m_output",
    "gpu_hours_per_1m_output",
    "currency",
    "binding",
    "why_not",
    "error",
)


def chosen(
    rows: list[SweepRow], top: int, own_gpu: str | None
) -> tuple[SweepRow | None, list[SweepRow]]:
    """The spec's own GPU's best valid configuration (if swept) and the best others, ``top``
    rows in all."""
    valid = [r for r in rows if r.plan is not None]
    own = next((r for r in valid if own_gpu and r.gpu.lower() == own_gpu.lower()), None)
    others = [r for r in valid if r is not own]
    return own, others[: max(top - (own is not None), 0)]


def _order(rows: list[SweepRow]) -> str:
    if ranking(rows) == "cost":
        return "feasible first, cheapest first"
    return (
        "feasible first, fewest GPU-hours per 1M output tokens first: not every GPU has a "
        "price (--price KEY=PRICE, --prices FILE or cost.gpuHourPrices rank by cost)"
    )


def why(p: Plan, every_reason: bool) -> str:
    """The binding constraint of a feasible plan; why an infeasible one cannot serve (the first
    reason and how many more, or every reason)."""
    if p.feasible:
        return p.binding_constraint
    reasons = list(p.infeasible_reasons) or ["infeasible"]
    if every_reason or len(reasons) == 1:
        return "; ".join(reasons)
    return f"{reasons[0]} (+{len(reasons) - 1} more: -o wide)"


def sweep_cells(p: Plan, gpu: str, every_reason: bool, mark: str = "") -> list[str]:
    """One configuration in :data:`HEADERS`' order."""
    if cannot_serve(p):  # why, not the figures of a replica that cannot run
        dashes = ["—"] * 7
        return [gpu + mark, layout_text(p, compact=True), p.weight_dtype, "no", *dashes, why_not(p)]
    pools = disaggregated_counts(p)
    return [
        gpu + mark,
        layout_text(p, compact=True) + (" P/D" if pools else ""),
        p.weight_dtype,
        "yes" if p.feasible else "no",
        pools or ("—" if p.replicas is None else str(p.replicas.total)),
        "—" if p.gpus_total is None else str(p.gpus_total),
        *(_pd_cells(p) if pools else _aggregated_cells(p)),
        _num(p.cost_per_million_output_tokens, ",.3f"),
        _num(p.gpu_hours_per_million_output_tokens, ",.3f"),
        why(p, every_reason),
    ]


def _columns(rows: list[SweepRow]) -> list[Column]:
    """Left out first when narrow: the figure the ranking does not use, then feasible (the last
    column says it), the latencies, throughput and the GPU count."""
    by_cost = ranking(rows) == "cost"
    drop = {
        "GPU-h/1M out": 7 if by_cost else 0,
        "$/1M out": 0 if by_cost else 7,
        "feasible": 6,
        "TTFT P99 ms": 5,
        "TPOT ms": 4,
        "tok/s per replica": 3,
        "GPUs": 2,
    }
    right = {"replicas", "GPUs", "tok/s per replica", "TPOT ms", "TTFT P99 ms", "$/1M out"}
    return [
        Column(
            h,
            justify="right" if h in right or h == "GPU-h/1M out" else "left",
            drop=drop.get(h, 0),
            prose=h == "binding / why not",
        )
        for h in HEADERS
    ]


def sweep_table(
    rows: list[SweepRow], top: int, own_gpu: str | None, width: int, wide: bool = False
) -> Table:
    """The ranked valid configurations, at most ``width`` wide; the invalid ones summarised in
    the caption, one line per reason (``wide``: every reason of an infeasible row)."""
    own, shown = chosen(rows, top, own_gpu)
    valid = [r for r in rows if r.plan is not None]
    feasible = sum(1 for r in valid if r.plan is not None and r.plan.feasible)
    body = []
    if own is not None and own.plan is not None:
        body.append(sweep_cells(own.plan, own.gpu, wide, " ★"))
    body += [sweep_cells(r.plan, r.gpu, wide) for r in shown if r.plan is not None]
    notes = []
    if own is not None:
        notes.append(f"★ the spec's GPU ({own.gpu}), its best configuration, for comparison")
    notes += [f"invalid: {line}" for line in invalid_summary(rows)]
    title = (
        f"Sweep: {len(body)} of {len(rows)} configurations shown ({feasible} feasible, "
        f"{len(rows) - len(valid)} invalid); GPU × TP × weight dtype, multi-node layouts where "
        f"they could pay ({_order(rows)}; /2n = 2 nodes per replica)"
    )
    return fitted_table(_columns(rows), body, width, title, notes)


def short_lines(name: str, rows: list[SweepRow], top: int, own_gpu: str | None) -> list[str]:
    """One line per configuration shown: service, GPU, layout, dtype, verdict, fleet, figures."""
    own, shown = chosen(rows, top, own_gpu)
    picked = ([(own, " ★")] if own is not None else []) + [(r, "") for r in shown]
    lines = []
    for row, mark in picked:
        assert row.plan is not None
        c = dict(zip(HEADERS, sweep_cells(row.plan, row.gpu, True, mark), strict=True))
        lines.append(
            "  ".join(
                [
                    name,
                    f"{c['gpu'].replace(' ', '')} {c['layout'].replace(' ', '')} {c['dtype']}",
                    "ok" if row.plan.feasible else "INFEASIBLE",
                    f"{c['replicas']} replicas, {c['GPUs']} GPUs",
                    f"{c['tok/s per replica']} tok/s/replica",
                    f"TPOT {c['TPOT ms']} ms",
                    f"TTFT P99 {c['TTFT P99 ms']} ms",
                    f"{c['$/1M out']} {row.plan.currency}/1M out",
                    f"{c['GPU-h/1M out']} GPU-h/1M out",
                    c["binding / why not"],
                ]
            )
        )
    return lines


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_lines(name: str, rows: list[SweepRow], top: int, own_gpu: str | None) -> list[str]:
    """The sweep as a Markdown section: the ranking, the table, the notes."""
    own, shown = chosen(rows, top, own_gpu)
    picked = ([(own, " ★")] if own is not None else []) + [(r, "") for r in shown]
    lines = [
        f"## Sweep: {name}",
        "",
        f"{len(picked)} of {len(rows)} configurations ({_order(rows)}).",
        "",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "---|" * len(HEADERS),
    ]
    for row, mark in picked:
        assert row.plan is not None
        cells = sweep_cells(row.plan, row.gpu, True, mark)
        lines.append("| " + " | ".join(_md(c) for c in cells) + " |")
    notes = [f"- ★ the spec's GPU ({own.gpu}), its best configuration"] if own else []
    notes += [f"- invalid: {_md(line)}" for line in invalid_summary(rows)]
    return lines + (["", *notes] if notes else [])


def csv_rows(name: str, rows: Sequence[SweepRow]) -> list[dict[str, str]]:
    """Every configuration given, in rank order, as flat rows (plain numbers, no units)."""
    out = []
    for rank, row in enumerate(rows, start=1):
        p = row.plan
        record = dict.fromkeys(CSV_COLUMNS, "") | {
            "service": name,
            "rank": str(rank),
            "gpu": row.gpu,
            "tensor_parallel_size": str(row.tensor_parallel_size),
            "weight_dtype": row.weight_dtype,
            "feasible": "no",
            "error": row.error or "",
        }
        if p is not None:
            c = dict(zip(HEADERS, sweep_cells(p, row.gpu, True), strict=True))
            record |= {
                "layout": c["layout"],
                "feasible": "yes" if p.feasible else "no",
                "replicas": c["replicas"],
                "gpus": c["GPUs"],
                "output_tok_s_per_replica": c["tok/s per replica"].replace(",", ""),
                "tpot_ms": c["TPOT ms"].replace(",", "").replace("—", ""),
                "ttft_p99_ms": c["TTFT P99 ms"].replace(",", "").replace("—", ""),
                "cost_per_1m_output": c["$/1M out"].replace(",", "").replace("—", ""),
                "gpu_hours_per_1m_output": c["GPU-h/1M out"].replace(",", "").replace("—", ""),
                "currency": p.currency,
                "binding": p.binding_constraint if p.feasible else "",
                "why_not": "" if p.feasible else c["binding / why not"],
            }
        out.append(record)
    return out


def _data(service: InferenceService, rows: list[SweepRow], top: int | None) -> dict[str, Any]:
    return {
        "name": service.metadata.name,
        "ranked_by": ranking(rows),
        "configurations": len(rows),
        "rows": [
            {
                "gpu": r.gpu,
                "tensor_parallel_size": r.tensor_parallel_size,
                "weight_dtype": r.weight_dtype,
                "error": r.error,
                "plan": r.plan.model_dump(mode="json") if r.plan else None,
            }
            for r in rows[:top]
        ],
    }


def print_sweeps(
    results: list[tuple[InferenceService, list[SweepRow]]], fmt: str, top: int | None
) -> None:
    """Print each service's sweep in ``fmt``; exit 1 when a service has no feasible row."""
    shown = top or TABLE_TOP
    if fmt in ("table", "wide"):
        console = stdout_console()
        for s, rows in results:
            console.print(
                sweep_table(rows, shown, s.spec.hardware.gpu, console.width, fmt == "wide")
            )
    elif fmt == "short":
        for s, rows in results:
            for line in short_lines(s.metadata.name, rows, shown, s.spec.hardware.gpu):
                typer.echo(line)
    elif fmt == "markdown":
        parts = [
            "\n".join(markdown_lines(s.metadata.name, rows, shown, s.spec.hardware.gpu))
            for s, rows in results
        ]
        typer.echo("# Capacity sweep\n\n" + "\n\n".join(parts))
    elif fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for s, rows in results:
            writer.writerows(csv_rows(s.metadata.name, rows[:top]))
        typer.echo(out.getvalue(), nl=False)
    else:
        data = [_data(s, rows, top) for s, rows in results]
        typer.echo(dumps(data[0] if len(data) == 1 else data, fmt))
    stuck = [
        s.metadata.name
        for s, rows in results
        if not any(r.plan is not None and r.plan.feasible for r in rows)
    ]
    if stuck:
        Console(stderr=True).print(
            "no configuration is feasible for " + ", ".join(stuck), highlight=False, markup=False
        )
        raise typer.Exit(1)
