"""PURE: where an autoscaled run missed the SLO, minute by minute, and why.

One tokenscale replay of a setup, read per minute of arrivals: the requests that arrived,
those that missed the SLO (TTFT or TPOT; rejected and unfinished ones count as missed), the
ready replicas (fewest and most over the minute's decisions), the replicas decided at the
minute's last decision, the verified oracle's replicas for the minute (``Setup.oracle_schedule``:
the per-minute need replayed with no cold start and repaired until each minute meets
``spec.scaling.targetAttainment``), and the decisions that moved the count (cause, signals).

Every minute whose arrivals met the SLO less than the target is classified:

- **unannounced** (class a): the ready fleet carried at least what the load known one cold
  start earlier needed — the most the oracle gave any of the ``ANNOUNCE_WINDOW_MIN`` minutes
  that ended ``L = ⌈cold start ÷ 60 s⌉`` minutes or more before this one began (load a
  decision at that minute's end could have answered with a replica ready in time) — and the
  minute needed more than that: no load announced the burst within one cold start;
- **late** (class b): fewer replicas were ready than that announced need, and the load held
  (no minute between the announcing one and this one fell below ``RECURRENCE_DIP`` of this
  minute's arrivals): a decision that the load seen a cold start earlier should have made (a
  scale-up too late or a scale-down too early);
- **recurrent** (class b, memory's case): as late, but the load fell away in between and came
  back — the announcement is an earlier burst of the same size; only a memory of bursts
  (``spec.scaling.burstMemorySeconds``) or a standing fleet holds replicas for it;
- **with the need ready**: the ready fleet had at least the oracle's replicas for the minute;
  the misses are a backlog when some minute within one cold start before had fewer ready
  than its need (missed or not): the minute then takes that one's class, ``carried from``
  it; else it stays ``need ready`` (the misses come from elsewhere).

The rule is the issue's "a burst that nothing announced within one cold start", made exact
with the oracle's per-minute need; the timeline printed beside it is what a reader checks it
against.
"""

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tokenscale.scaling.decision import Decision, Signal
from tokenscale.scaling.snapshot import Snapshot
from tokenscale.simulation.policies import TokenscalePolicy
from tokenscale.simulation.recorder import Outcome
from tokenscale.simulation.result import SimResult
from tokenscale.simulation.run import Setup, _replay
from tokenscale.simulation.summary import meets
from tokenscale.simulation.trace import TraceRequest

MINUTE_S = 60.0
ANNOUNCE_WINDOW_MIN = 10
"""How many minutes of load, ending one cold start before a missed minute begins, count as
announced: ten, the memory of bursts' window the dev suite measured (600 s), so a burst that
recurs within it is ``recurrent``, not ``unannounced``."""
RECURRENCE_DIP = 0.75
"""A minute below this share of a missed minute's arrivals between it and the minute that
announced its need: the load went away and came back (recurrent, not late)."""

MissClass = Literal["unannounced", "late", "recurrent", "need ready"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Move(_Frozen):
    """One decision that changed the decided replicas."""

    t_s: float
    from_replicas: int
    to_replicas: int
    cause: str
    why: str
    signals: str = Field(description="Each signal: name=value (level) → its replicas")


class MinuteRow(_Frozen):
    minute: int
    arrivals: int
    missed: int
    ready_min: int
    ready_max: int
    decided: int = Field(description="Replicas decided at the minute's last decision")
    oracle: int = Field(description="The verified oracle's replicas for this minute")
    announced: int = Field(
        description="The most the oracle gave any minute of the window ending one cold start "
        "before this one (0 where the window precedes the trace)"
    )
    announced_at: int | None = Field(
        default=None, description="The latest minute of that window with that need"
    )
    cause: str = Field(description="The minute's last decision's cause")
    moves: list[Move] = Field(default_factory=list)
    miss_class: MissClass | None = Field(
        default=None, description="None: the minute met the target"
    )
    carried_from: int | None = Field(
        default=None, description="need ready: the missed minute before whose class it takes"
    )

    @property
    def attainment(self) -> float:
        return 1.0 - self.missed / self.arrivals if self.arrivals else 1.0


class MissTrace(_Frozen):
    shape: str
    cold_start_s: float
    target_attainment: float
    result: SimResult
    rows: list[MinuteRow]

    @property
    def missed_rows(self) -> list[MinuteRow]:
        return [r for r in self.rows if r.miss_class is not None]

    def missed_by_class(self) -> dict[MissClass, int]:
        """Requests missed in the target-missing minutes, by the minute's class (a ``need
        ready`` minute carried from a missed one counts in that one's class)."""
        out: dict[MissClass, int] = {"unannounced": 0, "late": 0, "recurrent": 0, "need ready": 0}
        for r in self.missed_rows:
            assert r.miss_class is not None
            out[r.miss_class] += r.missed
        return out


class _Recording(TokenscalePolicy):
    """tokenscale, keeping every decision with the moment it fell and the count before it."""

    def __init__(self, inner: TokenscalePolicy) -> None:
        self.__dict__.update(inner.__dict__)
        self.decisions: list[tuple[float, int, int, Decision | None]] = []

    def decide(self, now: float, snap: Snapshot | None, current: int) -> int:
        before = self.state.decided_replicas if self.state.decided_replicas is not None else current
        after = super().decide(now, snap, current)
        self.decisions.append((now, before, after, self.last))
        return after


def trace_misses(setup: Setup, shape: str = "") -> MissTrace:
    """Replay tokenscale on ``setup`` (its cold start; the oracle verified as the setup was
    built: ``oracle_repair_rounds`` > 0 gives the SLO-meeting one) and read it per minute."""
    inner = setup.policy("tokenscale")
    assert isinstance(inner, TokenscalePolicy)
    policy = _Recording(inner)
    outcomes: list[Outcome] = []
    timeline_setup = setup.with_options(setup.opts.model_copy(update={"timeline": True}))
    result = _replay(
        timeline_setup,
        "tokenscale",
        policy,
        setup.initial_replicas("tokenscale"),
        setup.opts.cold_start_s,
        None,
        outcomes_out=outcomes,
    )
    minutes = max(1, math.ceil(setup.trace.duration_s / MINUTE_S))
    arrivals = _per_minute_counts(setup.trace.requests, minutes)
    met = [0] * minutes
    for o in outcomes:
        met[_minute(o.arrival_s, minutes)] += meets(o, setup.spec.slo)
    schedule = setup.oracle_schedule
    rows: list[MinuteRow] = []
    points = result.timeline
    for m in range(minutes):
        start, end = m * MINUTE_S, (m + 1) * MINUTE_S
        inside = [p for p in points if start < p.t_s <= end] or [p for p in points if p.t_s <= end][
            -1:
        ]
        ready = [p.replicas_ready for p in inside] or [0]
        decided = inside[-1].replicas_target if inside else setup.initial_replicas("tokenscale")
        moves = [
            _move(t, a, b, d)
            for t, a, b, d in policy.decisions
            if start < t <= end and a != b and d is not None
        ]
        last = next((d for t, _, _, d in reversed(policy.decisions) if t <= end and d), None)
        rows.append(
            MinuteRow(
                minute=m,
                arrivals=arrivals[m],
                missed=arrivals[m] - met[m],
                ready_min=min(ready),
                ready_max=max(ready),
                decided=decided,
                oracle=_at(schedule, m),
                announced=0,
                cause=str(last.cause) if last is not None else "",
                moves=moves,
            )
        )
    return classified(
        MissTrace(
            shape=shape,
            cold_start_s=setup.opts.cold_start_s,
            target_attainment=setup.target,
            result=result.model_copy(update={"timeline": []}),
            rows=rows,
        )
    )


def classified(trace: MissTrace) -> MissTrace:
    """``trace`` with every minute's announced need and every missed minute's class worked
    out from its rows (the oracle's per-minute need, arrivals, ready) by this module's rule
    (so a stored trace can be read again under it)."""
    lag = math.ceil(trace.cold_start_s / MINUTE_S - 1e-9)
    rows = []
    for r in trace.rows:
        m = r.minute
        # the minutes that ended one cold start or more before this one began
        window = range(max(0, m - lag - ANNOUNCE_WINDOW_MIN), max(0, m - lag))
        announced = max((trace.rows[j].oracle for j in window), default=0)
        at = max((j for j in window if trace.rows[j].oracle == announced), default=None)
        rows.append(
            r.model_copy(
                update={
                    "announced": announced,
                    "announced_at": at,
                    "miss_class": None,
                    "carried_from": None,
                }
            )
        )
    return trace.model_copy(update={"rows": _classify(rows, trace.target_attainment, max(1, lag))})


def _classify(rows: list[MinuteRow], target: float, lookback_min: int = 3) -> list[MinuteRow]:
    """``rows`` are every minute from 0, in order (``rows[m].minute == m``). A missed minute
    with the oracle's need ready takes the class of the latest minute within ``lookback_min``
    (one cold start) before it that had fewer replicas ready than the oracle's need — its
    backlog, missed or not — and is ``need ready`` only when there is none."""
    out: list[MinuteRow] = []
    for r in rows:
        if r.arrivals == 0 or r.missed <= (1.0 - target) * r.arrivals + 1e-9:
            out.append(r)
            continue
        carried: int | None = None
        cls: MissClass
        if r.ready_min < r.oracle:
            cls = _short_class(r, rows)
        else:
            cls = "need ready"
            short = [
                j
                for j in range(max(0, r.minute - lookback_min), r.minute)
                if rows[j].ready_min < rows[j].oracle
            ]
            if short:
                j = short[-1]
                source = out[j]
                cls = source.miss_class or _short_class(rows[j], rows)
                carried = source.carried_from if source.carried_from is not None else j
        out.append(r.model_copy(update={"miss_class": cls, "carried_from": carried}))
    return out


def _short_class(r: MinuteRow, rows: list[MinuteRow]) -> MissClass:
    """A minute with fewer replicas ready than the oracle's need: unannounced, late or
    recurrent (the module docstring)."""
    if r.ready_min >= r.announced:
        return "unannounced"
    since = r.announced_at if r.announced_at is not None else r.minute
    between = rows[since + 1 : r.minute]
    dipped = any(b.arrivals < RECURRENCE_DIP * r.arrivals for b in between)
    return "recurrent" if dipped else "late"


def _announced(r: MinuteRow) -> str:
    return f"{r.announced}" if r.announced_at is None else f"{r.announced}@{r.announced_at}"


def _at(schedule: Sequence[int], m: int) -> int:
    return schedule[min(m, len(schedule) - 1)] if schedule else 0


def _minute(t: float, minutes: int) -> int:
    return min(minutes - 1, max(0, int(t // MINUTE_S)))


def _per_minute_counts(requests: Sequence[TraceRequest], minutes: int) -> list[int]:
    out = [0] * minutes
    for r in requests:
        out[_minute(r.arrival_s, minutes)] += 1
    return out


def _move(t: float, before: int, after: int, d: Decision) -> Move:
    return Move(
        t_s=t,
        from_replicas=before,
        to_replicas=after,
        cause=str(d.cause),
        why=d.why,
        signals="; ".join(_signal(s) for s in d.signals),
    )


def _signal(s: Signal) -> str:
    value = "–" if s.value is None else f"{s.value:.3g}"
    return f"{s.name}={value} ({s.level}) → {s.replicas}"


def timeline_text(trace: MissTrace, around_min: int = 3) -> str:
    """The minutes around every missed one: one line per minute, each move below it, each
    missed minute with its class."""
    keep: set[int] = set()
    for r in trace.missed_rows:
        keep.update(range(r.minute - around_min, r.minute + around_min + 1))
    lines = [
        f"{'min':>4} {'arrivals':>8} {'missed':>6} {'ready':>7} {'decided':>7} "
        f"{'oracle':>6} {'announced':>9}  cause / class (announced: the oracle's most in the "
        f"{ANNOUNCE_WINDOW_MIN} min that ended one cold start before, @ its minute)"
    ]
    gap = False
    for r in trace.rows:
        if r.minute not in keep:
            gap = True
            continue
        if gap and len(lines) > 1:
            lines.append("   …")
        gap = False
        ready = f"{r.ready_min}" if r.ready_min == r.ready_max else f"{r.ready_min}–{r.ready_max}"
        tag = ""
        if r.miss_class is not None:
            tag = f"  MISS {r.attainment * 100:.1f} %: {r.miss_class}"
            if r.carried_from is not None:
                tag += f" (backlog carried from minute {r.carried_from})"
        lines.append(
            f"{r.minute:>4} {r.arrivals:>8} {r.missed:>6} {ready:>7} {r.decided:>7} "
            f"{r.oracle:>6} {_announced(r):>9}  {r.cause}{tag}"
        )
        for mv in r.moves:
            lines.append(
                f"       t={mv.t_s:.0f} s {mv.from_replicas}→{mv.to_replicas} {mv.cause}: "
                f"{mv.why} [{mv.signals}]"
            )
    return "\n".join(lines)
