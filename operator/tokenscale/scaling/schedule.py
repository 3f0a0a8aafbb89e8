"""PURE: ``spec.scaling.schedule`` — the bounds in force at a moment (time is an argument).

A window is open at ``now`` when its cron expression matched a minute in
``(now − durationSeconds, now]`` (UTC, seconds since the epoch). While one is open its
``minReplicas``/``maxReplicas`` (each, where set) replace the spec's; with several open the
first in list order wins. Outside every window the spec's own bounds hold.
"""

import math
from dataclasses import dataclass

from tokenscale.api.cron import MINUTES_PER_DAY, parse_cron
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.scaling import ScheduleWindow


@dataclass(frozen=True)
class OpenWindow:
    """The window in force, where it is in the list, and when it opened (epoch seconds)."""

    index: int
    window: ScheduleWindow
    opened_at_s: float

    @property
    def label(self) -> str:
        return self.window.name or f"schedule[{self.index}] {self.window.cron!r}"


def opened_at(window: ScheduleWindow, now_s: float) -> float | None:
    """The latest minute in ``(now − duration, now]`` the window's cron matches (epoch
    seconds), or None: the window is closed at ``now``."""
    cron = parse_cron(window.cron)
    minute = math.floor(now_s / 60.0)
    earliest = now_s - window.duration_seconds
    while minute * 60.0 > earliest:
        in_day = minute % MINUTES_PER_DAY
        if not cron.day_matches(minute // MINUTES_PER_DAY):
            minute -= in_day + 1  # on to the last minute of the day before
        elif in_day // 60 not in cron.hours:
            minute -= in_day % 60 + 1  # on to the last minute of the hour before
        elif in_day % 60 in cron.minutes:
            return minute * 60.0
        else:
            minute -= 1
    return None


def open_window(spec: InferenceServiceSpec, now_s: float) -> OpenWindow | None:
    """The first window in ``spec.scaling.schedule`` open at ``now_s``, if any."""
    for i, w in enumerate(spec.scaling.schedule):
        at = opened_at(w, now_s)
        if at is not None:
            return OpenWindow(i, w, at)
    return None


def scheduled_spec(spec: InferenceServiceSpec, now_s: float) -> InferenceServiceSpec:
    """``spec`` with the bounds in force at ``now_s``: the open window's where it sets them,
    else the spec's own (the same object when no window is open)."""
    found = open_window(spec, now_s)
    if found is None:
        return spec
    s, w = spec.scaling, found.window
    lo = s.min_replicas if w.min_replicas is None else w.min_replicas
    hi = s.max_replicas if w.max_replicas is None else w.max_replicas
    if (lo, hi) == (s.min_replicas, s.max_replicas):
        return spec
    scaling = s.model_copy(update={"min_replicas": lo, "max_replicas": hi})
    return spec.model_copy(update={"scaling": scaling})


def widest_spec(spec: InferenceServiceSpec) -> InferenceServiceSpec:
    """``spec`` with bounds covering the spec's and every window's: a stored count within them
    is one some window allowed (what judging the status memory needs, whatever the time)."""
    s = spec.scaling
    if not s.schedule:
        return spec
    lo = min([s.min_replicas] + [w.min_replicas for w in s.schedule if w.min_replicas is not None])
    hi = max([s.max_replicas] + [w.max_replicas for w in s.schedule if w.max_replicas is not None])
    scaling = s.model_copy(update={"min_replicas": lo, "max_replicas": hi})
    return spec.model_copy(update={"scaling": scaling})
