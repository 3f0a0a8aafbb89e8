"""A playground run's summary as JSON (``tokenscale playground --json FILE``).

Keys: ``slo_attainment`` (by the client's latencies), ``engine_slo_attainment`` (by the twins'
modelled latencies), ``gpu_hours`` (the whole run, settling included),
``gpu_hours_during_load`` (up to the trace's last arrival, the span ``tokenscale simulate``
counts), ``scale_events``, ``replicas_max``, ``wake_ttft_s`` (per wake from zero replicas, the
TTFT of the first request that found none: the cost of waking), ``decisions`` (each engine
decision: the modelled time of the observation it was made on, since the load's start, the
replicas it asked for, its reason, the engine's memory, the outlook and each signal as the
status wrote them), ``arrival_late_s`` (how late the twins received the requests against the
trace, modelled seconds: median, 90th, 99th percentile and maximum; ``playground/lateness.py``)
and ``timeline``: per modelled minute of the load, the desired and ready replicas at the
minute's end (``simulation/minutes.py``), so the same reading of a simulated run compares
minute by minute. The desired replicas are the last decision made on an observation at or
before the minute's end (as the simulator's timeline has a point per decision); the ready ones
the monitor's last sample. ``pods``: each pod's start (the observation that asked for it, the
Deployment's write, the runner noticing it, Ready, the first scrape; modelled seconds since the
load's start). A prefill/decode service adds ``roles``: each role's most ready replicas
(``replicas_max``), its desired and ready counts per modelled minute (``timeline``: the desired
from the role's last decision observed at or before the minute's end, as for one pool) and its
decisions (``decisions``: the observation's modelled time, the replicas, the reason).
"""

import math
from dataclasses import asdict
from itertools import pairwise
from typing import Any

from tokenscale.playground.faults import FAULT_EVENT
from tokenscale.playground.lateness import lateness_summary
from tokenscale.playground.session import DecisionPoint, PlaygroundResult
from tokenscale.simulation.minutes import MINUTE_S, MinutePoint, per_minute


def gpu_hours_until(r: PlaygroundResult, until_s: float) -> float:
    """GPU-hours held (starting and ready replicas) from the load's start to ``until_s``,
    from the timeline's samples (each sample's count held until the next); a prefill/decode
    service's from each role's samples at its role's GPUs per replica."""
    if r.role_timeline:
        gpu_s = 0.0
        for (t0, _), (t1, frames) in pairwise(r.role_timeline):
            lo, hi = t0, min(t1, until_s)
            if hi > lo:
                held = sum(
                    (f.ready + f.starting) * r.role_gpus.get(role, r.gpus_per_replica)
                    for role, f in frames.items()
                )
                gpu_s += held * (hi - lo)
        return gpu_s / 3600.0
    seconds = 0.0
    for a, b in pairwise(r.timeline):
        lo, hi = a.t_s, min(b.t_s, until_s)
        if hi > lo:
            seconds += (b.replicas_ready + b.replicas_starting) * (hi - lo)
    return seconds * r.gpus_per_replica / 3600.0


def summary_json(r: PlaygroundResult) -> dict[str, Any]:
    """The summary (module docstring); non-finite figures are null."""

    def num(v: float) -> float | None:
        return v if math.isfinite(v) else None

    minutes = with_decisions(
        per_minute(r.timeline, r.load_duration_s), r.decisions, r.load_duration_s
    )
    out = {
        "service": r.service,
        "speed": r.speed,
        "trace": r.trace,
        "duration_s": r.duration_s,
        "load_duration_s": r.load_duration_s,
        "requests": r.sent,
        "completed": r.completed,
        "slo_attainment": r.slo_attainment,
        "engine_slo_attainment": r.engine_slo_attainment,
        "ttft_p50_s": num(r.ttft_p50_s),
        "ttft_p99_s": num(r.ttft_p99_s),
        "tpot_p99_s": num(r.tpot_p99_s),
        "gpu_hours": r.gpu_hours,
        "gpu_hours_during_load": gpu_hours_until(r, r.load_duration_s),
        "scale_events": sum(1 for e in r.events if e.reason != FAULT_EVENT),
        "replicas_max": r.replicas_max,
        "wake_ttft_s": wake_ttfts(r),
        "events": [{"t_s": e.t_s, "message": e.message} for e in r.events],
        "arrival_late_s": lateness_summary(r.arrival_late_s),
        "decisions": [
            {
                "t_s": d.t_s,
                "replicas": d.replicas,
                "reason": d.reason,
                "memory": d.memory,
                "forecast": d.forecast,
                "signals": d.signals,
            }
            for d in r.decisions
        ],
        "timeline": [m.model_dump() for m in minutes],
        "pods": [asdict(p) for p in r.pods],
    }
    if r.role_timeline:
        out["roles"] = role_summary(r)
    return out


def role_summary(r: PlaygroundResult) -> dict[str, Any]:
    """Each role's most ready replicas and, per modelled minute of the load, its desired and
    ready counts at the minute's last sample."""
    roles = sorted({role for _, frames in r.role_timeline for role in frames})
    out: dict[str, Any] = {}
    for role in roles:
        samples = [(t, f[role]) for t, f in r.role_timeline if role in f]
        minutes: dict[int, dict[str, Any]] = {}
        for t, f in samples:
            if 0 <= t <= r.load_duration_s + MINUTE_S:
                minutes[int(t // MINUTE_S)] = {"desired": f.desired, "ready": f.ready}
        decided = r.role_decisions.get(role, [])
        timeline = [
            MinutePoint(minute=m, t_s=min((m + 1) * MINUTE_S, r.load_duration_s), **v)
            for m, v in sorted(minutes.items())
        ]
        out[role] = {
            "replicas_max": max((f.ready for _, f in samples), default=0),
            "timeline": [
                {"minute": p.minute, "desired": p.desired, "ready": p.ready}
                for p in with_decisions(timeline, decided, r.load_duration_s)
            ],
            "decisions": [
                {"t_s": d.t_s, "replicas": d.replicas, "reason": d.reason} for d in decided
            ],
        }
    return out


def with_decisions(
    minutes: list[MinutePoint], decisions: list[DecisionPoint], duration_s: float
) -> list[MinutePoint]:
    """Each minute's desired replicas from the last decision observed at or before its end
    (the sampled value where no decision was seen by then)."""
    out: list[MinutePoint] = []
    for m in minutes:
        end = min((m.minute + 1) * MINUTE_S, duration_s)
        made = [d for d in decisions if d.t_s <= end + 1e-9]
        out.append(m if not made else m.model_copy(update={"desired": made[-1].replicas}))
    return out


def wake_ttfts(r: PlaygroundResult) -> list[float]:
    """For each stretch of the timeline at zero replicas (none desired, ready or starting),
    the TTFT of the first request that arrived in it (a stretch no request arrived in is
    skipped): what waking from zero cost that request."""
    firsts: list[float] = []
    stretch: tuple[float, float] | None = None
    stretches: list[tuple[float, float]] = []
    for a, b in pairwise(r.timeline):
        zero = a.replicas_target == 0 and a.replicas_ready == 0 and a.replicas_starting == 0
        if zero:
            stretch = (stretch[0] if stretch else a.t_s, b.t_s)
        elif stretch is not None:
            stretches.append(stretch)
            stretch = None
    if stretch is not None:
        stretches.append(stretch)
    for lo, hi in stretches:
        inside = sorted(
            (o for o in r.outcomes if lo <= o.arrival_s < hi and o.ttft_s is not None),
            key=lambda o: o.arrival_s,
        )
        if inside and inside[0].ttft_s is not None:
            firsts.append(inside[0].ttft_s)
    return firsts
