"""PURE: ``spec.scaling.schedule`` against a plan — the replicas each window keeps, where a
window's ``maxReplicas`` cuts the need, and the GPU-hours of an average day with the windows.

A window's bounds apply to the plan's need (``replicas.with_redundancy``) as the spec's own
bounds do: ``min(max(need, minReplicas), maxReplicas)``, a bound the window leaves unset being
the spec's (``scaling/schedule.py``: :func:`~tokenscale.scaling.schedule.scheduled_spec`).
The day is the average of one week, minute by minute (the first window open at a minute wins,
as in :func:`~tokenscale.scaling.schedule.open_window`): the week of Monday 5 January 1970, UTC.
Windows that repeat by the day or the week (hours, days of the week) cost the same in every
week; one restricted to days of a month is counted as it falls in that week.
"""

import math

from pydantic import BaseModel, ConfigDict, Field

from tokenscale.api.cron import MINUTES_PER_DAY, parse_cron
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.scaling import ScheduleWindow
from tokenscale.planning.formulas import counted
from tokenscale.planning.result import Plan

#: The week costed: Monday 5 January 1970, 00:00 UTC, for seven days (in epoch minutes).
WEEK_START_MIN = 4 * MINUTES_PER_DAY
WEEK_MIN = 7 * MINUTES_PER_DAY
BASIS = "an average day of the week from Monday 5 January 1970, UTC, minute by minute"


class WindowEffect(BaseModel):
    """One window: its bounds, the replicas it keeps at the plan's need, and its share of the
    week (the minutes it is the window in force)."""

    model_config = ConfigDict(frozen=True)

    label: str
    cron: str
    duration_seconds: int
    min_replicas: int
    max_replicas: int
    replicas: int = Field(description="The plan's need within this window's bounds")
    cuts_need: bool = Field(description="maxReplicas below the need: the SLOs are missed")
    hours_per_week: float = Field(description="Hours a week it is the window in force")


class ScheduleDay(BaseModel):
    """The windows against one plan, and what a day with them costs."""

    model_config = ConfigDict(frozen=True)

    need: int = Field(description="Replicas the plan needs (after redundancy, before bounds)")
    replicas_outside: int = Field(description="Replicas outside every window (the spec's bounds)")
    gpus_per_replica: int
    windows: list[WindowEffect]
    gpu_hours_per_day: float
    gpu_hours_per_day_without: float = Field(description="At replicas_outside all day")
    cost_per_day: float | None
    cost_per_day_without: float | None
    currency: str
    warnings: list[str]
    basis: str = BASIS


def _within(need: int, lo: int, hi: int, pin: int | None) -> int:
    return pin if pin is not None else min(max(need, lo), hi)


def _owners(windows: list[ScheduleWindow]) -> list[int]:
    """For each minute of the week, the index of the window in force there (-1: none)."""
    owner = [-1] * WEEK_MIN
    for index, w in enumerate(windows):
        cron = parse_cron(w.cron)
        span = math.ceil(w.duration_seconds / 60.0)
        for opened in range(WEEK_START_MIN - span + 1, WEEK_START_MIN + WEEK_MIN):
            if not cron.matches(opened):
                continue
            first = max(opened - WEEK_START_MIN, 0)
            last = min(opened - WEEK_START_MIN + span, WEEK_MIN)
            for t in range(first, last):
                if owner[t] < 0:
                    owner[t] = index
    return owner


def _hours(minutes: float) -> str:
    """``8 h``, ``1.5 h``, ``56 h``."""
    whole = minutes >= 600 or abs(minutes / 60.0 - round(minutes / 60.0)) < 1e-9
    return f"{minutes / 60.0:,.0f} h" if whole else f"{minutes / 60.0:,.1f} h"


def schedule_day(spec: InferenceServiceSpec, plan: Plan) -> ScheduleDay | None:
    """The schedule's windows against ``plan``; None without windows or when the plan cannot
    serve (no need to bound)."""
    s = spec.scaling
    if not s.schedule or plan.replicas is None:
        return None
    need = plan.replicas.with_redundancy
    outside = _within(need, s.min_replicas, s.max_replicas, s.replicas)
    owner = _owners(list(s.schedule))
    effects: list[WindowEffect] = []
    warnings: list[str] = []
    for index, w in enumerate(s.schedule):
        lo = s.min_replicas if w.min_replicas is None else w.min_replicas
        hi = s.max_replicas if w.max_replicas is None else w.max_replicas
        effect = WindowEffect(
            label=w.name or f"schedule[{index}]",
            cron=w.cron,
            duration_seconds=w.duration_seconds,
            min_replicas=lo,
            max_replicas=hi,
            replicas=_within(need, lo, hi, s.replicas),
            cuts_need=s.replicas is None and hi < need,
            hours_per_week=owner.count(index) / 60.0,
        )
        effects.append(effect)
        if effect.cuts_need:
            warnings.append(
                f"spec.scaling.schedule[{index}] ({effect.label}, {w.cron!r} for "
                f"{_hours(w.duration_seconds / 60.0)}): maxReplicas {hi} is below the "
                f"{counted(need, 'replica')} the plan needs; while it is open the fleet carries "
                f"{hi / need:.0%} of the design load and the SLOs will be missed"
            )
    replica_minutes = sum(outside if i < 0 else effects[i].replicas for i in owner)
    gpus = plan.gpus_per_replica
    per_day = replica_minutes * gpus / 60.0 / 7.0
    without = outside * gpus * 24.0
    price = (
        plan.cost_per_hour / plan.gpus_total
        if plan.cost_per_hour is not None and plan.gpus_total
        else None
    )
    return ScheduleDay(
        need=need,
        replicas_outside=outside,
        gpus_per_replica=gpus,
        windows=effects,
        gpu_hours_per_day=per_day,
        gpu_hours_per_day_without=without,
        cost_per_day=None if price is None else per_day * price,
        cost_per_day_without=None if price is None else without * price,
        currency=plan.currency,
        warnings=warnings,
    )


def window_line(w: WindowEffect, need: int, label: bool = True) -> str:
    """``night ('0 22 * * *', 8 h): 3 replicas (bounds 2–3; cuts the need of 18) · 56 h a
    week`` (without ``label``: from the cron on)."""
    bounds = f"bounds {w.min_replicas}–{w.max_replicas}"
    if w.cuts_need:
        bounds += f"; cuts the need of {need}"
    elif w.replicas > need:
        bounds += f"; raised from the need of {need}"
    when = f"{w.cron!r}, {_hours(w.duration_seconds / 60.0)}"
    kept = f"{counted(w.replicas, 'replica')} ({bounds}) · {_hours(w.hours_per_week * 60.0)} a week"
    return f"{w.label} ({when}): {kept}" if label else f"{when}: {kept}"


def day_line(d: ScheduleDay) -> str:
    """``a day with the windows: 1,234 GPU-h (432 without) · 4,320.00 USD (1,512.00 without)``."""
    text = (
        f"a day with the windows: {d.gpu_hours_per_day:,.0f} GPU-h "
        f"({d.gpu_hours_per_day_without:,.0f} without)"
    )
    if d.cost_per_day is not None and d.cost_per_day_without is not None:
        text += f" · {d.cost_per_day:,.2f} {d.currency} ({d.cost_per_day_without:,.2f} without)"
    return text
