"""``tokenscale simulate`` on a spec with length classes (``spec.serving.lengthClasses``): the
class pools the operator would run (each scaled by tokenscale on its own series, or pinned at
its plan with ``--policy static``) against one shared pool, on the same trace, judged per
class by prompt length (``simulation/length_classes.py``)."""

import json
import math
from dataclasses import asdict
from typing import Any, cast

from tokenscale.api.inference_service import InferenceService
from tokenscale.cli.console import stdout_console
from tokenscale.cli.fit import Column, FittedTable
from tokenscale.planning.service import plan_service
from tokenscale.simulation.length_classes import (
    ClassOutcome,
    LengthPolicy,
    LengthReplay,
    SmallestFleets,
    replay_length_classes,
    smallest_fleets,
)
from tokenscale.simulation.result import FleetRun
from tokenscale.simulation.run import SimOptions, SimulationError
from tokenscale.simulation.trace import Trace


def length_replay(
    isvc: InferenceService, trace: Trace, opts: SimOptions, policy: str
) -> tuple[LengthReplay, SmallestFleets | None]:
    """Plan the spec and replay both arrangements: by ``policy`` (tokenscale, static), or
    (best-static) each arrangement's smallest fixed fleet meeting the target for every class.
    Raises :class:`SimulationError` when best-static finds no passing size."""
    plan = plan_service(isvc.spec, isvc.metadata.name)
    if policy != "best-static":
        return replay_length_classes(isvc.spec, plan, trace, opts, cast(LengthPolicy, policy)), None
    target = isvc.spec.scaling.target_attainment
    found = smallest_fleets(isvc.spec, plan, trace, opts, target)
    if found.replayed is None:
        raise SimulationError(
            f"no fixed fleet of at most 64 replicas per pool meets {target:.0%} of every "
            f"class's requests (class pools: {found.isolated}, one shared pool: {found.shared})"
        )
    return found.replayed, found


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


def print_length(
    found: LengthReplay,
    title: str,
    as_json: bool,
    timeline: bool,
    smallest: SmallestFleets | None = None,
) -> None:
    """The two arrangements and each class in both, as a table or as JSON (best-static: the
    sizes found, and the verdict)."""
    sizes: dict[str, Any] | None = None
    if smallest is not None:
        iso = [n or 0 for n in smallest.isolated]
        shared = smallest.shared or 0
        names = [c.name for c in found.isolated_by_class]
        sizes = {
            "target_attainment": smallest.target,
            "isolated_replicas": dict(zip(names, iso, strict=True)),
            "shared_replicas": shared,
            "isolation_pays": sum(iso) <= shared,
        }
    if as_json:
        doc = {
            "isolated": _run_json(found.isolated, timeline),
            "shared": _run_json(found.shared, timeline),
            "classes": {
                "isolated": _class_json(found.isolated_by_class),
                "shared": _class_json(found.shared_by_class),
            },
            **({"smallest": sizes} if sizes is not None else {}),
        }
        print(json.dumps(doc, indent=2))
        return
    console = stdout_console()
    console.print(_table(found, title))
    console.print(f"class pools: {_fleet_words(found.isolated)}", highlight=False)
    console.print(f"one shared pool: {_fleet_words(found.shared)}", highlight=False)
    if sizes is not None:
        iso_words = " + ".join(f"{k} {v}" for k, v in sizes["isolated_replicas"].items())
        verdict = "isolation pays" if sizes["isolation_pays"] else "one shared pool is cheaper"
        console.print(
            f"smallest fixed fleets meeting {sizes['target_attainment']:.0%} of every class's "
            f"requests: class pools {iso_words}, one shared pool {sizes['shared_replicas']}: "
            f"{verdict}",
            highlight=False,
        )
