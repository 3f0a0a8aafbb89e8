"""A disaggregated fleet scaled role by role, by the operator's own policy.

Two :class:`~tokenscale.simulation.fleet.Fleet` (prefill engines, decode engines; each with
Kubernetes-like starting, ready and draining replicas), the KV hand-off of
``simulation/disaggregated.py`` (a request's prefill on the least-loaded ready prefill engine as
a one-token request, its KV after ``transfer_s(prompt)`` to the least-loaded ready decode
engine), a Prometheus scrape of each pool every ``scrape_interval_s`` and, every
``decision_interval_s``, one :meth:`~tokenscale.scaling.stepper.Stepper.step_roles` on the two
pools' snapshots (``simulation/observe.py``: the queries the operator runs, on each role's own
series): the decision the operator makes for a prefill/decode service, applied to each fleet.
Latencies count from the arrival; the record is the decode pool's.
"""

import heapq
import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.slo import Slo
from tokenscale.planning import Plan
from tokenscale.scaling.roles import ROLES, pools
from tokenscale.scaling.snapshot import Snapshot
from tokenscale.scaling.state import ScalingState
from tokenscale.scaling.stepper import Observation, Stepper
from tokenscale.simulation.capacity import meets_slo
from tokenscale.simulation.disaggregated import Engines
from tokenscale.simulation.fleet import Fleet
from tokenscale.simulation.observe import Scrape, snapshot_at
from tokenscale.simulation.recorder import Outcome, Recorder
from tokenscale.simulation.replica import SimRequest
from tokenscale.simulation.run import meets
from tokenscale.simulation.trace import Trace, percentile

#: After the last arrival, the replay runs on until every request is served, at most this long.
DRAIN_LIMIT_S = 3600.0


@dataclass(frozen=True)
class RoleCounts:
    """Each role's decided count at one decision, and why."""

    at_s: float
    prefill: int
    decode: int
    prefill_reason: str
    decode_reason: str
    coordination: str
    prefill_calibration: float = 1.0
    decode_calibration: float = 1.0


@dataclass(frozen=True)
class ScaledRun:
    """A scaled disaggregated replay: what the requests saw and what it held."""

    requests: int
    served: int
    ttft_p99_s: float
    tpot_p99_s: float
    meets_slo: bool
    gpu_hours: float
    slo_attainment: float = 1.0
    """Requests served within every latency SLO (``simulation/run.py``'s ``meets``) ÷ the
    trace's requests: the playground's ``slo_attainment``."""
    decisions: list[RoleCounts] = field(default_factory=list)
    gpu_hours_by_role: dict[str, float] = field(default_factory=dict)
    """Each pool's GPU-hours (starting, ready and draining replicas), summing to ``gpu_hours``."""
    ttft_attainment: float = 1.0
    """Requests whose TTFT (arrival to first token, the KV hand-off included: the prefill
    pool's part) met ``ttftP99Seconds`` ÷ the trace's requests."""
    tpot_attainment: float = 1.0
    """Requests whose TPOT (the decode pool's part; a one-token answer has none) met
    ``tpotP99Seconds`` ÷ the trace's requests."""


def role_attainment(outs: Sequence[Outcome], slo: Slo, requests: int) -> tuple[float, float]:
    """Each pool's part of the SLO: the requests whose TTFT met ``ttftP99Seconds`` (prefill),
    and whose TPOT met ``tpotP99Seconds`` (decode), each ÷ ``requests`` (unserved ones miss)."""
    if requests == 0:
        return 1.0, 1.0
    ttft, tpot = slo.ttft_p99_seconds, slo.tpot_p99_seconds
    ttft_met = sum(1 for o in outs if ttft is None or o.ttft_s <= ttft)
    tpot_met = sum(1 for o in outs if tpot is None or o.output_tokens <= 1 or o.tpot_s <= tpot)
    return ttft_met / requests, tpot_met / requests


def replay_scaled(
    spec: InferenceServiceSpec,
    plan: Plan,
    e: Engines,
    trace: Trace,
    cold_start_s: float = 120.0,
    decision_interval_s: float = 15.0,
    scrape_interval_s: float = 15.0,
    gauge_window_s: float = 60.0,
    rate_window_s: float = 120.0,
) -> ScaledRun:
    """Replay ``trace`` on a prefill/decode fleet that starts at the plan's counts and is
    scaled by the operator's per-role policy (see the module docstring)."""
    _, prefill_pool, decode_pool = pools(plan)
    rec, scratch = Recorder(), Recorder()
    fleets = {
        "prefill": Fleet(e.prefill, scratch, e.prefill_gpus, cold_start_s, prefill_pool.replicas),
        "decode": Fleet(e.decode, rec, e.decode_gpus, cold_start_s, decode_pool.replicas),
    }
    records = {"prefill": scratch, "decode": rec}
    keep = math.ceil(max(rate_window_s, gauge_window_s) / scrape_interval_s) + 2
    scrapes: dict[str, deque[Scrape]] = {role: deque(maxlen=keep) for role in ROLES}
    handed: list[SimRequest] = []
    transit: list[tuple[float, int, SimRequest]] = []
    outputs: dict[int, int] = {}
    order = 0
    stepper = Stepper(spec, plan, decision_interval_s)
    states = {
        "prefill": ScalingState(decided_replicas=prefill_pool.replicas),
        "decode": ScalingState(decided_replicas=decode_pool.replicas),
    }
    decisions: list[RoleCounts] = []

    def hook() -> None:  # every prefill engine hands its finished prompts over
        for m in fleets["prefill"].members:
            m.replica.finished = handed

    hook()

    def step_to(t: float) -> None:
        nonlocal order
        fleets["prefill"].advance(t)
        for r in handed:
            order += 1
            heapq.heappush(transit, (r.last_token_s + e.transfer_s(r.input_tokens), order, r))
        handed.clear()
        while transit and transit[0][0] <= t:
            at, _, r = heapq.heappop(transit)
            fleets["decode"].advance(at)
            moved = SimRequest(
                r.arrival_s, r.input_tokens, outputs.pop(id(r)), remote_tokens=r.input_tokens
            )
            fleets["decode"].route(moved, at)
        fleets["decode"].advance(t)

    def decide(t: float) -> None:
        nonlocal states
        snaps: dict[str, Snapshot] = {}
        for role in ROLES:
            snap = snapshot_at(scrapes[role], t, records[role], gauge_window_s, rate_window_s)
            if snap is not None:
                snaps[role] = snap
        top = snaps.get("decode") or Snapshot(at=t, replicas_reporting=0)
        lead = fleets["decode"].lead_time_s() or fleets["prefill"].lead_time_s()
        step = stepper.step_roles(
            states, Observation(t, top.model_copy(update={"roles": snaps})), t, lead
        )
        states = dict(step.states)
        if step.decision is None:
            return
        for role in ROLES:
            fleets[role].set_target(step.decision.of(role).replicas, t)
        hook()
        decisions.append(
            RoleCounts(
                t,
                step.decision.prefill.replicas,
                step.decision.decode.replicas,
                step.decision.prefill.reason,
                step.decision.decode.reason,
                step.decision.coordination,
                step.decision.prefill.prefill_calibration,
                step.decision.decode.calibration,
            )
        )

    t_scrape, t_decide = 0.0, decision_interval_s

    def ticks_until(t: float) -> None:
        nonlocal t_scrape, t_decide
        while min(t_scrape, t_decide) <= t:
            if t_scrape <= t_decide:
                step_to(t_scrape)
                for role in ROLES:
                    scrapes[role].append(fleets[role].scrape(t_scrape))
                t_scrape += scrape_interval_s
            else:
                step_to(t_decide)
                decide(t_decide)
                t_decide += decision_interval_s

    for r in trace.requests:
        ticks_until(r.arrival_s)
        step_to(r.arrival_s)
        req = SimRequest(r.arrival_s, r.input_tokens, 1, r.prefix_blocks)
        outputs[id(req)] = r.output_tokens
        fleets["prefill"].route(req, r.arrival_s)
    end = trace.requests[-1].arrival_s if trace.requests else 0.0
    t = end
    while (outputs or transit or handed or any(f.in_flight() for f in fleets.values())) and (
        t < end + DRAIN_LIMIT_S
    ):
        t += scrape_interval_s
        ticks_until(t)
        step_to(t)
    outs = rec.outcomes
    gpu_s = sum(f.gpu_seconds for f in fleets.values())
    ttft_attainment, tpot_attainment = role_attainment(outs, spec.slo, len(trace.requests))
    return ScaledRun(
        requests=len(trace.requests),
        served=len(outs),
        ttft_p99_s=percentile([o.ttft_s for o in outs], 0.99) if outs else math.nan,
        tpot_p99_s=percentile([o.tpot_s for o in outs if o.output_tokens > 1], 0.99)
        if outs
        else math.nan,
        meets_slo=meets_slo(rec, spec.slo),
        gpu_hours=gpu_s / 3600.0,
        slo_attainment=sum(1 for o in outs if meets(o, spec.slo)) / len(trace.requests)
        if trace.requests
        else 1.0,
        decisions=decisions,
        gpu_hours_by_role={role: f.gpu_seconds / 3600.0 for role, f in fleets.items()},
        ttft_attainment=ttft_attainment,
        tpot_attainment=tpot_attainment,
    )
