"""PURE: the time span a trace asks the simulator to replay, cut or refused before it starts.

The simulator scrapes and decides at every interval (15 s by default) across the whole replay,
so its cost grows with the span (the README measured about 5 s of computing per simulated hour
per policy); a span is bounded before anything is simulated:

- an idle gap longer than :data:`MAX_IDLE_GAP_S` (no request arrives) is cut to that length:
  by then every policy has scaled to its floor, so the rest of the gap changes nothing but
  idle GPU-hours, which the cut leaves out (the warning says so). One row dated 9999-12-31, or
  two rows a year apart, become an hour apart;
- a replay longer than :data:`MAX_SPAN_S` after ``--time-scale`` is refused, saying the span,
  the limit and the largest ``--time-scale`` that fits.
"""

import dataclasses
import math
from dataclasses import dataclass

from tokenscale.simulation.errors import TraceError
from tokenscale.simulation.trace import Trace, TraceRequest

MAX_IDLE_GAP_S = 3600.0
MAX_SPAN_S = 86_400.0
"""One simulated day: a couple of minutes per policy."""
MAX_REPLAY_REQUESTS = 1_000_000
"""Most requests one replay simulates (after --rate-scale): 432,000 took 655 s and 343 MB on a
busy 2-core machine (docs/reliability.md), so this is about half an hour and 1 GB."""


@dataclass(frozen=True)
class CutGaps:
    trace: Trace
    cut_s: float
    """Idle time removed, in the trace's seconds."""
    notes: tuple[str, ...]


def _duration(seconds: float) -> str:
    for unit, size in (("years", 365.25 * 86_400), ("days", 86_400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds:.1f} s"


def cut_idle_gaps(trace: Trace, max_gap_s: float = MAX_IDLE_GAP_S) -> CutGaps:
    """The trace with every gap between consecutive arrivals longer than ``max_gap_s`` cut to
    ``max_gap_s``, and what was cut."""
    rows: list[TraceRequest] = []
    shift, longest, where, count, previous = 0.0, 0.0, 0, 0, None
    for i, r in enumerate(trace.requests):
        if previous is not None:
            gap = r.arrival_s - previous
            if gap > max_gap_s:
                shift += gap - max_gap_s
                count += 1
                if gap > longest:
                    longest, where = gap, i
        previous = r.arrival_s
        rows.append(dataclasses.replace(r, arrival_s=r.arrival_s - shift))
    if not count:
        return CutGaps(trace, 0.0, ())
    note = (
        f"{trace.source}: {count} idle gap(s) longer than {_duration(max_gap_s)} cut to "
        f"{_duration(max_gap_s)} each (the longest, {_duration(longest)}, before request "
        f"{where + 1} of {len(rows)}); {_duration(shift)} of idle time is not simulated and "
        "not in the GPU-hours"
    )
    return CutGaps(Trace(tuple(rows), trace.source, trace.block_tokens), shift, (note,))


def _floor_4(value: float) -> float:
    """``value`` rounded down to 4 significant digits (a suggestion that surely fits)."""
    step = 10.0 ** (math.floor(math.log10(value)) - 3)
    return math.floor(value / step) * step


def check_span(trace: Trace, time_scale: float, max_span_s: float = MAX_SPAN_S) -> None:
    """Refuse a replay longer than ``max_span_s`` (TraceError, saying which and why)."""
    span = trace.duration_s * time_scale
    if span <= max_span_s:
        return
    fits = _floor_4(max_span_s / trace.duration_s)
    if time_scale != 1.0:
        raise TraceError(
            f"--time-scale {time_scale:g} stretches {trace.source}'s {_duration(trace.duration_s)} "
            f"to {_duration(span)}; the simulator replays at most {_duration(max_span_s)}: use "
            f"--time-scale {fits:.4g} or less"
        )
    raise TraceError(
        f"{trace.source} spans {_duration(span)} of arrivals even with idle gaps cut; the "
        f"simulator replays at most {_duration(max_span_s)}: cut the trace, or compress it with "
        f"--time-scale {fits:.4g}"
    )


def check_size(trace: Trace, rate_scale: float, max_requests: int = MAX_REPLAY_REQUESTS) -> None:
    """Refuse a replay of more than ``max_requests`` requests (TraceError naming the fix)."""
    count = len(trace.requests)
    replayed = count * rate_scale
    if replayed <= max_requests:
        return
    if rate_scale != 1.0:
        fits = _floor_4(max_requests / count)
        raise TraceError(
            f"--rate-scale {rate_scale:g} turns {trace.source}'s {count:,} requests into "
            f"{replayed:,.0f}; the simulator replays at most {max_requests:,}: use --rate-scale "
            f"{fits:.4g} or less"
        )
    raise TraceError(
        f"{trace.source} holds {count:,} requests; the simulator replays at most "
        f"{max_requests:,}: replay part of it with --start and --duration"
    )
