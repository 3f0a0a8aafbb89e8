"""PURE: part of a trace — the requests arriving in ``[start, start + duration)`` of its own
time, shifted so the part starts at 0 (``tokenscale simulate --start/--duration``)."""

import dataclasses

from tokenscale.simulation.errors import TraceError
from tokenscale.simulation.trace import Trace


def window(trace: Trace, start_s: float = 0.0, duration_s: float | None = None) -> Trace:
    """The requests arriving from ``start_s`` for ``duration_s`` seconds (to the end without
    one), their arrivals counted from ``start_s``; a :class:`TraceError` when none arrives."""
    if start_s < 0 or (duration_s is not None and duration_s <= 0):
        raise TraceError(f"window [{start_s:g} s, +{duration_s} s): use start >= 0, duration > 0")
    if start_s == 0 and duration_s is None:
        return trace
    end = float("inf") if duration_s is None else start_s + duration_s
    kept = tuple(
        dataclasses.replace(r, arrival_s=r.arrival_s - start_s)
        for r in trace.requests
        if start_s <= r.arrival_s < end
    )
    if not kept:
        raise TraceError(
            f"no request arrives between {start_s:g} s and "
            f"{'the end' if duration_s is None else f'{end:g} s'} of {trace.source} "
            f"(it spans 0–{trace.duration_s:g} s)"
        )
    return Trace(kept, trace.source, trace.block_tokens)
