"""``tokenscale simulate`` on prefill/decode pools.

By default, on a spec whose plan runs two pools (``spec.serving.disaggregation`` on, or auto
choosing them): what the operator runs — both pools from the planned counts, scaled role by role
by the operator's policy (``simulation/disaggregated_scaling.py``), with each pool's GPU-hours,
attainment and replica timeline.

With ``--architectures``: the smallest static fleet of each architecture (one shared pool, or
prefill and decode pools) that meets the SLO on the trace, whether the planner's
``disaggregation: auto`` picks the same one, and the pools scaled per role as above.
"""

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from rich.console import Console

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.cli.console import stdout_console
from tokenscale.cli.fit import Column, FittedTable
from tokenscale.planning import Plan, plan_service
from tokenscale.scaling.roles import pools
from tokenscale.simulation.disaggregated import ArchitectureRun, Comparison, engines
from tokenscale.simulation.disaggregated_scaling import replay_scaled
from tokenscale.simulation.result import FleetRun, PoolsPoint
from tokenscale.simulation.run import SimulationError
from tokenscale.simulation.trace import Trace


def scaled_pools(
    spec: InferenceServiceSpec,
    trace: Trace,
    mismatch: float,
    name: str,
    cold_start_s: float,
    scrape_interval_s: float,
    decision_interval_s: float,
) -> tuple[FleetRun, int, int] | None:
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


def scaled_data(found: tuple[FleetRun, int, int] | None) -> dict[str, Any] | None:
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
        "prefill_peak": max(run.replicas_max["prefill"], p0),
        "decode_peak": max(run.replicas_max["decode"], d0),
        "requests": run.requests,
        "served": run.served,
        "meets_slo": run.meets_slo,
        "decisions": len(run.timeline),
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
    per_role: tuple[FleetRun, int, int] | None = None,
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


# -- the default replay: what the operator runs ---------------------------------------------------


def two_pool_plan(spec: InferenceServiceSpec, name: str) -> Plan | None:
    """The plan when it runs prefill and decode pools (what the operator renders and scales),
    else None (one pool: the one-pool replay is the operator's)."""
    if not spec.serving.asks_for_roles:
        return None
    plan = plan_service(spec, name)
    return plan if plan.is_disaggregated else None


def per_role_run(
    spec: InferenceServiceSpec,
    plan: Plan,
    trace: Trace,
    mismatch: float,
    cold_start_s: float,
    scrape_interval_s: float,
    decision_interval_s: float,
) -> FleetRun:
    """Both pools from the planned counts, scaled per role by the operator's policy."""
    if not plan.feasible:
        raise SimulationError("; ".join(plan.infeasible_reasons) or "the pools cannot serve")
    return replay_scaled(
        spec,
        plan,
        engines(spec, plan, mismatch),
        trace,
        cold_start_s=cold_start_s,
        decision_interval_s=decision_interval_s,
        scrape_interval_s=scrape_interval_s,
    )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _timeline(run: FleetRun, role: str, planned: int) -> list[list[float]]:
    """``[t_s, replicas]`` at the start and at every decision that changed the role's count."""
    points: list[list[float]] = [[0.0, planned]]
    for c in run.timeline:
        n = c.asked[role]
        if n != points[-1][1]:
            points.append([c.t_s, n])
    return points


def _decision(c: PoolsPoint) -> dict[str, Any]:
    """One per-role decision as ``-o json`` has always carried it."""
    return {
        "at_s": c.t_s,
        **{role: c.asked[role] for role in ("prefill", "decode")},
        **{f"{role}_reason": c.reasons[role] for role in ("prefill", "decode")},
        "coordination": c.reason,
        **{f"{role}_calibration": c.calibration[role] for role in ("prefill", "decode")},
    }


def per_role_data(plan: Plan, run: FleetRun, timeline: bool) -> dict[str, Any]:
    """The JSON shape: the service's figures, then one entry per pool (its GPU-hours, its part
    of the SLO's attainment, its replica timeline); every decision with ``timeline``."""
    _, prefill, decode = pools(plan)
    attained = {p.name: p.attainment for p in run.pools}
    of = {
        "prefill": "requests whose TTFT (the KV hand-off included) met ttftP99Seconds",
        "decode": "requests whose TPOT met tpotP99Seconds (a one-token answer has none)",
    }
    entries = []
    total = 0.0
    for pool in (prefill, decode):
        points = _timeline(run, pool.role, pool.replicas)
        gpu_hours = round(run.gpu_hours_by_pool.get(pool.role, 0.0), 4)
        total += gpu_hours
        entries.append(
            {
                "name": pool.role,
                "role": pool.role,
                "gpu": plan.gpu,
                "gpus_per_replica": pool.gpus_per_replica,
                "planned_replicas": pool.replicas,
                "peak_replicas": max(int(n) for _, n in points),
                "gpu_hours": gpu_hours,
                "slo_attainment": attained[pool.role],
                "slo_attainment_of": of[pool.role],
                "replicas": points,
            }
        )
    data: dict[str, Any] = {
        "shape": "prefill/decode",
        "policy": "tokenscale",
        "requests": run.requests,
        "served": run.served,
        "slo_attainment": run.slo_attainment,
        "meets_slo": run.meets_slo,
        "ttft_p99_s": _finite(run.ttft_p99_s),
        "tpot_p99_s": _finite(run.tpot_p99_s),
        "gpu_hours": round(total, 4),
        "pools": entries,
    }
    if timeline:
        data["decisions"] = [_decision(c) for c in run.timeline]
    return data


def print_per_role(
    plan: Plan,
    run: FleetRun,
    title: str,
    output_json: bool,
    timeline: bool,
    explain: tuple[str, float] | None = None,
) -> None:
    """The pools' table (or JSON); with ``explain`` (as typed, seconds) the decision then."""
    data = per_role_data(plan, run, timeline)
    explained = None if explain is None else decision_at(run, explain[1])
    if output_json:
        if explain is not None:
            data["explanation"] = None if explained is None else _decision(explained)
        print(json.dumps(data, indent=2))
        return
    rows = [
        [
            p["role"],
            f"{p['planned_replicas']} / {p['peak_replicas']} × {p['gpus_per_replica']} GPU",
            f"{p['gpu_hours']:.2f}",
            f"{p['slo_attainment']:.2%}",
            p["slo_attainment_of"],
        ]
        for p in data["pools"]
    ]
    columns = [
        Column("pool"),
        Column("replicas planned / peak", prose=True),
        Column("GPU-hours", "right"),
        Column("attainment", "right"),
        Column("of", prose=True),
    ]
    t = FittedTable(columns, rows, title)
    console = stdout_console()
    console.print(t)
    ttft, tpot = run.ttft_p99_s, run.tpot_p99_s
    console.print(
        f"tokenscale (per role, the operator's policy): {run.served:,} of {run.requests:,} "
        f"served, {run.slo_attainment:.2%} within every SLO, TTFT P99 {ttft:.2f} s, TPOT P99 "
        f"{tpot * 1e3:.1f} ms, {data['gpu_hours']:.2f} GPU-hours, {len(run.timeline)} "
        "decisions; one shared pool against the two: --architectures",
        highlight=False,
    )
    if explain is not None:
        console.print(explain_roles(explained, explain[0]), highlight=False)


def decision_at(run: FleetRun, at_s: float) -> PoolsPoint | None:
    """The per-role decision at or after ``at_s`` (None: the replay ended before)."""
    return next((c for c in run.timeline if c.t_s >= at_s), None)


def explain_roles(c: PoolsPoint | None, clock: str) -> str:
    """One per-role decision, each role's count and reason, as text."""
    if c is None:
        return f"--explain {clock}: no decision at or after that moment (the replay ended)"
    m, s = divmod(round(c.t_s), 60)
    h, m = divmod(m, 60)
    when = f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"
    asked = f"prefill {c.asked['prefill']}, decode {c.asked['decode']} asked"
    return "\n".join(
        [
            f"at {when} ({c.t_s:.0f} s): {asked}",
            *(
                f"  {role}: {c.reasons[role]} (calibration {c.calibration[role]:.3g})"
                for role in ("prefill", "decode")
            ),
            f"  coordination: {c.reason}",
        ]
    )


def draw_roles(run: FleetRun, plan: Plan, path: Path) -> None:
    """Each pool's asked replicas over the replay, as a PNG."""
    import matplotlib  # noqa: PLC0415 (slow to import: only a plot pays for it)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    _, prefill, decode = pools(plan)
    fig, ax = plt.subplots(1, 1, figsize=(12, 4))
    for pool in (prefill, decode):
        points = _timeline(run, pool.role, pool.replicas)
        end = run.timeline[-1].t_s if run.timeline else 0.0
        points.append([max(end, points[-1][0]), points[-1][1]])
        ax.step(
            [t / 60 for t, _ in points],
            [n for _, n in points],
            where="post",
            label=f"{pool.role}: {run.gpu_hours_by_pool.get(pool.role, 0.0):.2f} GPU-h",
        )
    ax.set_ylabel("replicas asked")
    ax.set_xlabel("minutes")
    ax.set_title(f"prefill/decode scaled per role · {run.slo_attainment:.1%} within the SLOs")
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
