"""When a new status is worth a write: something a reader acts on changed.

With a metrics source every tick computes a new status, and most ticks change only the
bookkeeping of the read (``decision.observedAt``, ``live.at``, the engine memory's times) and
figures that wander by a few percent (the calibration, the forecast's horizon, a rate). Writing
each of those is one status PUT per service per tick (67 a second for 1,000 services at a 15 s
interval) that no reader acts on. :func:`news` is the rule; the reconciler keeps a status that
is not news in memory (the engine's memory goes on from it) and writes it with the next one
that is, or after :data:`REFRESH_S`.

The rule, over the two status documents (the one the API server holds and the new one):

- a field that appears or disappears, a count (an integer), a flag (a boolean) or the words
  of a text (a reason, a condition's status or message, a cause, a level) that changed;
- a figure (a float) that moved by more than :data:`RELATIVE` of its larger value and by more
  than :data:`ABSOLUTE`, except in the engine's memory and the forecast's working
  (:data:`WORKINGS`);
- the numbers inside a text are not compared (a message's counts and figures are fields of
  their own, compared above), nor are times written as text (``observedAt``, ``live.at``) or
  the read's own bookkeeping (:data:`READ_TIMES`: the newest sample's age);
- the stored observation is :data:`REFRESH_S` or more older than the new one
  (``decision.observedAt``): status.live and status.decision are never older than that.
"""

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

RELATIVE = 0.1
"""A figure is news when it moves by more than this share of its larger value…"""
ABSOLUTE = 0.01
"""…and by more than this much (a KV usage of 0.01 → 0.015 is not news)."""
WORKINGS = frozenset(
    {"scaling", "forecast", "capacity", "tokens", "tokensPerSecond", "capacityTokens"}
)
"""``status.scaling`` (and each role's): the engine's memory, ``decision.forecast``: the
forecast's working, ``decision.capacity``: the rate a replica carries (its source is text,
compared), and a signal's tokens beside its value (the value itself is compared). A field
of them that appears or disappears is news (a low or pressure streak begins or ends), and so
are their counts and flags (the replicas the forecast asks for, whether the lead time was
measured); their figures are not: the rate smoother's level, trend, variance and last error,
the calibrations, the peak load, and the forecast's expected rate, horizon and headroom
(trend × a three-minute horizon makes a low rate's noise a >10 % move on most reads). The
figures a reader acts on are ``live``'s and ``decision``'s own."""
REFRESH_S = 300.0
"""The longest the stored observation may lag the operator's: one write per five minutes."""
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def news(stored: Mapping[str, Any] | None, new: Mapping[str, Any]) -> str | None:
    """Why ``new`` must be written over ``stored`` (a dotted path, or ``refresh``); None when
    nothing a reader acts on changed."""
    found = _differs(dict(stored or {}), dict(new), "status")
    if found is not None:
        return found
    if _age_s(stored, new) >= REFRESH_S:
        return "refresh"
    return None


READ_TIMES = frozenset({"sampleAgeSeconds"})
"""Figures that are the read's own bookkeeping, like its time: the newest sample's age cycles
through the scrape interval on every read (``MetricsAvailable`` says when it is too old)."""


def _differs(old: Any, new: Any, path: str) -> str | None:
    if path.rsplit(".", 1)[-1] in READ_TIMES:
        return None
    if isinstance(old, bool) or isinstance(new, bool) or old is None or new is None:
        return None if old == new else path
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(old.keys() | new.keys()):
            if (key in old) != (key in new):
                return f"{path}.{key}"
            found = _differs(old[key], new[key], f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return path
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            found = _differs(a, b, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    if isinstance(old, int) and isinstance(new, int):
        return None if old == new else path
    if isinstance(old, int | float) and isinstance(new, int | float):
        if WORKINGS & set(path.split(".")):
            return None  # the engine's memory and the forecast's working: read by no one
        step = abs(float(new) - float(old))
        moved = step > RELATIVE * max(abs(float(old)), abs(float(new))) and step > ABSOLUTE
        return path if moved else None
    if isinstance(old, str) and isinstance(new, str):
        return None if _NUMBER.sub("#", old) == _NUMBER.sub("#", new) else path
    return None if old == new else path


def _age_s(stored: Mapping[str, Any] | None, new: Mapping[str, Any]) -> float:
    """How much newer ``new``'s observation is than ``stored``'s (0 when either has none)."""
    was = _observed_at(stored)
    now = _observed_at(new)
    return 0.0 if was is None or now is None else now - was


def _observed_at(status: Mapping[str, Any] | None) -> float | None:
    stamp = ((status or {}).get("decision") or {}).get("observedAt")
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
