"""``--plot`` PNGs: the simulator's timeline and the load test's throughput/latency curves."""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from tokenscale.api.slo import Slo
from tokenscale.bench import BenchProfile
from tokenscale.planning.result import CurveStep
from tokenscale.simulation import SimResult


def draw_timeline(
    results: list[SimResult], slo: Slo, path: Path, names: Sequence[str] | None = None
) -> None:
    """Arrivals, replicas, queue, KV, TTFT and TPOT per result; each named by its policy, or
    by ``names`` (one per result: a drill's run with and without its faults)."""
    fig, axes = plt.subplots(6, 1, figsize=(12, 15), sharex=True)
    ax_rps, ax_rep, ax_queue, ax_kv, ax_ttft, ax_tpot = axes
    first = results[0].timeline
    minutes = [p.t_s / 60 for p in first]
    ax_rps.plot(minutes, [p.arrival_rps for p in first], color="black", lw=1)
    ax_rps.set_ylabel("arrivals / s")
    ax_rps.set_title(
        f"{results[0].trace} · mismatch {results[0].mismatch:g} · "
        f"cold start {results[0].cold_start_s:g} s"
    )
    for k, r in enumerate(results):
        t = [p.t_s / 60 for p in r.timeline]
        name = r.policy if names is None else names[k]
        label = (
            f"{name}: {r.slo_attainment * 100:.1f} % SLO, {r.gpu_hours:.1f} GPU-h "
            f"({r.gpu_hours_vs_oracle:.2f}× oracle)"
        )
        (line,) = ax_rep.step(t, [p.replicas_ready for p in r.timeline], where="post", label=label)
        ax_rep.step(
            t,
            [p.replicas_target for p in r.timeline],
            where="post",
            ls=":",
            color=line.get_color(),
        )
        _mark_scale_events(ax_rep, r, line.get_color(), annotate=r is results[0])
        ax_queue.plot(t, [p.waiting for p in r.timeline], color=line.get_color(), lw=1)
        ax_kv.plot(t, [p.kv_usage_max for p in r.timeline], color=line.get_color(), lw=1)
        ax_ttft.plot(
            t,
            [p.ttft_p99_s if p.ttft_p99_s is not None else float("nan") for p in r.timeline],
            color=line.get_color(),
            lw=1,
        )
        ax_tpot.plot(
            t,
            [p.tpot_p99_s if p.tpot_p99_s is not None else float("nan") for p in r.timeline],
            color=line.get_color(),
            lw=1,
        )
    ax_rep.set_ylabel("replicas (ready; dotted: asked)")
    ax_rep.legend(loc="upper left", fontsize=8)
    ax_queue.set_ylabel("requests waiting")
    ax_kv.set_ylabel("KV usage (fullest engine)")
    ax_kv.set_ylim(0, 1.05)
    ax_ttft.set_ylabel("TTFT P99 s (Prometheus)")
    if slo.ttft_p99_seconds is not None:
        ax_ttft.axhline(slo.ttft_p99_seconds, color="red", ls="--", lw=1, label="SLO")
        ax_ttft.set_yscale("log")
        ax_ttft.legend(loc="upper left", fontsize=8)
    ax_tpot.set_ylabel("TPOT P99 s (Prometheus)")
    if slo.tpot_p99_seconds is not None:
        ax_tpot.axhline(slo.tpot_p99_seconds, color="red", ls="--", lw=1, label="SLO")
        ax_tpot.set_yscale("log")
        ax_tpot.legend(loc="upper left", fontsize=8)
    ax_tpot.set_xlabel("minutes")
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


MAX_ANNOTATIONS = 14


def _mark_scale_events(ax: Any, r: SimResult, color: str, annotate: bool) -> None:
    """A ▲/▼ at each change of the replicas asked for; the first policy's reasons written."""
    written = 0
    for before, p in zip(r.timeline, r.timeline[1:], strict=False):
        if p.replicas_target == before.replicas_target:
            continue
        up = p.replicas_target > before.replicas_target
        ax.plot(p.t_s / 60, p.replicas_target, marker="^" if up else "v", color=color, ms=6)
        if annotate and written < MAX_ANNOTATIONS:
            written += 1
            why = p.why
            ax.annotate(
                why[:48] + ("…" if len(why) > 48 else ""),
                (p.t_s / 60, p.replicas_target),
                xytext=(4, 8 if up else -12),
                textcoords="offset points",
                fontsize=6,
                color=color,
            )


def draw_bench(
    profile: BenchProfile,
    path: Path,
    predicted: Sequence[tuple[int, CurveStep]] = (),
) -> None:
    """Throughput and P99 latencies against concurrency (the ramp), the knee marked; with
    ``predicted``, the planner's curve dashed beside the measured one."""
    ramp = profile.ramp()
    fig, (ax_tps, ax_lat) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    conc = [s.concurrency or 0 for s in ramp]
    ax_tps.plot(conc, [s.output_tps for s in ramp], marker="o", label="output tok/s")
    if predicted:
        pc = [c for c, _ in predicted]
        ax_tps.plot(pc, [p.output_tps for _, p in predicted], ls="--", label="predicted tok/s")
        ax_lat.plot(
            pc, [p.ttft_p99_seconds for _, p in predicted], ls="--", label="TTFT P99 (plan)"
        )
        ax_lat.plot(
            pc, [p.tpot_p99_seconds for _, p in predicted], ls="--", label="TPOT P99 (plan)"
        )
    ax_tps.set_ylabel("output tokens / s")
    ax_tps.set_title(f"{profile.model} — concurrency ramp")
    for name, values in (
        ("TTFT P99", [s.ttft_p99_seconds for s in ramp]),
        ("TPOT P99", [s.tpot_p99_seconds for s in ramp]),
    ):
        ax_lat.plot(
            conc, [v if v is not None else float("nan") for v in values], marker="o", label=name
        )
    for target, label in (
        (profile.slo_ttft_p99_seconds, "TTFT SLO"),
        (profile.slo_tpot_p99_seconds, "TPOT SLO"),
    ):
        if target is not None:
            ax_lat.axhline(target, ls="--", lw=1, label=label)
    if profile.knee_concurrency is not None:
        for ax in (ax_tps, ax_lat):
            ax.axvline(profile.knee_concurrency, color="grey", ls=":", label="knee")
    ax_lat.set_yscale("log")
    ax_lat.set_ylabel("seconds (P99)")
    ax_lat.set_xlabel("concurrency")
    ax_tps.set_xscale("log", base=2)
    for ax in (ax_tps, ax_lat):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
