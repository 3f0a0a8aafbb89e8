"""Render a Plan for people (rich tables) and for programs (JSON/YAML)."""

import json
import math
from typing import Any

import yaml
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from tokenscale.cli.class_view import classes_table
from tokenscale.cli.fit import Column, FittedTable
from tokenscale.cli.length_view import length_table
from tokenscale.cli.lora_view import lora_rows
from tokenscale.cli.plan_figures import Latency, cannot_serve, duration_text, latencies
from tokenscale.cli.pool_view import pools_table, several
from tokenscale.planning.formulas import GIB, batch_text, counted
from tokenscale.planning.result import Plan
from tokenscale.planning.sweep import SweepRow
from tokenscale.scaling.schedule_day import ScheduleDay, day_line, window_line


def _gib(v: float) -> str:
    return f"{v / GIB:,.2f} GiB"


def _num(v: float | None, fmt: str = ",.2f", unit: str = "") -> str:
    return "—" if v is None else f"{v:{fmt}}{unit}"


def _kv_table(rows: list[tuple[str, str]], title: str) -> Table:
    t = Table(title=title, title_justify="left", show_header=False, box=None, pad_edge=False)
    t.add_column(style="bold")
    t.add_column()
    for k, v in rows:
        t.add_row(k, v)
    return t


def layout_text(p: Plan, compact: bool = False) -> str:
    """``TP 4``, or ``TP 8 × PP 2 · 2 node(s), 16 GPUs per replica`` for a multi-node layout
    (compact: ``TP8×PP2 /2n``)."""
    if compact:
        text = f"TP{p.tensor_parallel_size}"
        text += f"×PP{p.pipeline_parallel_size}" if p.pipeline_parallel_size > 1 else ""
        text += f"×DP{p.data_parallel_size}" if p.data_parallel_size > 1 else ""
        text += "+EP" if p.expert_parallel else ""
        return text + (f" /{p.nodes_per_replica}n" if p.nodes_per_replica > 1 else "")
    parts = [f"TP {p.tensor_parallel_size}"]
    if p.pipeline_parallel_size > 1:
        parts.append(f"PP {p.pipeline_parallel_size}")
    if p.data_parallel_size > 1:
        parts.append(f"DP {p.data_parallel_size}")
    text = " × ".join(parts) + (" + EP" if p.expert_parallel else "")
    if p.nodes_per_replica > 1 or p.data_parallel_size > 1:
        text += f" · {p.nodes_per_replica} node(s), {p.gpus_per_replica} GPUs per replica"
    return text


def replica_bounds_text(wanted: int, total: int) -> str:
    """How the bounds (or a pin) moved the count: kept, capped below the need, or raised."""
    if total == wanted:
        return counted(total, "replica")
    if total < wanted:
        return (
            f"capped at {counted(total, 'replica')} by maxReplicas or the pin, "
            f"{wanted - total:,} short of the need"
        )
    return f"raised to {counted(total, 'replica')} by minReplicas or the pin"


def _latency_row(x: Latency) -> tuple[str, str, str, str]:
    if x.target_s is None:
        return x.name, duration_text(x.estimate_s), "", ""
    return (
        x.name,
        duration_text(x.estimate_s),
        duration_text(x.target_s),
        "[green]yes[/]" if x.met else "[red]NO[/]",
    )


def _bytes(v: float) -> str:
    """Binary units throughout (GiB, MiB, KiB), as vLLM's logs and the memory table use."""
    for unit, size in (("GiB", GIB), ("MiB", 2.0**20), ("KiB", 2.0**10)):
        if abs(v) >= size:
            return f"{v / size:,.1f} {unit}"
    return f"{v:,.0f} B"


def plan_renderable(
    p: Plan, advice: list[str] | None = None, schedule: ScheduleDay | None = None
) -> Panel:
    m = p.memory_per_gpu
    header = (
        f"{p.model} on {p.gpu} · {p.weight_dtype} weights · KV {p.kv_cache_dtype} · "
        f"{layout_text(p)} · max model len {p.max_model_len:,}"
    )
    memory = _kv_table(
        [
            ("GPU total", _gib(m.gpu_total_bytes)),
            ("usable (× utilization)", _gib(m.usable_bytes)),
            ("weights (this GPU's share)", _gib(m.weights_bytes)),
            ("activation peak", _gib(m.activation_bytes)),
            ("CUDA graphs", _gib(m.cuda_graph_bytes)),
            ("NCCL buffers", _gib(m.nccl_bytes)),
            ("runtime", _gib(m.runtime_bytes)),
            *(
                [("LoRA slots (maxLoras × maxLoraRank)", _gib(m.lora_bytes))]
                if m.lora_bytes
                else []
            ),
            ("KV pool", _gib(m.kv_pool_bytes)),
        ],
        "Memory per GPU",
    )
    lim = p.concurrency_limits
    kv = _kv_table(
        [
            (
                "params (total / active)",
                f"{p.params / 1e9:,.2f} B / {p.active_params / 1e9:,.2f} B",
            ),
            ("weights (whole model)", _gib(p.weight_bytes)),
            ("KV per token (all layers)", _bytes(p.kv_bytes_per_token)),
            (
                "KV capacity per replica",
                f"{p.kv_capacity_tokens_per_replica:,.0f} tokens "
                f"({p.kv_capacity_blocks_per_replica:,} blocks)",
            ),
            (
                "KV per request mean / P99",
                f"{_bytes(p.kv_bytes_per_request_mean)} / {_bytes(p.kv_bytes_per_request_p99)}",
            ),
            (
                "concurrency limits",
                f"maxNumSeqs {lim.max_num_seqs} · SLO {_num(lim.slo, ',.0f')} · "
                f"knee {lim.knee:,.0f} · KV(mean) {lim.kv_mean_context:,.0f} · "
                f"KV(P99) {lim.kv_p99_context:,.0f}",
            ),
            ("serving knobs", p.serving_knobs_reason or "—"),
            *(
                [("speculative decoding", p.speculative.reason)]
                if p.speculative is not None
                else []
            ),
            *(lora_rows(p.lora) if p.lora is not None else []),
            (
                "operating batch",
                "none: this configuration cannot serve"
                if cannot_serve(p)
                else f"{batch_text(p.operating_batch)} "
                f"(limited by {p.assumptions.get('operating_point_limited_by')})",
            ),
        ],
        "Model and KV cache",
    )
    perf = Table(title="Estimates vs SLO", title_justify="left")
    for col in ("metric", "estimate", "target", "ok"):
        perf.add_column(col)
    if p.at_load is not None:
        load = p.at_load
        perf.title = (
            f"Estimates vs SLO at the load each replica carries ({load.rps_per_replica:,.2f} "
            f"RPS, batch {load.batch:,.1f}{', saturated' if load.saturated else ''})"
        )
    lat = latencies(p)
    if _pooled(p):  # the pools' latencies at their loads; per replica: the pools table
        perf.title = "Estimates vs SLO at the load each pool carries (the largest over pools)"
        for x in lat:
            perf.add_row(*_latency_row(x))
    else:
        for x in lat[:1]:
            perf.add_row(*_latency_row(x))
        perf.add_row("TPOT mean", duration_text(p.tpot_estimate_s), "", "")
        for x in lat[1:]:
            perf.add_row(*_latency_row(x))
        perf.add_row("output tok/s per replica", f"{p.output_tps_per_replica:,.0f}", "", "")
        perf.add_row("requests/s per replica", f"{p.rps_per_replica:,.2f}", "", "")
    cons = Table(
        title=f"Replicas (design {p.design_rps:,.2f} RPS: {p.input_tps:,.0f} in / "
        f"{p.output_tps:,.0f} out tok/s)",
        title_justify="left",
    )
    if _pooled(p):
        cons.title = f"One shared pool instead (the alternative): {cons.title}"
    cons.add_column("constraint")
    cons.add_column("replicas", justify="right")
    cons.add_column("how")
    for con in p.constraints:
        name = f"[bold]{con.name} ◀ binding[/]" if con.name == p.binding_constraint else con.name
        cons.add_row(name, f"{con.replicas:,.2f}", con.formula)
    r = p.replicas
    if r is None:
        cons.add_row("total", "[red]—[/]", "no count: this configuration cannot serve (below)")
    else:
        cons.add_row(
            "total",
            f"[bold]{r.total:,}[/]",
            f"ceil({r.needed:,.2f} × redundancy) + spares = {r.with_redundancy:,}; "
            f"{replica_bounds_text(r.with_redundancy, r.total)}, "
            f"{counted(_gpus_of_count(p), 'GPU')}",
        )
    cost = _kv_table(
        [
            ("fleet per hour", _num(p.cost_per_hour, ",.2f", f" {p.currency}")),
            (
                "per 1M output tokens",
                _num(p.cost_per_million_output_tokens, ",.3f", f" {p.currency}"),
            ),
            (
                "per 1M input tokens",
                _num(p.cost_per_million_input_tokens, ",.3f", f" {p.currency}"),
            ),
            ("per 1M tokens (blended)", _num(p.cost_per_million_tokens, ",.3f", f" {p.currency}")),
            ("per request", _num(p.cost_per_request, ",.5f", f" {p.currency}")),
            ("GPU-hours per 1M output", _num(p.gpu_hours_per_million_output_tokens, ",.3f")),
        ],
        "Cost (at the operating point)",
    )
    parts: list[Any] = [Text(header, style="bold"), memory, kv, perf, cons, cost]
    if _pooled(p):
        parts.insert(parts.index(cons), pools_table(p))
    if p.classes:
        parts.insert(parts.index(cost) + 1, classes_table(p))
    if p.length_split is not None:
        parts.insert(parts.index(cons), length_table(p))
    if cannot_serve(p):  # no estimates or cost for a replica that cannot run
        parts = [
            Text(header, style="bold"),
            memory,
            kv,
            Text("No latency, throughput or cost: this configuration cannot serve (✗ below)."),
        ]
    if p.disaggregation is not None:
        parts.append(disaggregation_renderable(p))
    if schedule is not None:
        parts.append(
            _kv_table(
                [(w.label, window_line(w, schedule.need, label=False)) for w in schedule.windows]
                + [("a day", day_line(schedule))],
                f"Schedule windows (UTC; the need is {schedule.need}, "
                f"{schedule.replicas_outside} outside them)",
            )
        )
    if p.infeasible_reasons:
        parts.append(Text("\n".join(f"✗ {r}" for r in p.infeasible_reasons), style="red"))
    warnings = p.warnings + (schedule.warnings if schedule is not None else [])
    if warnings:
        parts.append(Text("\n".join(f"! {w}" for w in warnings), style="yellow"))
    if advice:
        parts.append(Text("\n".join(f"→ {a}" for a in advice), style="cyan"))
    status = "[green]feasible[/]" if p.feasible else "[red]INFEASIBLE[/]"
    return Panel(Group(*parts), title=f"plan {p.name} — {status}", title_align="left")


def _pooled(p: Plan) -> bool:
    """Several pools: the replica count and per-replica figures above them describe one
    shared pool, the alternative (``pools_table`` shows what runs)."""
    return several(p)


def _gpus_of_count(p: Plan) -> int:
    """The GPUs ``replicas.total`` holds: the fleet's, or one shared pool's beside pools."""
    if _pooled(p) and p.replicas is not None:
        return p.replicas.total * p.gpus_per_replica
    return p.gpus_total or 0


def disaggregation_renderable(p: Plan) -> Group:
    """Prefill/decode disaggregation: both pools side by side, the KV transfer, the choice."""
    d = p.disaggregation
    if d is None:
        return Group()
    state = "enabled" if d.enabled else "not enabled"
    rows = []
    for pool in (d.prefill, d.decode):
        if pool is None:
            continue
        layout = f"TP {pool.tensor_parallel_size}"
        if pool.nodes_per_replica > 1:
            layout += f" · {pool.nodes_per_replica} nodes, {pool.gpus_per_replica} GPUs"
        point = (
            f"{pool.operating_point:.0%} utilization"
            if pool.role == "prefill"
            else f"batch {pool.operating_point:,.0f}"
        )
        rows.append(
            [
                pool.role,
                f"{pool.replicas:,} (need {pool.replicas_needed:,.2f})",
                layout,
                f"{pool.gpus:,}",
                f"{point} ({pool.limited_by})",
                f"{pool.rps_per_replica:,.2f}",
                pool.binding_constraint,
            ]
        )
    t = FittedTable(
        [
            Column("role"),
            Column("replicas", prose=True),
            Column("layout", prose=True),
            Column("GPUs"),
            Column("operating point", prose=True),
            Column("req/s per replica"),
            Column("binding"),
        ],
        rows,
        title=f"Prefill/decode disaggregation ({d.mode}: {state})",
    )
    ms = "—" if d.kv_transfer_s is None else f"{d.kv_transfer_s * 1e3:,.1f} ms"
    facts = _kv_table(
        [
            ("KV transfer (P99 prompt)", f"{ms} over {d.fabric}"),
            ("prefill : decode", _num(d.ratio, ",.2f")),
            (
                "GPUs (needed / within bounds)",
                f"{_num(d.gpus_needed, ',')} / {_num(d.gpus_total, ',')} vs "
                f"{_num(d.aggregated_gpus_needed, ',')} aggregated",
            ),
            (
                "TTFT P99 / TPOT P99 at capacity",
                f"{_num(_ms(d.ttft_p99_estimate_s), ',.0f')} ms / "
                f"{_num(_ms(d.tpot_p99_estimate_s), ',.1f')} ms",
            ),
            ("fleet per hour", _num(d.cost_per_hour, ",.2f", f" {p.currency}")),
        ],
        "",
    )
    parts: list[Any] = [t, facts, Text(d.reason)]
    if d.infeasible_reasons:
        parts.append(Text("\n".join(f"✗ {r}" for r in d.infeasible_reasons), style="red"))
    return Group(*parts)


def _aggregated_cells(p: Plan) -> list[str]:
    return [
        f"{p.output_tps_per_replica:,.0f}",
        f"{p.tpot_estimate_s * 1e3:,.1f}",
        f"{p.ttft_p99_estimate_s * 1e3:,.0f}",
    ]


def _pd_cells(p: Plan) -> list[str]:
    """A disaggregated row: a decode replica's output tok/s, its mean TPOT, the pools' TTFT P99."""
    d = p.disaggregation
    if d is None or d.decode is None:
        return _aggregated_cells(p)
    out_mean = p.output_tps / p.design_rps if p.design_rps > 0 else 0.0
    return [
        f"{d.decode.rps_per_replica * out_mean:,.0f}",
        _num(_ms(d.tpot_estimate_s), ",.1f"),
        _num(_ms(d.ttft_p99_estimate_s), ",.0f"),
    ]


def disaggregated_counts(p: Plan) -> str | None:
    """``4P+4D`` when the plan runs disaggregated, else None (the sweep's replicas cell)."""
    pair = p.role_pools
    if pair is None:
        return None
    return f"{pair[0].replicas}P+{pair[1].replicas}D"


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


def curve_table(p: Plan) -> Table:
    """The predicted closed-loop load test, in a bench profile's columns."""
    t = Table(
        title=f"{p.name or p.model}: predicted load-test curve (TP {p.tensor_parallel_size}, "
        f"chunk {p.max_num_batched_tokens:,})",
        title_justify="left",
    )
    for col in (
        "concurrency",
        "TTFT mean / P99 ms",
        "TPOT mean / P99 ms",
        "ITL P99 ms",
        "E2E mean / P99 s",
        "out tok/s",
        "req/s",
    ):
        t.add_column(col, justify="right")
    for c in p.curve:
        t.add_row(
            str(c.concurrency),
            f"{c.ttft_mean_seconds * 1e3:,.0f} / {c.ttft_p99_seconds * 1e3:,.0f}",
            f"{c.tpot_mean_seconds * 1e3:,.1f} / {c.tpot_p99_seconds * 1e3:,.1f}",
            f"{c.itl_p99_seconds * 1e3:,.1f}",
            f"{c.e2e_mean_seconds:,.2f} / {c.e2e_p99_seconds:,.2f}",
            f"{c.output_tps:,.0f}",
            f"{c.requests_per_second:,.2f}",
        )
    if not p.curve:
        t.caption = "no curve: this configuration cannot serve"
    return t


def invalid_summary(rows: list[SweepRow]) -> list[str]:
    """The invalid configurations in one line per distinct reason (``int8 on 16 GPUs × TP 1, 2,
    4, 8: spec.model.weightDtype: …``), not one row each."""
    groups: dict[tuple[str, str], list[SweepRow]] = {}
    for row in rows:
        if row.plan is None:
            groups.setdefault((row.weight_dtype, row.error or "invalid"), []).append(row)
    lines = []
    for (dtype, error), members in groups.items():
        gpus = sorted({r.gpu for r in members})
        tps = sorted({r.tensor_parallel_size for r in members})
        where = f"{len(gpus)} GPUs" if len(gpus) > 3 else ", ".join(gpus)
        lines.append(f"{dtype} on {where} × TP {', '.join(map(str, tps))}: {error}")
    return lines


def finite_or_null(value: Any) -> Any:
    """JSON has no NaN or Infinity: a figure that is not finite is written as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite_or_null(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_or_null(v) for v in value]
    return value


def dumps(data: Any, fmt: str) -> str:
    """JSON or YAML; never NaN or Infinity (not JSON, and no program expects them)."""
    clean = finite_or_null(data)
    if fmt == "json":
        return json.dumps(clean, indent=2, allow_nan=False)
    return yaml.safe_dump(clean, sort_keys=False)


def print_plans(
    console: Console,
    plans: list[Plan],
    advice: dict[str, list[str]],
    schedules: dict[str, ScheduleDay | None] | None = None,
) -> None:
    for p in plans:
        console.print(plan_renderable(p, advice.get(p.name, []), (schedules or {}).get(p.name)))
