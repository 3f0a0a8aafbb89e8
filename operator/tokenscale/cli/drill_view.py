"""``tokenscale simulate --fault KIND@MM:SS``: the drills' table and JSON.

The simulation is ``simulation/drills.py``; this module only lays out what it found.
"""

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from tokenscale.cli.fit import Column, fitted_table
from tokenscale.simulation.drills import Drill, RedundancyAdvice


def _clock(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def drill_data(d: Drill, advice: RedundancyAdvice | None, timeline: bool) -> dict[str, Any]:
    """The faulted run's result, plus ``faults`` (one report each), ``without_faults`` (the
    same run's headline numbers without them) and ``redundancy`` (with a replica loss)."""
    exclude = None if timeline else {"timeline"}
    data: dict[str, Any] = d.faulted.model_dump(mode="json", exclude=exclude)
    data["faults"] = [r.model_dump(mode="json") for r in d.reports]
    data["without_faults"] = d.baseline.model_dump(
        mode="json",
        include={"requests", "slo_attainment", "ttft_p99_s", "tpot_p99_s", "gpu_hours"},
    )
    data["redundancy"] = advice.model_dump(mode="json") if advice is not None else None
    return data


def print_drill(console: Console, d: Drill, advice: RedundancyAdvice | None) -> None:
    """The faulted run beside the run without faults, then one row per fault."""
    f, b = d.faulted, d.baseline
    head = Table(title=f"{f.policy}: with the faults vs without", title_justify="left")
    for col in ("run", "requests", "SLO attainment", "TTFT P99 s", "TPOT P99 ms", "GPU-hours"):
        head.add_column(col, justify="left" if col == "run" else "right")
    for label, r in (("with faults", f), ("without", b)):
        head.add_row(
            label,
            f"{r.requests:,}",
            f"{r.slo_attainment * 100:.2f} %",
            f"{r.ttft_p99_s:.2f}",
            f"{r.tpot_p99_s * 1000:.0f}",
            f"{r.gpu_hours:.2f}",
        )
    console.print(head)
    columns = [
        Column("fault"),
        Column("at", "right"),
        Column("recovery", "right"),
        Column("attainment during (without)", "right"),
        Column("max queue (without)", "right", drop=2),
        Column("max KV (without)", "right", drop=1),
        Column("what happened, what the operator decided", prose=True),
    ]
    rows: list[list[str | Text]] = [
        [
            rep.kind,
            _clock(rep.at_s),
            "not recovered" if rep.recovery_s is None else f"{rep.recovery_s:.0f} s",
            f"{rep.slo_attainment_during:.1%} ({rep.slo_attainment_during_without:.1%})",
            f"{rep.max_waiting_during} ({rep.max_waiting_during_without})",
            f"{rep.kv_usage_max_during:.0%} ({rep.kv_usage_max_during_without:.0%})",
            Text("\n".join([*rep.events, *rep.decisions]) or "no replica change"),
        ]
        for rep in d.reports
    ]
    title = "faults: during = from the fault to the end of its recovery"
    console.print(fitted_table(columns, rows, console.width, title))
    if advice is not None:
        console.print(f"redundancy: {advice.reason}", highlight=False, markup=False)
