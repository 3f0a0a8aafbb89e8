"""``tokenscale simulate FILE --trace TRACE --architectures``: the smallest static fleet of each
architecture (one shared pool, or prefill and decode pools) that meets the SLO on the trace,
whether the planner's ``disaggregation: auto`` picks the same one, and the prefill and decode
pools scaled role by role by the operator's policy from the planned counts
(``simulation/disaggregated_scaling.py``)."""

import dataclasses
import json
import math
from typing import Any

from rich.console import Console

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.cli.fit import Column, FittedTable
from tokenscale.planning import plan_service
from tokenscale.scaling.roles import pools
from tokenscale.simulation.disaggregated import ArchitectureRun, Comparison, engines
from tokenscale.simulation.disaggregated_scaling import ScaledRun, replay_scaled
from tokenscale.simulation.trace import Trace


def scaled_pools(
    spec: InferenceServiceSpec,
    trace: Trace,
    mismatch: float,
    name: str,
    cold_start_s: float,
    scrape_interval_s: float,
    decision_interval_s: float,
) -> tuple[ScaledRun, int, int] | None:
    """The pools planned with ``disaggregation: on``, scaled role by role on ``trace``, and
    their planned counts (None: the plan cannot run two pools)."""
    on = spec.model_copy(
        update={"serving": spec.serving.model_copy(update={"disaggregation": "on"})}
    )
    plan = plan_service(on, name)
    try:
        _, prefill, decode = pools(plan)
    except ValueError:
        return None
    run = replay_scaled(
        on,
        plan,
        engines(on, plan, mismatch),
        trace,
        cold_start_s=cold_start_s,
        decision_interval_s=decision_interval_s,
        scrape_interval_s=scrape_interval_s,
    )
    return run, prefill.replicas, decode.replicas


def scaled_data(found: tuple[ScaledRun, int, int] | None) -> dict[str, Any] | None:
    if found is None:
        return None
    run, p0, d0 = found
    finite = {
        k: (None if isinstance(v, float) and not math.isfinite(v) else v)
        for k, v in (
            ("ttft_p99_s", run.ttft_p99_s),
            ("tpot_p99_s", run.tpot_p99_s),
            ("gpu_hours", round(run.gpu_hours, 4)),
        )
    }
    return {
        "prefill_planned": p0,
        "decode_planned": d0,
        "prefill_peak": max((c.prefill for c in run.decisions), default=p0),
        "decode_peak": max((c.decode for c in run.decisions), default=d0),
        "requests": run.requests,
        "served": run.served,
        "meets_slo": run.meets_slo,
        "decisions": len(run.decisions),
        **finite,
    }


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


def print_comparison(
    console: Console,
    c: Comparison,
    title: str,
    output_json: bool,
    per_role: tuple[ScaledRun, int, int] | None = None,
) -> None:
    scaled = scaled_data(per_role)
    if output_json:
        print(json.dumps({**comparison_data(c), "scaled_disaggregated": scaled}, indent=2))
        return
    rows: list[list[str]] = []
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
        rows.append(
            [
                r.architecture,
                fleet,
                str(r.gpus),
                "—" if planned is None else str(planned),
                f"{r.ttft_p99_s:.2f}",
                f"{r.tpot_p99_s * 1e3:.1f}",
                "yes" if r.meets_slo else "no",
            ]
        )
    columns = [
        Column("architecture"),
        Column("fleet", prose=True),
        Column("GPUs (simulated)", "right"),
        Column("GPUs (planned)", "right"),
        Column("TTFT P99 s", "right", drop=2),
        Column("TPOT P99 ms", "right", drop=1),
        Column("meets SLO"),
    ]
    t = FittedTable(columns, rows, title)
    console.print(t)
    sim = c.simulator_disaggregates
    sim_text = "neither met the SLO" if sim is None else ("disaggregated" if sim else "aggregated")
    planner = "disaggregated" if c.planner_disaggregates else "aggregated"
    verdict = "agree" if c.agree else "disagree"
    console.print(
        f"simulator: {sim_text} needs fewer GPUs; planner (auto): {planner} — they {verdict}"
    )
    if scaled is not None:
        console.print(
            f"prefill/decode scaled per role (the operator's policy) from the planned "
            f"{scaled['prefill_planned']} + {scaled['decode_planned']}: peak "
            f"{scaled['prefill_peak']} + {scaled['decode_peak']}, "
            f"{scaled['gpu_hours']} GPU-hours, TTFT P99 {scaled['ttft_p99_s'] or math.nan:.2f} s, "
            f"TPOT P99 {(scaled['tpot_p99_s'] or math.nan) * 1e3:.1f} ms, "
            f"meets SLO: {'yes' if scaled['meets_slo'] else 'no'}"
        )
