"""Fault drills: the same replay with and without the faults, and what each fault did.

For each fault, the requests arriving from its moment on are binned by arrival (``BIN_S``
from the fault); a bin is *degraded* when its SLO attainment falls more than ``DEGRADED_BY``
below the same bin of the run without the fault. Requests that arrived before the fault are
not judged here (a dead replica's requests are counted in ``events`` and in the whole run:
they miss whatever the redundancy).
**Recovery** lasts from the fault to the end of the last degraded bin (0: nothing degraded;
``None``: still degraded when the trace ends, or when the next fault strikes: the scan stops
there, the next fault's damage being its own). **During** is the fault's moment to the end of
its recovery (at least one bin): attainment, the largest queue and KV usage (the timeline's
truth) and the operator's decisions there, beside the same window of the run without it.

The redundancy recommendation replays a single replica loss with ``spareReplicas`` 0, 1, 2 …
and keeps the smallest whose attainment during the loss stays at or above ``TARGET_ATTAINMENT``
(the SLOs are P99 targets).
"""

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from tokenscale.planning import plan_service
from tokenscale.simulation.faults import Fault, faulted_trace
from tokenscale.simulation.policies import PolicyName
from tokenscale.simulation.recorder import Outcome
from tokenscale.simulation.result import SimResult, TimelinePoint
from tokenscale.simulation.run import Setup, _replay
from tokenscale.simulation.summary import meets
from tokenscale.simulation.trace import Trace

BIN_S = 30.0
DEGRADED_BY = 0.02
TARGET_ATTAINMENT = 0.99
MAX_SPARE_REPLICAS = 3


class FaultReport(BaseModel):
    """One fault's effect (``simulate --fault … -o json``'s ``faults``)."""

    model_config = ConfigDict(frozen=True)

    kind: str
    at_s: float
    recovery_s: float | None = Field(description="None: still degraded at the trace's end")
    slo_attainment_during: float
    slo_attainment_during_without: float = Field(description="Same window, no fault")
    window_s: float = Field(description="The window 'during' covers")
    max_waiting_during: int
    max_waiting_during_without: int
    kv_usage_max_during: float
    kv_usage_max_during_without: float
    decisions: list[str] = Field(description="The operator's replica changes in the window")
    events: list[str] = Field(default_factory=list, description="What the fault did")


class RedundancyAdvice(BaseModel):
    """The smallest ``spareReplicas`` that keeps attainment through a single replica loss."""

    model_config = ConfigDict(frozen=True)

    at_s: float
    spare_replicas: int | None = Field(description="None: none up to the largest tried")
    attainment_by_spare: dict[int, float]
    reason: str


@dataclass(frozen=True)
class Drill:
    faulted: SimResult
    baseline: SimResult
    reports: list[FaultReport]


def _run(
    setup: Setup, policy: PolicyName, events: list[tuple[float, str]] | None = None
) -> tuple[SimResult, list[Outcome]]:
    """One replay of ``policy`` (no cold start for the hindsight policies, as ``simulate``)."""
    outcomes: list[Outcome] = []
    result = _replay(
        setup,
        policy,
        setup.policy(policy),
        setup.initial_replicas(policy),
        0.0 if policy in ("oracle", "static") else setup.opts.cold_start_s,
        None,
        outcomes_out=outcomes,
        fleet_events_out=events,
    )
    return result, outcomes


def with_faults(setup: Setup, faults: tuple[Fault, ...]) -> Setup:
    """A copy of ``setup`` replaying ``faults`` (its own result cache; the capacity probe and
    the oracle of the unfaulted trace are kept)."""
    other = object.__new__(Setup)
    other.__dict__.update(setup.__dict__)
    other.faults = faults
    other.trace = faulted_trace(
        setup.trace, faults, setup.forecast.max_model_len, setup.forecast.sized.total
    )
    other.cache = {}
    return other


def _bins(
    trace: Trace, outcomes: list[Outcome], setup: Setup, origin_s: float
) -> dict[int, tuple[int, int]]:
    """Per bin of arrivals since ``origin_s`` (bin k: ``origin + k·BIN_S`` onwards): (requests,
    requests meeting the SLOs); unfinished ones count as misses, earlier arrivals not at all."""
    seen: dict[int, int] = {}
    met: dict[int, int] = {}
    for r in trace.requests:
        if r.arrival_s >= origin_s:
            b = int((r.arrival_s - origin_s) // BIN_S)
            seen[b] = seen.get(b, 0) + 1
    for o in outcomes:
        if o.arrival_s >= origin_s and meets(o, setup.spec.slo):
            b = int((o.arrival_s - origin_s) // BIN_S)
            met[b] = met.get(b, 0) + 1
    return {b: (n, min(met.get(b, 0), n)) for b, n in seen.items()}


def _share(bins: dict[int, tuple[int, int]], first: int, last: int) -> float:
    n = sum(bins.get(b, (0, 0))[0] for b in range(first, last + 1))
    m = sum(bins.get(b, (0, 0))[1] for b in range(first, last + 1))
    return m / n if n else 1.0


def _window(points: list[TimelinePoint], start: float, end: float) -> list[TimelinePoint]:
    return [p for p in points if start <= p.t_s <= end]


def _clock(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _report(
    fault: Fault,
    setup: Setup,
    faulted: tuple[SimResult, list[Outcome]],
    baseline: tuple[SimResult, list[Outcome]],
    faulted_trace_: Trace,
    events: list[tuple[float, str]],
    next_at_s: float | None,
) -> FaultReport:
    f_bins = _bins(faulted_trace_, faulted[1], setup, fault.at_s)
    b_bins = _bins(setup.trace, baseline[1], setup, fault.at_s)
    first = 0
    last_bin = max(f_bins, default=first)
    if next_at_s is not None:  # the next fault's damage is its own
        last_bin = max(first, min(last_bin, int((next_at_s - fault.at_s) // BIN_S) - 1))
    degraded = [
        b
        for b in range(first, last_bin + 1)
        if b in f_bins and _share(f_bins, b, b) < _share(b_bins, b, b) - DEGRADED_BY
    ]
    if not degraded:
        recovery: float | None = 0.0
        end_bin = first
    elif degraded[-1] == last_bin:  # still degraded at the trace's end (or the next fault)
        recovery, end_bin = None, last_bin
    else:
        end_bin = degraded[-1]
        recovery = (end_bin + 1) * BIN_S
    end_s = fault.at_s + (end_bin + 1) * BIN_S
    during = _window(faulted[0].timeline, fault.at_s, end_s)
    before = _window(baseline[0].timeline, fault.at_s, end_s)
    decisions: list[str] = []
    previous = next(
        (p.replicas_target for p in reversed(faulted[0].timeline) if p.t_s < fault.at_s), None
    )
    for p in during:
        if previous is not None and p.replicas_target != previous:
            decisions.append(f"{_clock(p.t_s)} → {p.replicas_target} replicas: {p.reason}")
        previous = p.replicas_target
    return FaultReport(
        kind=fault.kind,
        at_s=fault.at_s,
        recovery_s=recovery,
        slo_attainment_during=_share(f_bins, first, end_bin),
        slo_attainment_during_without=_share(b_bins, first, end_bin),
        window_s=end_s - fault.at_s,
        max_waiting_during=max((p.waiting for p in during), default=0),
        max_waiting_during_without=max((p.waiting for p in before), default=0),
        kv_usage_max_during=max((p.kv_usage_max for p in during), default=0.0),
        kv_usage_max_during_without=max((p.kv_usage_max for p in before), default=0.0),
        decisions=decisions,
        events=[
            f"{_clock(t)}: {text}" for t, text in events if fault.at_s <= t < fault.at_s + 1e-6
        ],
    )


def drill(setup: Setup, faults: tuple[Fault, ...], policy: PolicyName = "tokenscale") -> Drill:
    """Replay ``policy`` with and without ``faults``; a report per fault."""
    timeline = setup.opts.model_copy(update={"timeline": True})
    base_setup = setup.with_options(timeline)
    faulty = with_faults(base_setup, faults)
    baseline = _run(base_setup, policy)
    events: list[tuple[float, str]] = []
    faulted = _run(faulty, policy, events)
    moments = sorted({f.at_s for f in faults})
    reports = [
        _report(
            f,
            setup,
            faulted,
            baseline,
            faulty.trace,
            events,
            next((m for m in moments if m > f.at_s), None),
        )
        for f in faults
    ]
    return Drill(faulted[0], baseline[0], reports)


def recommend_redundancy(setup: Setup, at_s: float) -> RedundancyAdvice:
    """Replay a replica loss at ``at_s`` with ``spareReplicas`` 0 … ``MAX_SPARE_REPLICAS`` (the
    tokenscale policy); the smallest keeping ``TARGET_ATTAINMENT`` during it."""
    by_spare: dict[int, float] = {}
    chosen: int | None = None
    for spare in range(MAX_SPARE_REPLICAS + 1):
        sc = setup.spec.scaling
        redundancy = sc.redundancy.model_copy(update={"spare_replicas": spare})
        spec = setup.spec.model_copy(
            update={"scaling": sc.model_copy(update={"redundancy": redundancy})}
        )
        other = object.__new__(Setup)
        other.__dict__.update(setup.__dict__)
        other.spec = spec
        other.forecast = plan_service(spec, setup.forecast.name)
        other.cache = {}
        report = drill(other, (Fault("replica-loss", at_s),)).reports[0]
        by_spare[spare] = report.slo_attainment_during
        if report.slo_attainment_during >= TARGET_ATTAINMENT:
            chosen = spare
            break
    tried = ", ".join(f"{k} → {v:.1%}" for k, v in by_spare.items())
    if chosen is None:
        reason = (
            f"no spareReplicas up to {MAX_SPARE_REPLICAS} keeps {TARGET_ATTAINMENT:.0%} through "
            f"a replica loss at {_clock(at_s)} (attainment during it: {tried}); a replacement "
            "takes the cold start, so raise redundancy.factor or shorten the cold start"
        )
    else:
        reason = (
            f"spareReplicas: {chosen} keeps {by_spare[chosen]:.1%} ≥ {TARGET_ATTAINMENT:.0%} of "
            f"requests within the SLOs through a replica loss at {_clock(at_s)} ({tried})"
        )
    return RedundancyAdvice(
        at_s=at_s, spare_replicas=chosen, attainment_by_spare=by_spare, reason=reason
    )
