"""The pools a plan runs, as every view shows them: a one-line fleet (``24×TP1 L40S-48GB +
4×TP1 A100-SXM-80GB (28 GPUs)``), a table with one row per pool, and one flat text per pool
for CSV and Markdown. The figures are :class:`~tokenscale.planning.result.Pool` fields; the
fleet's totals are the plan's (``planning/pools.py`` sets them from the pools)."""

from tokenscale.cli.fit import Column, FittedTable
from tokenscale.cli.plan_figures import duration_text
from tokenscale.planning.formulas import counted
from tokenscale.planning.result import Plan, Pool


def several(p: Plan) -> bool:
    """True when the plan runs more than one pool (a GPU mix, a prefill/decode pair): its
    per-replica figures then belong to the pools, not to the plan."""
    return len(p.pools) > 1


def pool_layout(x: Pool) -> str:
    """``TP1``, ``TP8×PP2 /2n``: compact, as the one-pool views write a layout."""
    v = x.variant
    text = f"TP{v.tensor_parallel_size}"
    text += f"×PP{v.pipeline_parallel_size}" if v.pipeline_parallel_size > 1 else ""
    text += f"×DP{v.data_parallel_size}" if v.data_parallel_size > 1 else ""
    text += "+EP" if v.expert_parallel else ""
    return text + (f" /{v.nodes_per_replica}n" if v.nodes_per_replica > 1 else "")


def pool_label(x: Pool) -> str:
    """``24×TP1 L40S-48GB``, ``2×TP1 H100-SXM-80GB prefill``."""
    text = f"{x.replicas}×{pool_layout(x)} {x.variant.gpu}"
    return text if x.role == "serve" else f"{text} {x.role}"


def bindings(p: Plan) -> str:
    """``prefill throughput, decode throughput``: what binds in each pool that runs."""
    return ", ".join(f"{x.name} {x.binding_constraint}" for x in p.pools if x.replicas > 0)


def fleet_text(p: Plan) -> str:
    """The pools that run replicas, joined, and the GPUs they hold: ``24×TP1 L40S-48GB +
    4×TP1 A100-SXM-80GB (28 GPUs)``."""
    running = [x for x in p.pools if x.replicas > 0] or p.pools
    gpus = sum(x.gpus for x in p.pools)
    return " + ".join(pool_label(x) for x in running) + f" ({counted(gpus, 'GPU')})"


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else duration_text(seconds)


def _money(value: float | None) -> str:
    return "—" if value is None else f"{value:,.2f}"


def pool_line(x: Pool, currency: str) -> str:
    """One pool in a sentence (the compact view's rows, the Markdown list, the CSV cell)."""
    head = f"{x.name}: {x.replicas}×{pool_layout(x)} {x.variant.gpu}"
    if x.replicas == 0:
        return f"{head} · unused (one replica carries {x.capacity_rps_per_replica:,.2f} req/s)"
    parts = [
        head,
        f"{x.rps_per_replica:,.2f} of {x.capacity_rps_per_replica:,.2f} req/s per replica",
    ]
    if x.ttft_p99_s is not None:
        parts.append(f"TTFT P99 {_ms(x.ttft_p99_s)}")
    if x.tpot_p99_s is not None:
        parts.append(f"TPOT P99 {_ms(x.tpot_p99_s)}")
    parts.append(f"{x.binding_constraint} binds")
    if x.cost_per_hour is not None:
        parts.append(f"{x.cost_per_hour:,.2f} {currency}/h")
    return " · ".join(parts)


def pools_table(p: Plan) -> FittedTable:
    """One row per pool, fitted to the terminal (the least needed columns go first)."""
    rows = [
        [
            x.name,
            x.role,
            x.variant.gpu,
            pool_layout(x),
            f"{x.replicas:,}",
            f"{x.gpus:,}",
            f"{x.load_rps:,.2f}",
            f"{x.rps_per_replica:,.2f}",
            f"{x.capacity_rps_per_replica:,.2f}",
            _ms(x.ttft_p99_s),
            _ms(x.tpot_p99_s),
            x.binding_constraint,
            _money(x.cost_per_hour),
        ]
        for x in p.pools
    ]
    drop = {
        "role": 9,
        "load RPS": 8,
        "layout": 7,
        "capacity RPS per replica": 6,
        "binds": 5,
        "RPS per replica": 4,
        "GPUs": 3,
        f"{p.currency}/h": 2,
    }
    left = ("pool", "role", "gpu", "layout", "binds")
    columns = [
        Column(h, justify="left" if h in left else "right", drop=drop.get(h, 0))
        for h in (
            "pool",
            "role",
            "gpu",
            "layout",
            "replicas",
            "GPUs",
            "load RPS",
            "RPS per replica",
            "capacity RPS per replica",
            "TTFT P99",
            "TPOT P99",
            "binds",
            f"{p.currency}/h",
        )
    ]
    rule = p.coordination.rule if p.coordination is not None else "none"
    return FittedTable(columns, rows, title=f"Pools ({rule}): {fleet_text(p)}")
