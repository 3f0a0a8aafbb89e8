"""The report of a playground fault drill (``tokenscale playground --fault``), read as
``simulation/drills.py`` reads a simulated one: the requests arriving from the fault on, binned
by arrival (``BIN_S``); a bin is degraded when its attainment is more than ``DEGRADED_BY`` below
the same bin of the run without the fault, or, without such a run, below the faulted run's own
attainment before the fault. Recovery is the fault to the end of the last degraded bin (None:
still degraded at the trace's end or at the next fault). "During" is the fault to the end of
its recovery (at least one bin): attainment, the largest queue and KV usage the operator's
status showed, and the operator's scale events.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tokenscale.playground.faults import FAULT_EVENT
from tokenscale.playground.load import Outcome
from tokenscale.playground.session import PlaygroundResult, meets_slo
from tokenscale.simulation import Trace
from tokenscale.simulation.drills import BIN_S, DEGRADED_BY
from tokenscale.simulation.faults import Fault


@dataclass(frozen=True)
class PlaygroundFaultReport:
    kind: str
    at_s: float
    recovery_s: float | None
    """None: still degraded at the trace's end (or at the next fault)."""
    window_s: float
    slo_attainment_during: float
    slo_attainment_during_without: float | None
    """The same window of the run without faults (None: no such run)."""
    reference: str
    """What the bins were judged against."""
    max_waiting_during: int
    max_waiting_during_without: int | None
    kv_usage_max_during: float
    kv_usage_max_during_without: float | None
    decisions: list[str]
    events: list[str]


def _sent(trace: Trace, max_model_len: int) -> list[float]:
    return [
        r.arrival_s for r in trace.requests if r.input_tokens + r.output_tokens <= max_model_len
    ]


def _bins(
    arrivals: list[float], outcomes: list[Outcome], met: Callable[[Outcome], bool], origin: float
) -> dict[int, tuple[int, int]]:
    seen: dict[int, int] = {}
    good: dict[int, int] = {}
    for a in arrivals:
        if a >= origin:
            b = int((a - origin) // BIN_S)
            seen[b] = seen.get(b, 0) + 1
    for o in outcomes:
        if o.arrival_s >= origin and met(o):
            b = int((o.arrival_s - origin) // BIN_S)
            good[b] = good.get(b, 0) + 1
    return {b: (n, min(good.get(b, 0), n)) for b, n in seen.items()}


def _share(bins: dict[int, tuple[int, int]], first: int, last: int) -> float:
    n = sum(bins.get(b, (0, 0))[0] for b in range(first, last + 1))
    m = sum(bins.get(b, (0, 0))[1] for b in range(first, last + 1))
    return m / n if n else 1.0


def _clock(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m}:{s:02d}"


def fault_reports(
    faults: Sequence[Fault],
    faulted: PlaygroundResult,
    faulted_trace: Trace,
    max_model_len: int,
    baseline: PlaygroundResult | None = None,
    baseline_trace: Trace | None = None,
) -> list[PlaygroundFaultReport]:
    """One report per fault (module docstring)."""

    def met(o: Outcome) -> bool:
        return meets_slo(o, faulted.ttft_slo_s, faulted.tpot_slo_s)

    ordered = sorted(faults, key=lambda f: f.at_s)
    arrivals = _sent(faulted_trace, max_model_len)
    reports: list[PlaygroundFaultReport] = []
    for i, fault in enumerate(ordered):
        f_bins = _bins(arrivals, faulted.outcomes, met, fault.at_s)
        n_before = sum(1 for a in arrivals if a < fault.at_s)
        met_before = sum(met(o) for o in faulted.outcomes if o.arrival_s < fault.at_s)
        own = met_before / n_before if n_before else 1.0
        b_bins: dict[int, tuple[int, int]] | None = None
        if baseline is not None and baseline_trace is not None:
            b_bins = _bins(_sent(baseline_trace, max_model_len), baseline.outcomes, met, fault.at_s)
            reference = "the same bin without the fault"
        else:
            reference = f"this run's attainment before the fault ({own:.1%})"
        last = max(f_bins, default=0)
        nxt = ordered[i + 1].at_s if i + 1 < len(ordered) else None
        if nxt is not None:
            last = max(0, min(last, int((nxt - fault.at_s) // BIN_S) - 1))

        degraded = [
            b
            for b in range(last + 1)
            if b in f_bins
            and _share(f_bins, b, b)
            < (_share(b_bins, b, b) if b_bins is not None else own) - DEGRADED_BY
        ]
        if not degraded:
            recovery: float | None = 0.0
            end_bin = 0
        elif degraded[-1] == last:
            recovery, end_bin = None, last
        else:
            end_bin = degraded[-1]
            recovery = (end_bin + 1) * BIN_S
        end_s = fault.at_s + (end_bin + 1) * BIN_S
        during = [p for p in faulted.timeline if fault.at_s <= p.t_s <= end_s]
        without = (
            [p for p in baseline.timeline if fault.at_s <= p.t_s <= end_s]
            if baseline is not None
            else None
        )
        reports.append(
            PlaygroundFaultReport(
                kind=fault.kind,
                at_s=fault.at_s,
                recovery_s=recovery,
                window_s=end_s - fault.at_s,
                slo_attainment_during=_share(f_bins, 0, end_bin),
                slo_attainment_during_without=_share(b_bins, 0, end_bin)
                if b_bins is not None
                else None,
                reference=reference,
                max_waiting_during=max((p.waiting for p in during), default=0),
                max_waiting_during_without=max((p.waiting for p in without), default=0)
                if without is not None
                else None,
                kv_usage_max_during=max((p.kv_usage_max for p in during), default=0.0),
                kv_usage_max_during_without=max((p.kv_usage_max for p in without), default=0.0)
                if without is not None
                else None,
                decisions=[
                    f"{_clock(e.t_s)} {e.message}"
                    for e in faulted.events
                    if e.reason != FAULT_EVENT and fault.at_s <= e.t_s <= end_s
                ],
                events=[
                    f"{_clock(e.t_s)} {e.message}"
                    for e in faulted.events
                    if e.reason == FAULT_EVENT
                    and e.message.startswith(fault.kind)
                    and fault.at_s <= e.t_s <= end_s
                ],
            )
        )
    return reports
