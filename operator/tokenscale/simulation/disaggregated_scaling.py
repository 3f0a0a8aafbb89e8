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
from tokenscale.simulation.result import FleetRun, PoolsPoint
from tokenscale.simulation.summary import summarize
from tokenscale.simulation.trace import Trace, TraceRequest

#: After the trace's end, requests in flight are served for their latencies, at most this long.
DRAIN_LIMIT_S = 3600.0


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
    first_decision_s: float | None = None,
) -> FleetRun:
    """Replay ``trace`` on a prefill/decode fleet that starts at the plan's counts and is
    scaled by the operator's per-role policy (see the module docstring); the first decision at
    ``first_decision_s`` (the operator's resync phase; None: one interval in)."""
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
    clock = Clock(scrape_interval_s, decision_interval_s, first_decision_s, DRAIN_LIMIT_S)
    end = replay(fleet, trace.requests, trace.duration_s, hooks, clock)
    ttft, tpot = role_attainment(rec.outcomes, spec.slo, len(trace.requests))
    return summarize(
        fleet,
        end,
        trace,
        spec.slo,
        policy="tokenscale (per role)",
        peak=hooks.peak,
        asked_end=fleet.asked(),
        events=hooks.events,
        marked=[],
        timeline=hooks.points,
        served_by=[1],
        attainment=[ttft, tpot],
        meets_p99=meets_slo(rec, spec.slo),
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
        self.points: list[PoolsPoint] = []
        self.peak = fleet.asked()
        self.events = 0

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
        fleet = self.fleet
        self.events += any(fleet.set_counts({role: d.of(role).replicas for role in ROLES}, t))
        asked = fleet.asked()
        self.peak = {n: max(self.peak[n], asked[n]) for n in self.peak}
        self.points.append(
            PoolsPoint(
                t, asked, fleet.in_phase("ready"), fleet.in_phase("pending"), d.coordination,
                {role: d.of(role).reason for role in ROLES},
                {"prefill": d.prefill.prefill_calibration, "decode": d.decode.calibration},
            )
        )  # fmt: skip
        return False
