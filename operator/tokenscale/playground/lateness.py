"""How late the twins received the load: each request's arrival at its twin against its time in
the trace, in modelled seconds.

The simulator admits every request at its trace time; live, the replay's event loop sends it
when it gets to it and the HTTP hop adds more, each wall millisecond ``speed`` modelled ones.
Requests are matched in arrival order (the ``k``-th arrival at any twin with the ``k``-th of
the trace): a jitter larger than the gap between two arrivals swaps them, so this is the
distribution of the delays, not each request's own.
"""

from collections.abc import Sequence

from tokenscale.simulation.trace import percentile


def arrival_lateness_s(
    twin_arrivals_s: Sequence[float], trace_arrivals_s: Sequence[float], load_start_s: float
) -> list[float] | None:
    """Each arrival's delay in order: the twins' arrival times (their engine clock) less
    ``load_start_s`` (that clock when the replay began) less the trace's times. None when
    the counts differ (a request that never reached a twin, or was aborted there)."""
    if len(twin_arrivals_s) != len(trace_arrivals_s) or not trace_arrivals_s:
        return None
    got = sorted(t - load_start_s for t in twin_arrivals_s)
    return [a - b for a, b in zip(got, sorted(trace_arrivals_s), strict=True)]


def lateness_summary(late_s: Sequence[float] | None) -> dict[str, float] | None:
    """The delays' median, 90th and 99th percentiles and maximum (None: not measured)."""
    if not late_s:
        return None
    values = list(late_s)
    return {
        "p50": percentile(values, 0.5),
        "p90": percentile(values, 0.9),
        "p99": percentile(values, 0.99),
        "max": max(values),
    }
