"""``tokenscale simulate FILE --trace TRACE --architectures``: the smallest static fleet of each
architecture (one shared pool, or prefill and decode pools) that meets the SLO on the trace, and
whether the planner's ``disaggregation: auto`` picks the same one."""

import dataclasses
import json
import math
from typing import Any

from rich.console import Console
from rich.table import Table

from tokenscale.simulation.disaggregated import ArchitectureRun, Comparison


def comparison_data(c: Comparison) -> dict[str, Any]:
    """The JSON shape: both runs (null: none met the SLO within the search), the two answers."""

    def run(r: ArchitectureRun | None) -> dict[str, Any] | None:
        if r is None:
            return None
        return {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in dataclasses.asdict(r).items()
        }

    return {
        "aggregated": run(c.aggregated),
        "disaggregated": run(c.disaggregated),
        "simulator_disaggregates": c.simulator_disaggregates,
        "planner_disaggregates": c.planner_disaggregates,
        "planner_gpus_aggregated": c.planner_gpus_aggregated,
        "planner_gpus_disaggregated": c.planner_gpus_disaggregated,
        "agree": c.agree,
    }


def print_comparison(console: Console, c: Comparison, title: str, output_json: bool) -> None:
    if output_json:
        print(json.dumps(comparison_data(c), indent=2))
        return
    t = Table(title=title)
    for col in (
        "architecture",
        "fleet",
        "GPUs (simulated)",
        "GPUs (planned)",
        "TTFT P99 s",
        "TPOT P99 ms",
        "meets SLO",
    ):
        t.add_column(col)
    for r, planned in (
        (c.aggregated, c.planner_gpus_aggregated),
        (c.disaggregated, c.planner_gpus_disaggregated),
    ):
        if r is None:
            continue
        fleet = (
            f"{r.decode_replicas} replicas"
            if r.architecture == "aggregated"
            else f"{r.prefill_replicas} prefill + {r.decode_replicas} decode"
        )
        t.add_row(
            r.architecture,
            fleet,
            str(r.gpus),
            "—" if planned is None else str(planned),
            f"{r.ttft_p99_s:.2f}",
            f"{r.tpot_p99_s * 1e3:.1f}",
            "yes" if r.meets_slo else "no",
        )
    console.print(t)
    sim = c.simulator_disaggregates
    sim_text = "neither met the SLO" if sim is None else ("disaggregated" if sim else "aggregated")
    planner = "disaggregated" if c.planner_disaggregates else "aggregated"
    verdict = "agree" if c.agree else "disagree"
    console.print(
        f"simulator: {sim_text} needs fewer GPUs; planner (auto): {planner} — they {verdict}"
    )
