"""Live vs simulated: the playground's closed loop and ``tokenscale simulate`` on one input.

One spec, one trace slice, one cold start, one seed. The live side is ``tokenscale playground
--headless --json`` (a real API server, real Prometheus scraping the twins every 5 modelled seconds,
the real ``tokenscale run`` with its engine on the playground's modelled clock) run as a child
process; the simulated side is the simulator's ``tokenscale`` policy (``simulation.simulate``,
what ``tokenscale simulate`` runs) with the timing the playground gives the operator, in
modelled seconds: a scrape every ``scrape_interval_wall_s(speed) × speed`` s (5 s from ×5 to
×20), a decision every
``max(1, 15 / speed) × speed`` s (the operator's ``--interval`` has a 1 s wall floor), the first
one at the live operator's phase (its first decision after the load's start, from the
playground's ``decisions``: the resync loop's phase against the trace is arbitrary live), the
spec as applied (the tensor-parallel size the plan chose).

Reported: the share of modelled minutes in which the desired replicas agree (read at each
minute's end, ``simulation/minutes.py``; live, the last decision made on an observation at or
before it), GPU-hours over the load's span (the playground's ``gpu_hours_during_load``; the
simulator counts the trace's span) and SLO attainment, each side's figure and the minutes that
disagree. Targets (issue 19 §2): ≥ 90 % of minutes, GPU-hours within 10 %, attainment within
one point. Reported, not asserted. ``--workdir`` keeps the slice, the playground's summary and
``decisions.json`` (each live decision with the engine's memory) and ``playground.log`` (its
output).

``--shape pd`` compares a prefill/decode service pool by pool (default spec: the playground's
``--pd`` example, ``llama-3.1-8b-l4-pd.yaml``): the live side is the same playground run, its
per-role decisions and minutes (the summary's ``roles``); the simulated side is the per-role
replay the operator's policy scales (``simulation/disaggregated_scaling.replay_scaled``, what
``tokenscale simulate`` runs on a P/D spec) with the same timing and the live first decision's
phase. Reported per role: the minutes whose desired replicas agree, and both roles at once;
GPU-hours and attainment are the fleet's.

    python benchmarks/live_vs_sim.py [--speed 5] [--minutes 15] [--start-min 0]
        [--rate-scale 0.2] [--cold-start 60] [--seed 0] [--spec FILE] [--json OUT]
        [--workdir DIR] [--shape one|pd]
"""

import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tokenscale.data import AZURE_CONVERSATION, bundled_trace
from tokenscale.playground.prometheus import scrape_interval_wall_s
from tokenscale.playground.service import PD_SPEC, default_spec_path, load_service
from tokenscale.simulation import SimOptions, SimResult, Trace, parse_trace, scale_trace
from tokenscale.simulation.disaggregated import engines
from tokenscale.simulation.disaggregated_scaling import replay_scaled
from tokenscale.simulation.minutes import (
    MinutePoint,
    agreement,
    disagreements,
    per_minute,
    pool_per_minute,
)
from tokenscale.simulation.run import Setup, simulate
from tokenscale.simulation.trace import TraceRequest

ROOT = Path(__file__).resolve().parents[1]
INTERVAL_S = 15.0
"""The operator's resync interval in modelled seconds, before its 1 s wall floor."""


@dataclass(frozen=True)
class Side:
    slo_attainment: float
    gpu_hours: float
    scale_events: int
    replicas_max: int
    minutes: list[MinutePoint]
    engine_slo_attainment: float | None = None
    """Live only: by the twins' modelled latencies (the client's are wall time × speed)."""


@dataclass(frozen=True)
class Comparison:
    speed: float
    minutes: int
    cold_start_s: float
    seed: int
    requests: int
    live: Side
    sim: Side
    agreement: float
    gpu_hours_ratio: float
    attainment_gap_points: float
    disagree: list[tuple[int, int, int]]
    """``(minute, live desired, simulated desired)``."""
    live_wall_s: float
    live_decisions: list[tuple[float, int, str]]
    """The operator's decisions: (modelled observation time, replicas, reason)."""
    sim_decisions: list[tuple[float, int, str]]
    """The simulator's decisions, the same way."""
    skipped: list[float] = field(default_factory=list)
    """Live decisions that did not happen: each missing resync start (modelled time), where
    a cycle overran its period (the loop skips the starts it missed)."""
    starts: list[tuple[float, float, float]] = field(default_factory=list)
    """Each live scale-up pod: (its asking observation, Ready − observation − cold start,
    first scrape − Ready), modelled seconds."""
    arrival_late_s: dict[str, float] | None = None
    """How late the twins received the requests against the trace (modelled seconds: p50,
    p90, p99, max; the playground's ``arrival_late_s``)."""
    divergence: "Divergence | None" = None
    """The first decision at which the two sides ask for different replicas."""
    roles: "dict[str, RoleAgreement] | None" = None
    """``--shape pd``: each role's minutes; ``agreement`` is then both roles at once."""

    def verdicts(self) -> list[tuple[str, bool]]:
        return [
            ("desired replicas agree in ≥ 90 % of minutes", self.agreement >= 0.9),
            ("GPU-hours within 10 %", abs(self.gpu_hours_ratio - 1.0) <= 0.1),
            ("attainment within one point", abs(self.attainment_gap_points) <= 1.0),
        ]


@dataclass(frozen=True)
class Divergence:
    """The first observation at which the live and the simulated decisions differ, each side's
    reason and signals (name → (value, level)) there."""

    t_s: float
    live_replicas: int
    sim_replicas: int
    live_reason: str
    sim_reason: str
    live_signals: dict[str, tuple[float | None, str]]
    sim_signals: dict[str, tuple[float | None, str]]


def first_divergence(
    live_decisions: Sequence[dict[str, Any]],
    sim_decisions: Sequence[tuple[float, int, str]],
    interval_s: float,
) -> tuple[dict[str, Any], tuple[float, int, str]] | None:
    """The first simulated decision whose live counterpart (the live decision within half an
    interval of it) asks for other replicas; None: none does."""
    live = [d for d in live_decisions if d["t_s"] > 0]
    for t, replicas, reason in sim_decisions:
        near = [d for d in live if abs(d["t_s"] - t) <= interval_s / 2]
        if near and near[0]["replicas"] != replicas:
            return near[0], (t, replicas, reason)
    return None


def trace_slice(
    source: Trace, start_s: float, duration_s: float, rate_scale: float, seed: int
) -> Trace:
    """``[start_s, start_s + duration_s)`` of ``source`` at ``rate_scale``, re-based to 0 s."""
    scaled = scale_trace(source, rate_scale=rate_scale, seed=seed)
    rows = tuple(
        TraceRequest(r.arrival_s - start_s, r.input_tokens, r.output_tokens, r.prefix_blocks)
        for r in scaled.requests
        if start_s <= r.arrival_s < start_s + duration_s
    )
    if not rows:
        raise SystemExit(f"no request in [{start_s:g}, {start_s + duration_s:g}) s of the trace")
    return Trace(rows, f"{source.source}[{start_s:g}s+{duration_s:g}s]", source.block_tokens)


def as_jsonl(trace: Trace) -> str:
    """The slice as Mooncake JSONL (millisecond arrivals): both sides parse this same file."""
    return "".join(
        json.dumps(
            {
                "timestamp": round(r.arrival_s * 1000.0, 3),
                "input_length": r.input_tokens,
                "output_length": r.output_tokens,
                "hash_ids": list(r.prefix_blocks),
            }
        )
        + "\n"
        for r in trace.requests
    )


def decision_interval_s(speed: float) -> float:
    """The operator's interval in modelled seconds (its ``--interval`` has a 1 s wall floor)."""
    return max(1.0, INTERVAL_S / speed) * speed


def skipped_starts(times: Sequence[float], interval_s: float) -> list[float]:
    """The resync starts missing between consecutive decisions ``interval_s`` apart."""
    out: list[float] = []
    for a, b in itertools.pairwise(times):
        missing = round((b - a) / interval_s) - 1
        out += [a + k * interval_s for k in range(1, missing + 1)]
    return out


def phase_of(decisions: Sequence[float], interval_s: float) -> float | None:
    """When the live operator's first decision after the load's start fell, within one
    interval (None: it made none)."""
    after = [t for t in decisions if t > 1e-3]
    if not after:
        return None
    phase = min(after) % interval_s
    return phase if phase > 1e-3 else interval_s


def _options(
    speed: float,
    cold_start_s: float,
    seed: int,
    first_decision_s: float | None,
) -> SimOptions:
    """The simulator's options with the playground's timing at ``speed`` (module docstring)."""
    return SimOptions(
        cold_start_s=cold_start_s,
        scrape_interval_s=scrape_interval_wall_s(speed) * speed,
        decision_interval_s=decision_interval_s(speed),
        first_decision_s=first_decision_s,
        seed=seed,
        timeline=True,
    )


def simulated(
    spec_text: str,
    trace: Trace,
    speed: float,
    cold_start_s: float,
    seed: int,
    first_decision_s: float | None = None,
) -> tuple[Side, SimResult]:
    """The simulator's tokenscale run with the playground's timing (module docstring)."""
    service = load_service(spec_text, "spec")
    opts = _options(speed, cold_start_s, seed, first_decision_s)
    setup = Setup(service.spec, trace, opts, service.name)
    r = simulate(setup, "tokenscale")
    side = Side(
        r.slo_attainment,
        r.gpu_hours,
        r.scale_events,
        r.replicas_max,
        per_minute(r.timeline, trace.duration_s),
    )
    return side, r


def live(
    spec: Path, trace_file: Path, speed: float, cold_start_s: float, workdir: Path
) -> tuple[Side, dict[str, Any], float]:
    """``tokenscale playground --headless --json`` on the slice; its summary."""
    out = workdir / "playground.json"
    cmd = [
        sys.executable,
        "-m",
        "tokenscale",
        "playground",
        "--headless",
        "--json",
        str(out),
        "--spec",
        str(spec),
        "--trace",
        str(trace_file),
        "--rate-scale",
        "1",
        "--speed",
        f"{speed:g}",
        "--cold-start",
        f"{cold_start_s:g}",
        "--settle",
        "0",
        "--workdir",
        str(workdir / "playground"),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "operator")}
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    (workdir / "playground.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0 or not out.is_file():
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        raise SystemExit(f"the playground failed (exit {done.returncode})")
    data = json.loads(out.read_text())
    side = Side(
        data["slo_attainment"],
        data["gpu_hours_during_load"],
        data["scale_events"],
        data["replicas_max"],
        [MinutePoint.model_validate(m) for m in data["timeline"]],
        data.get("engine_slo_attainment"),
    )
    (workdir / "decisions.json").write_text(json.dumps(data["decisions"], indent=1) + "\n")
    return side, data, wall


def _slice_and_live(
    spec: Path,
    source: Trace,
    speed: float,
    minutes: float,
    start_min: float,
    rate_scale: float,
    cold_start_s: float,
    seed: int,
    workdir: Path,
) -> tuple[Trace, Side, dict[str, Any], float]:
    """The slice written as JSONL and read back (what both sides replay), and the live run on
    it: (the slice, the live side, the playground's summary, its wall seconds)."""
    trace = trace_slice(source, start_min * 60.0, minutes * 60.0, rate_scale, seed)
    trace_file = workdir / "slice.jsonl"
    trace_file.write_text(as_jsonl(trace))
    same = parse_trace(trace_file.read_text(), source=trace_file.name)
    real, data, wall = live(spec, trace_file, speed, cold_start_s, workdir)
    return same, real, data, wall


def compare(
    spec: Path,
    source: Trace,
    speed: float,
    minutes: float,
    start_min: float,
    rate_scale: float,
    cold_start_s: float,
    seed: int,
    workdir: Path,
) -> Comparison:
    """Both sides on the same slice (module docstring)."""
    same, real, data, wall = _slice_and_live(
        spec, source, speed, minutes, start_min, rate_scale, cold_start_s, seed, workdir
    )
    phase = phase_of([d["t_s"] for d in data["decisions"]], decision_interval_s(speed))
    sim, sim_run = simulated(spec.read_text(), same, speed, cold_start_s, seed, phase)
    sim_decisions = [(p.t_s, p.replicas_target, p.reason) for p in sim_run.timeline]
    divergence = _divergence(
        data["decisions"], sim_decisions, spec.read_text(), same, speed, cold_start_s, seed, phase
    )
    ratio = real.gpu_hours / sim.gpu_hours if sim.gpu_hours > 0 else math.inf
    return Comparison(
        speed=speed,
        minutes=len(sim.minutes),
        cold_start_s=cold_start_s,
        seed=seed,
        requests=len(same.requests),
        live=real,
        sim=sim,
        agreement=agreement(real.minutes, sim.minutes),
        gpu_hours_ratio=ratio,
        attainment_gap_points=(real.slo_attainment - sim.slo_attainment) * 100.0,
        disagree=disagreements(real.minutes, sim.minutes),
        live_wall_s=wall,
        live_decisions=[(d["t_s"], d["replicas"], d["reason"]) for d in data["decisions"]],
        sim_decisions=sim_decisions,
        skipped=skipped_starts(
            [d["t_s"] for d in data["decisions"] if d["t_s"] > 0], decision_interval_s(speed)
        ),
        starts=[
            (
                p["observed_s"],
                p["ready_s"] - p["observed_s"] - cold_start_s,
                p["first_scrape_s"] - p["ready_s"],
            )
            for p in data.get("pods", [])
            if p["observed_s"] is not None
            and p["observed_s"] > 0
            and p["ready_s"] is not None
            and p["first_scrape_s"] is not None
        ],
        arrival_late_s=data.get("arrival_late_s"),
        divergence=divergence,
    )


def _divergence(
    live_decisions: Sequence[dict[str, Any]],
    sim_decisions: Sequence[tuple[float, int, str]],
    spec_text: str,
    trace: Trace,
    speed: float,
    cold_start_s: float,
    seed: int,
    phase: float | None,
) -> Divergence | None:
    """:func:`first_divergence` with both sides' signals: the live ones from the status the
    decision wrote, the simulated ones from the same replay explained at that moment."""
    found = first_divergence(live_decisions, sim_decisions, decision_interval_s(speed))
    if found is None:
        return None
    live_d, (t, replicas, reason) = found
    service = load_service(spec_text, "spec")
    opts = _options(speed, cold_start_s, seed, phase)
    explained = simulate(Setup(service.spec, trace, opts, service.name), "tokenscale", None, t)
    sim_signals: dict[str, tuple[float | None, str]] = {}
    if explained.explanation is not None:
        sim_signals = {s.name: (s.value, s.level) for s in explained.explanation.decision.signals}
    return Divergence(
        t_s=t,
        live_replicas=live_d["replicas"],
        sim_replicas=replicas,
        live_reason=live_d["reason"],
        sim_reason=reason,
        live_signals={
            s["name"]: (s.get("value"), s.get("level", "")) for s in live_d.get("signals", [])
        },
        sim_signals=sim_signals,
    )


@dataclass(frozen=True)
class RoleAgreement:
    """One pool of a prefill/decode service, live against simulated, minute by minute."""

    live: list[MinutePoint]
    sim: list[MinutePoint]
    agreement: float
    disagree: list[tuple[int, int, int]]
    live_decisions: int
    sim_decisions: int
    first_apart: tuple[float, int, str, int, str] | None = None
    """The first simulated decision the live one (within half an interval) answered with other
    replicas: (time, live replicas, live reason, simulated replicas, simulated reason)."""


def both_agree(roles: dict[str, RoleAgreement]) -> float:
    """The share of the minutes every role read in which every role's desired replicas agree."""
    shared = set.intersection(
        *({p.minute for p in r.live} & {p.minute for p in r.sim} for r in roles.values())
    )
    if not shared:
        return math.nan
    apart = {m for r in roles.values() for m, _, _ in r.disagree}
    return 1.0 - len(shared & apart) / len(shared)


def compare_pd(
    spec: Path,
    source: Trace,
    speed: float,
    minutes: float,
    start_min: float,
    rate_scale: float,
    cold_start_s: float,
    seed: int,
    workdir: Path,
) -> Comparison:
    """A prefill/decode service, pool by pool (module docstring)."""
    same, real, data, wall = _slice_and_live(
        spec, source, speed, minutes, start_min, rate_scale, cold_start_s, seed, workdir
    )
    live_roles = data.get("roles") or {}
    if not live_roles:
        raise SystemExit(f"{spec}: the playground ran no prefill/decode pools (--shape pd)")
    interval = decision_interval_s(speed)
    times = [d["t_s"] for r in live_roles.values() for d in r.get("decisions", [])]
    phase = phase_of(times, interval)
    service = load_service(spec.read_text(), "spec")
    run = replay_scaled(
        service.spec,
        service.plan,
        engines(service.spec, service.plan),
        same,
        cold_start_s=cold_start_s,
        decision_interval_s=interval,
        scrape_interval_s=scrape_interval_wall_s(speed) * speed,
        first_decision_s=phase,
    )
    roles: dict[str, RoleAgreement] = {}
    for role, entry in sorted(live_roles.items()):
        mine = [
            MinutePoint(
                minute=m["minute"],
                t_s=min((m["minute"] + 1) * 60.0, same.duration_s),
                desired=m["desired"],
                ready=m["ready"],
            )
            for m in entry["timeline"]
            if m["minute"] * 60.0 < same.duration_s
        ]
        theirs = pool_per_minute(run.timeline, role, same.duration_s)
        decided = entry.get("decisions", [])
        sim_decided = [(p.t_s, p.asked[role], p.reasons.get(role, p.reason)) for p in run.timeline]
        found = first_divergence(decided, sim_decided, interval)
        roles[role] = RoleAgreement(
            mine,
            theirs,
            agreement(mine, theirs),
            disagreements(mine, theirs),
            len(decided),
            len(run.timeline),
            None
            if found is None
            else (found[1][0], found[0]["replicas"], found[0]["reason"], found[1][1], found[1][2]),
        )
    sim = Side(
        run.slo_attainment, run.gpu_hours, run.scale_events, sum(run.replicas_max.values()), []
    )
    ratio = real.gpu_hours / sim.gpu_hours if sim.gpu_hours > 0 else math.inf
    return Comparison(
        speed=speed,
        minutes=max(len(r.sim) for r in roles.values()),
        cold_start_s=cold_start_s,
        seed=seed,
        requests=len(same.requests),
        live=real,
        sim=sim,
        agreement=both_agree(roles),
        gpu_hours_ratio=ratio,
        attainment_gap_points=(real.slo_attainment - sim.slo_attainment) * 100.0,
        disagree=[],
        live_wall_s=wall,
        live_decisions=[],
        sim_decisions=[],
        arrival_late_s=data.get("arrival_late_s"),
        roles=roles,
    )


def _role_lines(roles: dict[str, RoleAgreement]) -> list[str]:
    lines = []
    for role, r in roles.items():
        lines.append(
            f"{role}: desired replicas agree in {r.agreement * 100:.0f} % of minutes "
            f"({r.live_decisions} live decisions, {r.sim_decisions} simulated)"
        )
        if r.first_apart is not None:
            t, lr, lwhy, sr, swhy = r.first_apart
            lines.append(
                f"  first divergent decision at {t:.1f} s: live {lr} ({lwhy[:100]}) · "
                f"simulated {sr} ({swhy[:100]})"
            )
    sim_at = {role: {p.minute: p for p in r.sim} for role, r in roles.items()}
    live_at = {role: {p.minute: p for p in r.live} for role, r in roles.items()}
    names = list(roles)
    lines.append(
        "minute: " + " · ".join(f"{n} live desired/ready, simulated desired/ready" for n in names)
    )
    every = sorted({m for n in names for m in (*sim_at[n], *live_at[n])})
    for m in every:
        cells = []
        for n in names:
            a, b = live_at[n].get(m), sim_at[n].get(m)
            left = "–" if a is None else f"{a.desired}/{a.ready}"
            right = "–" if b is None else f"{b.desired}/{b.ready}"
            mark = "" if a is None or b is None or a.desired == b.desired else " ≠"
            cells.append(f"{left:>5} {right:>5}{mark:2}")
        lines.append(f"  {m:3d}: " + " · ".join(cells))
    return lines


def report(c: Comparison) -> str:
    e = c.live.engine_slo_attainment
    engine = "–" if e is None else f"{e * 100:.2f}"
    lines = [
        f"speed ×{c.speed:g} · {c.minutes} modelled minutes · {c.requests} requests · "
        f"cold start {c.cold_start_s:g} s · seed {c.seed} · playground wall {c.live_wall_s:.0f} s",
        "",
        "| | live (playground) | simulated |",
        "|---|---|---|",
        f"| SLO attainment % | {c.live.slo_attainment * 100:.2f} | "
        f"{c.sim.slo_attainment * 100:.2f} |",
        f"| … by the twins' modelled latencies | {engine} | |",
        f"| GPU-hours (load span) | {c.live.gpu_hours:.3f} | {c.sim.gpu_hours:.3f} |",
        f"| scale events | {c.live.scale_events} | {c.sim.scale_events} |",
        f"| replicas max | {c.live.replicas_max} | {c.sim.replicas_max} |",
        "",
        f"desired replicas agree in {c.agreement * 100:.0f} % of minutes"
        + (" (every role at once)" if c.roles is not None else "")
        + "; GPU-hours live ÷ "
        f"simulated {c.gpu_hours_ratio:.3f}; attainment live − simulated "
        f"{c.attainment_gap_points:+.2f} points",
    ]
    lines += [f"  {'MET ' if ok else 'MISS'} {what}" for what, ok in c.verdicts()]
    lines.append(
        f"live resync starts skipped (a cycle overran its period): {len(c.skipped)}"
        + (f", at {', '.join(f'{t:.0f}' for t in c.skipped)} s" if c.skipped else "")
    )
    if c.starts:
        late = sorted(r for _, r, _ in c.starts)
        scrape = sorted(f for _, _, f in c.starts)
        lines.append(
            f"live scale-up pods: {len(c.starts)}; Ready − (observation + cold start) "
            f"{late[0]:.1f}–{late[-1]:.1f} s, first scrape − Ready "
            f"{scrape[0]:.1f}–{scrape[-1]:.1f} s"
        )
    if c.arrival_late_s is not None:
        q = c.arrival_late_s
        lines.append(
            f"twins received the requests late by (modelled s) p50 {q['p50']:.2f}, "
            f"p90 {q['p90']:.2f}, p99 {q['p99']:.2f}, max {q['max']:.2f}"
        )
    if c.roles is not None:
        return "\n".join([*lines, *_role_lines(c.roles)])
    lines += _divergence_lines(c.divergence)
    sim_at = {p.minute: p for p in c.sim.minutes}
    live_at = {p.minute: p for p in c.live.minutes}
    lines.append("minute: live desired/ready · simulated desired/ready")
    for m in sorted(set(sim_at) | set(live_at)):
        a, b = live_at.get(m), sim_at.get(m)
        left = "–" if a is None else f"{a.desired}/{a.ready}"
        right = "–" if b is None else f"{b.desired}/{b.ready}"
        mark = "" if a is None or b is None or a.desired == b.desired else "  ≠"
        lines.append(f"  {m:3d}: {left:>7} · {right:>7}{mark}")
    return "\n".join(lines)


def _divergence_lines(d: Divergence | None) -> list[str]:
    if d is None:
        return ["every live decision matched the simulated one at its observation"]

    def value(v: float | None) -> str:
        return "–" if v is None else f"{v:.4g}"

    lines = [
        f"first divergent decision at {d.t_s:.1f} s: live {d.live_replicas} "
        f"({d.live_reason[:100]}) · simulated {d.sim_replicas} ({d.sim_reason[:100]})"
    ]
    for name in sorted(set(d.live_signals) | set(d.sim_signals)):
        lv, ll = d.live_signals.get(name, (None, "–"))
        sv, sl = d.sim_signals.get(name, (None, "–"))
        mark = "" if ll == sl else "  ≠"
        lines.append(f"  {name}: live {value(lv)} {ll} · simulated {value(sv)} {sl}{mark}")
    return lines


def _plain(value: object) -> object:
    """JSON for what ``asdict`` leaves as objects (the minute readings)."""
    if isinstance(value, MinutePoint):
        return value.model_dump()
    return str(value)


def main(argv: Sequence[str] | None = None) -> Comparison:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", type=Path, help="Default: the playground's example for --shape.")
    ap.add_argument(
        "--shape",
        choices=("one", "pd"),
        default="one",
        help="one: a one-pool service; pd: a prefill/decode service, pool by pool.",
    )
    ap.add_argument("--trace", type=Path, help="Default: the bundled Azure conversation hour.")
    ap.add_argument("--rate-scale", type=float, default=0.2)
    ap.add_argument("--start-min", type=float, default=0.0)
    ap.add_argument("--minutes", type=float, default=15.0)
    ap.add_argument("--speed", type=float, default=5.0)
    ap.add_argument("--cold-start", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, help="Also write the comparison here.")
    ap.add_argument("--workdir", type=Path, help="Keep the slice and the playground's files here.")
    args = ap.parse_args(argv)
    path = args.trace or bundled_trace(AZURE_CONVERSATION)
    source = parse_trace(path.read_text(), source=path.name)
    with tempfile.TemporaryDirectory(prefix="live-vs-sim-") as tmp:
        if args.workdir is not None:
            args.workdir.mkdir(parents=True, exist_ok=True)
        spec = args.spec or default_spec_path(*((PD_SPEC,) if args.shape == "pd" else ()))
        c = (compare_pd if args.shape == "pd" else compare)(
            spec,
            source,
            args.speed,
            args.minutes,
            args.start_min,
            args.rate_scale,
            args.cold_start,
            args.seed,
            args.workdir or Path(tmp),
        )
    print(report(c))
    if args.json is not None:
        args.json.write_text(json.dumps(asdict(c), indent=2, default=_plain) + "\n")
    return c


if __name__ == "__main__":
    main()
