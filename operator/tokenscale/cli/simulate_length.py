"""``tokenscale simulate`` on a spec with length classes (``spec.serving.lengthClasses``): the
class pools the operator would run (each scaled by tokenscale on its own series, or pinned at
its plan with ``--policy static``) against one shared pool, on the same trace, judged per
class by prompt length (``simulation/length_classes.py``)."""

import json
import math
from dataclasses import asdict
from typing import Any

from tokenscale.api.inference_service import InferenceService
from tokenscale.cli.console import stdout_console
from tokenscale.cli.fit import Column, FittedTable
from tokenscale.planning.service import plan_service
from tokenscale.simulation.length_classes import (
    ClassOutcome,
    LengthPolicy,
    LengthReplay,
    replay_length_classes,
)
from tokenscale.simulation.result import FleetRun
from tokenscale.simulation.run import SimOptions
from tokenscale.simulation.trace import Trace


def length_replay(
    isvc: InferenceService, trace: Trace, opts: SimOptions, policy: LengthPolicy
) -> LengthReplay:
    """Plan the spec and replay both arrangements."""
    plan = plan_service(isvc.spec, isvc.metadata.name)
    return replay_length_classes(isvc.spec, plan, trace, opts, policy)


def _seconds(x: float) -> str:
    if not math.isfinite(x):
        return "—"
    return f"{x * 1e3:,.0f} ms" if x < 1 else f"{x:,.2f} s"


def _fleet_words(r: FleetRun) -> str:
    peak = " + ".join(f"{p.name} {p.replicas_max}" for p in r.pools)
    cost = "" if r.cost is None else f" · {r.cost:,.2f} cost"
    return (
        f"{r.gpu_hours:,.2f} GPU-h{cost} · attainment {r.slo_attainment:.2%} · TTFT P99 "
        f"{_seconds(r.ttft_p99_s)} · most replicas {peak} · {r.scale_events} scale events"
    )


def _table(found: LengthReplay, title: str) -> FittedTable:
    rows = [
        [
            own.name,
            f"{own.requests:,}",
            f"{own.attainment:.2%}",
            _seconds(own.ttft_p99_s),
            f"{shared.attainment:.2%}",
            _seconds(shared.ttft_p99_s),
        ]
        for own, shared in zip(found.isolated_by_class, found.shared_by_class, strict=True)
    ]
    headers = (
        "class",
        "requests",
        "attainment (own pool)",
        "TTFT P99 (own pool)",
        "attainment (shared)",
        "TTFT P99 (shared)",
    )
    columns = [Column(h, justify="left" if h == "class" else "right", drop=0) for h in headers]
    return FittedTable(columns, rows, title=title)


def _class_json(rows: list[ClassOutcome]) -> list[dict[str, Any]]:
    return [
        {**asdict(r), "ttft_p99_s": r.ttft_p99_s if math.isfinite(r.ttft_p99_s) else None}
        for r in rows
    ]


def _run_json(r: FleetRun, timeline: bool) -> dict[str, Any]:
    doc = asdict(r)
    if not timeline:
        doc.pop("timeline")
    for key in ("ttft_p99_s", "tpot_p99_s"):
        if not math.isfinite(doc[key]):
            doc[key] = None
    return doc


def print_length(found: LengthReplay, title: str, as_json: bool, timeline: bool) -> None:
    """The two arrangements and each class in both, as a table or as JSON."""
    if as_json:
        doc = {
            "isolated": _run_json(found.isolated, timeline),
            "shared": _run_json(found.shared, timeline),
            "classes": {
                "isolated": _class_json(found.isolated_by_class),
                "shared": _class_json(found.shared_by_class),
            },
        }
        print(json.dumps(doc, indent=2))
        return
    console = stdout_console()
    console.print(_table(found, title))
    console.print(f"class pools: {_fleet_words(found.isolated)}", highlight=False)
    console.print(f"one shared pool: {_fleet_words(found.shared)}", highlight=False)
