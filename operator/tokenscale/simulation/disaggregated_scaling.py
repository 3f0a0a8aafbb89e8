"""A disaggregated fleet scaled role by role, by the operator's own policy.

The one fleet (``simulation/fleet.py``) with two pools, prefill and decode (each with
Kubernetes-like pending, starting, ready and draining replicas), and its KV hand-off (a
request's prefill on the least-loaded ready prefill engine as a one-token request, its KV after
``transfer_s(prompt)`` to the least-loaded ready decode engine), replayed by the one loop
(``simulation/loop.py``: decisions stop at the trace's end, GPU-hours count over its span): a
Prometheus scrape of each pool every ``scrape_interval_s`` and, every
``decision_interval_s``, one :meth:`~tokenscale.scaling.stepper.Stepper.step_roles` on the two
pools' snapshots (``simulation/observe.py``: the queries the operator runs, on each role's own
series): the decision the operator makes for a prefill/decode service, applied to each pool.
Latencies count from the arrival; the record is the decode pool's.
"""

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
from tokenscale.simulation.fleet import Fleet, Handoff, PoolEngine
from tokenscale.simulation.loop import Clock, replay
from tokenscale.simulation.observe import Scrape, snapshot_at
from tokenscale.simulation.recorder import Outcome, Recorder
from tokenscale.simulation.replica import SimRequest
from tokenscale.simulation.summary import meets
from tokenscale.simulation.trace import Trace, TraceRequest, percentile

#: After the trace's end, requests in flight are served for their latencies, at most this long.
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
    fleet = Fleet(
        [
            PoolEngine("prefill", e.prefill, e.prefill_gpus),
            PoolEngine("decode", e.decode, e.decode_gpus),
        ],
        [scratch, rec],
        cold_start_s,
        [prefill_pool.replicas, decode_pool.replicas],
        handoff=Handoff(0, 1, e.transfer_s),
    )
    hooks = _RoleHooks(
        fleet,
        Stepper(spec, plan, decision_interval_s),
        [prefill_pool.replicas, decode_pool.replicas],
        math.ceil(max(rate_window_s, gauge_window_s) / scrape_interval_s) + 2,
        (gauge_window_s, rate_window_s),
    )
    clock = Clock(scrape_interval_s, decision_interval_s, None, DRAIN_LIMIT_S)
    end = replay(fleet, trace.requests, trace.duration_s, hooks, clock)
    outs = rec.outcomes
    ttft_attainment, tpot_attainment = role_attainment(outs, spec.slo, len(trace.requests))
    gpu_s = end.gpu_seconds_by_pool
    return ScaledRun(
        requests=len(trace.requests),
        served=len(outs),
        ttft_p99_s=percentile([o.ttft_s for o in outs], 0.99) if outs else math.nan,
        tpot_p99_s=percentile([o.tpot_s for o in outs if o.output_tokens > 1], 0.99)
        if outs
        else math.nan,
        meets_slo=meets_slo(rec, spec.slo),
        gpu_hours=sum(gpu_s) / 3600.0,
        slo_attainment=sum(1 for o in outs if meets(o, spec.slo)) / len(trace.requests)
        if trace.requests
        else 1.0,
        decisions=hooks.decisions,
        gpu_hours_by_role={role: gpu_s[i] / 3600.0 for i, role in enumerate(ROLES)},
        ttft_attainment=ttft_attainment,
        tpot_attainment=tpot_attainment,
    )


class _RoleHooks:
    """What an arrival, a scrape and a decision do for prefill/decode pools: each arrival's
    prefill to the prefill pool, each pool scraped on its own series, one
    :meth:`~tokenscale.scaling.stepper.Stepper.step_roles` per decision."""

    def __init__(
        self,
        fleet: Fleet,
        stepper: Stepper,
        planned: list[int],
        keep: int,
        windows_s: tuple[float, float],
    ) -> None:
        self.fleet, self.stepper, self.windows_s = fleet, stepper, windows_s
        self.scrapes: dict[str, deque[Scrape]] = {role: deque(maxlen=keep) for role in ROLES}
        self.states = {
            role: ScalingState(decided_replicas=n) for role, n in zip(ROLES, planned, strict=True)
        }
        self.decisions: list[RoleCounts] = []

    def admit(self, r: TraceRequest, t: float) -> None:
        req = SimRequest(r.arrival_s, r.input_tokens, 1, r.prefix_blocks)
        self.fleet.admit_prefill(req, r.output_tokens, t)

    def scrape(self, t: float) -> None:
        for i, role in enumerate(ROLES):
            self.scrapes[role].append(self.fleet.scrape(t, [i]))

    def decide(self, t: float) -> bool:
        gauge_s, rate_s = self.windows_s
        snaps: dict[str, Snapshot] = {}
        for i, role in enumerate(ROLES):
            rec = self.fleet.recs[i]
            snap = snapshot_at(self.scrapes[role], t, rec, gauge_s, rate_s)
            if snap is not None:
                snaps[role] = snap
        top = snaps.get("decode") or Snapshot(at=t, replicas_reporting=0)
        lead = self.fleet.lead_time_s()
        step = self.stepper.step_roles(
            self.states, Observation(t, top.model_copy(update={"roles": snaps})), t, lead
        )
        self.states = dict(step.states)
        d = step.decision
        if d is None:
            return False
        self.fleet.set_counts({role: d.of(role).replicas for role in ROLES}, t)
        self.decisions.append(
            RoleCounts(
                t, d.prefill.replicas, d.decode.replicas, d.prefill.reason, d.decode.reason,
                d.coordination, d.prefill.prefill_calibration, d.decode.calibration,
            )
        )  # fmt: skip
        return False
