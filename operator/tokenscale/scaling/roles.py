"""PURE: scaling a disaggregated service's two pools, each on its own signals, and the rule
that keeps their ratio useful.

**Prefill** (prompts in, KV out; ``vllm serve`` with ``max_tokens=1`` per request):

- ``prefill_ttft_p99_s``: the prefill pool's TTFT P99 (queue + prefill, as vLLM measures it on
  the prefill engine; no transfer) against the TTFT SLO **minus the planned P99 KV transfer**
  (the part of the TTFT budget the prefill pool has);
- ``waiting_per_replica``: prompts waiting at the prefill pool, per reporting engine, high at
  the larger of ``waitingPerReplicaHigh`` and the queue the plan's TTFT already allows
  (:func:`prefill_waiting_watermarks`);
- ``prompt_load``: prompt tokens/s over the pool's planned capacity (``rps_per_replica`` ×
  planned mean prompt, per reporting engine), high at 1 (the plan's operating utilisation).

**Decode** (transferred prompts in, tokens out):

- ``tpot_p99_s`` against the TPOT SLO; ``kv_usage`` (max over engines) against the KV
  watermarks; ``running_per_replica`` against the plan's decode batch (``operating_point``).

Each high signal asks for ``max(n + 1, ceil(n × min(value / high, cap)))`` replicas of its
role (×2 cap for load, ×1.2 for latency: ``scaling/signals.py``'s rule). The two latency
signals are read as attainment from the role's own buckets, as for one pool
(``signals.as_attainment``: high only when the share surely over the threshold exceeds
``1 − targetAttainment``, or a role load signal confirms a possible breach).

**The model's need per role**: the role's arrival rate (requests reaching their first token on
that pool), smoothed and projected one lead time ahead (``scaling/forecast.py``, the pods'
measured lead time), over the role's per-replica rate — the plan's at the pool's binding
constraint (:func:`binding_rps_per_replica`: the design rate ÷ the replicas the pool needs, so
a KV-bound decode pool is not sized at its batch's higher rate), rescaled to the observed
lengths (prefill: planned ÷ observed mean prompt; decode: planned ÷ observed mean output) and
× the role's calibration (``scaling/role_calibration.py``) — with ``spec.scaling.redundancy``.
Decode also needs ``ceil(running ÷ planned batch)``. ``workloadSource`` applies as for one pool
(``scaling/need.py``): under ``max`` (the default) and ``forecast`` the spec's design rate is a
floor under each role's need and an observed length shorter than the spec's does not raise the
per-replica rate; ``observed`` sizes on the metrics alone. Each role then goes through the same
policy as one pool (``scaling/policy.py``: fast up, careful down, hold) with its own memory
(one :class:`ScalingState` per role).

**Coordination** (:func:`coordinate`; ``RATIO_SLACK`` = 2):

1. *Flow*: the decode model never needs fewer replicas than carry the prefill pool's output
   (prompts finished at the prefill pool per second) plus the prompts queued at both pools
   spread over one lead time and interval, ÷ a decode replica's rate: a decode scale-down never
   leaves prefilled prompts nowhere to go, and a step that fills the prefill queue raises decode
   before the prefill pool's output rate (a rate over minutes) has caught up. While prompts
   wait at the prefill pool over its high watermark, decode is decided after prefill and
   carries what the prefill pool's new count prefills at its planned rate, unless decode's KV
   is under its low watermark (:func:`backlog_floor`).
2. *Band*: with ``r`` the plan's prefill ÷ decode ratio, each role's model is floored by the
   other's count so that ``r / 2 ≤ prefill ÷ decode ≤ r × 2``; after both transitions the
   lagging role is raised at once (cause ``Ratio``) until the band holds. The rule only
   raises: it never lowers a role below what its own signals decided, so a role that cannot
   scale (at ``maxReplicas``) leaves the ratio outside the band, and the decision says so.

Pinned (``spec.scaling.replicas``): each role runs the pin. Blind (a role's snapshot missing,
its core signals missing or stale): that role holds ``max(last decision, planned count)``,
never down.
"""

import math
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning.disaggregation import RATIO_SLACK
from tokenscale.planning.result import Disaggregation, Plan, RolePool
from tokenscale.scaling.buckets import BOUNDS, bucket_range
from tokenscale.scaling.burst_memory import floor_in_force, remembered
from tokenscale.scaling.cause import Cause
from tokenscale.scaling.decision import Decision, Signal, pinned_decision
from tokenscale.scaling.forecast import (
    DEFAULT_LEAD_TIME_S,
    Outlook,
    RateForecast,
    outlook,
    update,
)
from tokenscale.scaling.policy import bounded, hold_blind, transition
from tokenscale.scaling.role_calibration import role_calibration
from tokenscale.scaling.signals import (
    MAX_LOAD_RATIO,
    PEAK_HALF_LIFE_WINDOWS,
    as_attainment,
    blindness,
    judged,
)
from tokenscale.scaling.snapshot import Snapshot
from tokenscale.scaling.state import ScalingState
from tokenscale.scaling.traffic import idle_floor, is_idle

ROLES = ("prefill", "decode")
PROMPT_LOAD_HIGH = 1.0
"""``prompt_load`` at the plan's operating point (the prefill pool's planned utilisation)."""
BUCKETS_OF = {"prefill_ttft_p99_s": "ttft_p99_s"}
"""Which histogram's buckets a role's latency signal is read from."""
ROLE_LOAD_SIGNALS = ("waiting_per_replica", "prompt_load", "kv_usage", "running_per_replica")


class RolesDecision(BaseModel):
    """One decision per role, and what the coordination rule did."""

    model_config = ConfigDict(frozen=True)

    prefill: Decision
    decode: Decision
    ratio_planned: float | None
    coordination: str
    """What the rule did, in numbers (``"within band"`` when it did nothing)."""

    def of(self, role: str) -> Decision:
        return self.prefill if role == "prefill" else self.decode


def pools(plan: Plan) -> tuple[Disaggregation, RolePool, RolePool]:
    """The plan's disaggregation and its two pools (``ValueError`` for a one-pool plan)."""
    d, pair = plan.disaggregation, plan.role_pools
    if d is None or pair is None:
        raise ValueError(f"plan {plan.name!r} is not disaggregated")
    return d, *pair


def _signal(
    name: str,
    value: float | None,
    high: float,
    low: float,
    n: int,
    latency: bool,
    idle: bool,
) -> Signal:
    """A role's reading judged as one pool's are (``signals.judged``); a latency reading
    is high only when its whole bucket is over the SLO: one straddling it says nothing."""
    histogram = BUCKETS_OF.get(name, name)
    s = judged(name, value, high, low, n, idle, latency, histogram)
    bounds = BOUNDS.get(histogram)
    if not (latency and s.level == "high" and bounds is not None and value is not None):
        return s
    lower, upper = bucket_range(value, bounds)
    if lower >= high:
        return s
    straddles = f" (bucket ({lower:g}, {upper:g}] straddles {high:.3g})"
    return s.model_copy(
        update={
            "level": "normal",
            "replicas": n,
            "reason": f"{name} {value:.3g}{straddles} (high {high:g})",
        }
    )


def prefill_waiting_watermarks(
    spec: InferenceServiceSpec, utilization: float
) -> tuple[float, float]:
    """(high, low) prompts waiting per prefill engine. The plan runs a prefill engine at
    ``utilization`` ρ and its TTFT estimate allows a queue of ``ρ / (1 − ρ)`` mean prefills
    (``planning/disaggregation.py``, the M/M/1 allowance): 4 prompts at the usual ρ = 0.8, where
    the one-pool default of 2 reads the planned operating point as pressure. So the high
    watermark is the larger of ``waitingPerReplicaHigh`` and that allowance, and the low one is
    ``waitingPerReplicaLow`` scaled by the same factor."""
    policy = spec.scaling.policy
    high, low = policy.waiting_per_replica_high, policy.waiting_per_replica_low
    rho = min(max(utilization, 0.0), 0.99)
    planned = rho / (1.0 - rho)
    if planned <= high:
        return high, low
    return planned, low * planned / high


def role_signals(role: str, snap: Snapshot, spec: InferenceServiceSpec, plan: Plan) -> list[Signal]:
    """The role's pressure signals (see the module docstring), its latency read as attainment
    from the role's own buckets as for one pool (``signals.as_attainment``)."""
    out = _role_signals(role, snap, spec, plan)
    load_high = any(s.level == "high" for s in out if s.name in ROLE_LOAD_SIGNALS)
    budget = 1.0 - spec.scaling.target_attainment
    n = max(snap.replicas_reporting, 1)
    counts = {"prefill_ttft_p99_s": snap.ttft_buckets, "tpot_p99_s": snap.tpot_buckets}
    return [
        as_attainment(
            s, n, s.high, counts[s.name], budget, load_high, BOUNDS[BUCKETS_OF.get(s.name, s.name)]
        )
        if s.name in counts
        else s
        for s in out
    ]


def _role_signals(
    role: str, snap: Snapshot, spec: InferenceServiceSpec, plan: Plan
) -> list[Signal]:
    d, prefill, decode = pools(plan)
    policy = spec.scaling.policy
    n = max(snap.replicas_reporting, 1)
    idle = is_idle(snap)
    low_ratio = policy.latency_low_ratio
    waiting = None if snap.waiting is None else snap.waiting / n
    out: list[Signal] = []
    if role == "prefill":
        slo = spec.slo.ttft_p99_seconds
        transfer = d.kv_transfer_s or 0.0
        if slo is not None and slo > transfer:
            budget = slo - transfer
            out.append(
                _signal(
                    "prefill_ttft_p99_s", snap.ttft_p99_s, budget, budget * low_ratio, n, True, idle
                )
            )
        w_high, w_low = prefill_waiting_watermarks(spec, prefill.operating_point)
        out.append(_signal("waiting_per_replica", waiting, w_high, w_low, n, False, idle))
        capacity = prefill.rps_per_replica * spec.workload.input_tokens.mean * n
        load = None if snap.prompt_tps is None or capacity <= 0 else snap.prompt_tps / capacity
        low = PROMPT_LOAD_HIGH * policy.kv_low_watermark / policy.kv_high_watermark
        out.append(_signal("prompt_load", load, PROMPT_LOAD_HIGH, low, n, False, idle))
        return out
    slo = spec.slo.tpot_p99_seconds
    if slo is not None:
        out.append(_signal("tpot_p99_s", snap.tpot_p99_s, slo, slo * low_ratio, n, True, idle))
    out.append(
        _signal(
            "kv_usage",
            snap.kv_usage_fleet,
            policy.kv_high_watermark,
            policy.kv_low_watermark,
            n,
            False,
            idle,
        )
    )
    batch = max(decode.operating_point, 1.0)
    running = None if snap.running is None else snap.running / n
    low = batch * policy.kv_low_watermark / policy.kv_high_watermark
    out.append(_signal("running_per_replica", running, batch, low, n, False, idle))
    return out


def binding_rps_per_replica(pool: RolePool, spec: InferenceServiceSpec) -> float:
    """A replica's requests/s at the plan's binding constraint: the design rate over the
    replicas the pool needs (``replicas_needed``: the largest of its throughput, concurrency
    and KV constraints), at most ``rps_per_replica`` (the operating point's own rate, which
    is the throughput constraint's). A decode pool bound by its KV carries less than its
    batch's rate: the L4 playground's plans 2 decode replicas for 1 RPS (needed 1.46, KV)
    at 1.01 RPS per replica by the batch, 0.68 by the KV."""
    rate = pool.rps_per_replica
    design = spec.workload.rps.design_rps
    if pool.replicas_needed > 0 and design > 0:
        rate = min(rate, design / pool.replicas_needed)
    return rate


def role_rate_per_replica(
    role: str,
    snap: Snapshot,
    spec: InferenceServiceSpec,
    plan: Plan,
    calibration: float = 1.0,
) -> float:
    """A replica's requests/s for ``role``: the plan's at its binding constraint
    (:func:`binding_rps_per_replica`), rescaled to the observed mean prompt (prefill) or answer
    (decode) where the snapshot has one, × the role's calibration
    (``scaling/role_calibration.py``). The observed length counts as ``workloadSource`` says,
    as for one pool (``scaling/need.py``): ``observed`` as it is, ``max`` (the default) no
    shorter than the spec's, ``forecast`` not at all."""
    _, prefill, decode = pools(plan)
    if role == "prefill":
        planned, observed = spec.workload.input_tokens.mean, snap.mean_input_tokens
        rate = binding_rps_per_replica(prefill, spec)
    else:
        planned, observed = spec.workload.output_tokens.mean, snap.mean_output_tokens
        rate = binding_rps_per_replica(decode, spec)
    source = spec.scaling.policy.workload_source
    if observed is None or observed <= 0 or source == "forecast":
        return rate * calibration
    if source == "max":
        observed = max(observed, planned)
    return rate * planned / observed * calibration


def _with_redundancy(need: float, spec: InferenceServiceSpec) -> int:
    r = spec.scaling.redundancy
    return math.ceil(need * r.factor - 1e-9) + r.spare_replicas


def _peak(
    state: ScalingState, sigs: list[Signal], reporting: int, now: float, spec: InferenceServiceSpec
) -> float:
    """``max(decayed previous peak, max(value / high) × replicas reporting)`` over the role's
    load signals (``scaling/signals.py``'s ``peak_load``)."""
    ratios = [
        min(s.value / s.high, MAX_LOAD_RATIO)
        for s in sigs
        if s.value is not None and s.name in ROLE_LOAD_SIGNALS
    ]
    now_load = float(max(ratios, default=0.0)) * max(reporting, 1)
    if state.peak_at_s is None:
        return now_load
    window = spec.scaling.policy.scale_down_stabilization_seconds
    half_life = max(60.0, PEAK_HALF_LIFE_WINDOWS * window)
    faded = state.peak_load * math.pow(0.5, max(0.0, now - state.peak_at_s) / half_life)
    return max(now_load, faded)


def decide_role(
    role: str,
    spec: InferenceServiceSpec,
    plan: Plan,
    snap: Snapshot | None,
    state: ScalingState,
    now: float,
    interval_s: float,
    lead_time_s: float | None,
    stale_after_s: float,
    floor: int = 0,
    floor_why: str = "",
) -> Decision:
    """One role's decision on its own snapshot; ``floor``: the count coordination asks the
    role's model for at least (``floor_why`` says why)."""
    _, prefill, decode = pools(plan)
    pool = prefill if role == "prefill" else decode
    planned = pool.replicas
    current = bounded(
        state.decided_replicas if state.decided_replicas is not None else planned, spec
    )
    if spec.scaling.replicas is not None:
        return pinned_decision(spec.scaling.replicas, snap is not None, state)
    blind = blindness(snap, now, stale_after_s, f"the {role} role")
    if blind is not None:
        held = bounded(max(current, planned), spec)
        why = (
            f"{role} metrics unavailable ({blind}): holding {held} (last decision {current}, "
            f"planned {planned}); never scaling down blind"
        )
        return hold_blind(state, held, why, blind)
    assert snap is not None
    sigs = role_signals(role, snap, spec, plan)
    # the role's engines against its own timing model: one factor per role, in its own memory
    fresh = state.peak_at_s is None
    key = "prefill_calibration" if role == "prefill" else "calibration"
    start = 1.0 if fresh else float(getattr(state, key))
    factor = role_calibration(role, spec, plan, snap, start, max(0.0, interval_s))
    need, binding, rate, look = _role_need(
        role, spec, plan, snap, state, factor, now, interval_s, lead_time_s
    )
    source = spec.scaling.policy.workload_source
    model = bounded(_with_redundancy(need, spec), spec)
    if is_idle(snap) and source != "forecast":
        model = idle_floor(spec)
    if floor > model:
        model, binding = bounded(floor, spec), floor_why
    peak = _peak(state, sigs, snap.replicas_reporting, now, spec)
    burst = floor_in_force(state, spec, now)  # this role's own memory of bursts
    step = transition(spec, state, current, model, binding, sigs, peak, now, burst)
    needed = step.replicas if step.cause in (Cause.PRESSURE, Cause.MODEL_NEED) else None
    new_state = state.model_copy(
        update={
            "peak_load": peak,
            "peak_at_s": now,
            "rate": rate,
            key: factor,
            **step.memory,
            **remembered(state, spec, now, needed),
            "decided_replicas": step.replicas,
        }
    )
    return Decision(
        replicas=step.replicas,
        source="metrics",
        reason=step.reason(current),
        cause=step.cause,
        why=step.why,
        signals=sigs,
        model_replicas=model,
        calibration=factor if role == "decode" else 1.0,
        prefill_calibration=factor if role == "prefill" else 1.0,
        metrics_available=True,
        metrics_reason="ok",
        outlook=look,
        state=new_state,
    )


def _role_need(
    role: str,
    spec: InferenceServiceSpec,
    plan: Plan,
    snap: Snapshot,
    state: ScalingState,
    factor: float,
    now: float,
    interval_s: float,
    lead_time_s: float | None,
) -> tuple[float, str, RateForecast | None, Outlook | None]:
    """The role's need in replicas before redundancy, what binds it, the arrival rate's new
    memory and the outlook: the expected rate with its burst headroom ÷ a replica's rate;
    decode's running requests at the operating point; the forecast as a floor unless
    ``workloadSource: observed``."""
    per_replica = role_rate_per_replica(role, snap, spec, plan, factor)
    binding = f"{role} throughput"
    need = 0.0
    rate = state.rate
    look = None
    arrival = snap.arrival_rps
    if arrival is not None:
        rate = update(state.rate, arrival, now, snap.rate_window_s)
        look = outlook(
            rate, arrival, lead_time_s, max(0.0, interval_s), per_replica, snap.rate_window_s
        )
        need = look.expected_rps * look.burst_headroom / per_replica if per_replica > 0 else 0.0
    _, _, decode = pools(plan)
    if role == "decode" and snap.running is not None:
        concurrency = snap.running / max(decode.operating_point, 1.0)
        if concurrency > need:
            need, binding = concurrency, "decode concurrency"
    source = spec.scaling.policy.workload_source
    design = spec.workload.rps.design_rps
    if source != "observed" and per_replica > 0 and design / per_replica > need:
        # the forecast is a floor (workloadSource max or forecast), as for one pool
        # (scaling/need.py): a quiet spell does not take the role below what the spec's rate
        # needs, so a return to that rate does not find the role a cold start behind
        need = design / per_replica
        binding = f"{role} at the spec's {design:g} RPS (workloadSource {source})"
    return need, binding, rate, look


def band(ratio: float | None) -> tuple[float, float] | None:
    """The prefill ÷ decode ratios the coordination keeps (None: the plan has no ratio)."""
    if ratio is None or ratio <= 0:
        return None
    return ratio / RATIO_SLACK, ratio * RATIO_SLACK


def flow_floor(
    prefill_snap: Snapshot | None,
    decode_rate_per_replica: float,
    decode_snap: Snapshot | None = None,
    horizon_s: float | None = None,
) -> int:
    """Decode replicas that carry the prefill pool's output (prompts finished there per
    second) and, within ``horizon_s``, the prompts queued at both pools (waiting for a
    prefill engine, or prefilled and waiting for decode KV): every one of them reaches the
    decode pool, ÷ a decode replica's requests per second (0 when unknown)."""
    if decode_rate_per_replica <= 0:
        return 0
    out = 0.0
    if prefill_snap is not None and prefill_snap.request_rate_rps is not None:
        out = max(prefill_snap.request_rate_rps, 0.0)
    if horizon_s is not None and horizon_s > 0:
        queued = sum(s.waiting or 0.0 for s in (prefill_snap, decode_snap) if s is not None)
        out += queued / horizon_s
    if out <= 0:
        return 0
    return math.ceil(out / decode_rate_per_replica - 1e-9)


def backlog_floor(
    spec: InferenceServiceSpec,
    plan: Plan,
    prefill_snap: Snapshot | None,
    prefill_state: ScalingState,
    prefill_replicas: int,
    decode_rate_per_replica: float,
    decode_snap: Snapshot | None,
) -> int:
    """Decode replicas that carry what a backlogged prefill pool is about to send: while
    prompts wait at the prefill pool over its high watermark (:func:`prefill_waiting_watermarks`),
    each of its ``prefill_replicas`` engines (the count just decided) prefills at its planned
    rate until the queue is gone, and every prompt it finishes goes to decode. So decode needs
    ``ceil(prefill_replicas × prefill rate ÷ decode rate)`` now, not once the prefill pool's
    output (a rate over the last minutes) has caught up: a step that fills the prefill queue
    does not find the decode pool a second cold start behind. 0 without a backlog, and 0 while
    the decode pool's KV usage is under ``kvLowWatermark`` (or unread): a decode pool with that
    much room takes the burst and its own signals follow."""
    if prefill_snap is None or prefill_snap.waiting is None or decode_rate_per_replica <= 0:
        return 0
    kv = None if decode_snap is None else decode_snap.kv_usage_fleet
    if kv is None or kv < spec.scaling.policy.kv_low_watermark:
        return 0
    reporting = prefill_snap.replicas_reporting
    _, prefill, _ = pools(plan)
    high, _ = prefill_waiting_watermarks(spec, prefill.operating_point)
    if reporting <= 0 or prefill_snap.waiting / reporting < high:
        return 0
    factor = 1.0 if prefill_state.peak_at_s is None else prefill_state.prefill_calibration
    rate = role_rate_per_replica("prefill", prefill_snap, spec, plan, factor)
    return math.ceil(prefill_replicas * rate / decode_rate_per_replica - 1e-9)


def coordinate(
    prefill: int, decode: int, ratio: float | None, spec: InferenceServiceSpec
) -> tuple[int, int, str]:
    """Raise the lagging role until ``prefill ÷ decode`` is inside :func:`band` or the raised
    role reaches ``maxReplicas``; never lowers either. ``(prefill, decode, what it did)``."""
    limits = band(ratio)
    if limits is None:
        return prefill, decode, "no planned ratio"
    lo, hi = limits
    p, d = prefill, decode
    for _ in range(8):  # monotone and bounded: a few rounds reach the fixed point
        want_d = bounded(max(d, math.ceil(p / hi - 1e-9)), spec)
        want_p = bounded(max(p, math.ceil(lo * want_d - 1e-9)), spec)
        if (want_p, want_d) == (p, d):
            break
        p, d = want_p, want_d
    parts = []
    if d > decode:
        parts.append(f"decode raised {decode}→{d}")
    if p > prefill:
        parts.append(f"prefill raised {prefill}→{p}")
    inside = lo - 1e-9 <= p / max(d, 1) <= hi + 1e-9
    where = f"prefill ÷ decode {p}/{d} = {p / max(d, 1):.2f}, band [{lo:.2f}, {hi:.2f}]"
    if parts:
        tail = "" if inside else " (still outside: at maxReplicas)"
        return p, d, f"{', '.join(parts)} to keep {where}{tail}"
    if not inside:
        return p, d, f"{where}: outside, at maxReplicas"
    return p, d, f"within band: {where}"


def decide_roles(
    spec: InferenceServiceSpec,
    plan: Plan,
    snaps: Mapping[str, Snapshot | None],
    states: Mapping[str, ScalingState],
    now: float,
    interval_s: float,
    lead_time_s: float | None,
    stale_after_s: float = 120.0,
) -> RolesDecision:
    """Both roles' decisions on their own snapshots, then the coordination rule."""
    d, prefill_pool, decode_pool = pools(plan)
    limits = band(d.ratio)
    planned = {"prefill": prefill_pool, "decode": decode_pool}
    counts: dict[str, int] = {}
    for role in ROLES:
        held = states[role].decided_replicas
        counts[role] = held if held is not None else planned[role].replicas
    p_now, d_now = counts["prefill"], counts["decode"]
    p_floor = d_floor = 0
    p_why = d_why = ""
    if limits is not None:
        lo, hi = limits
        p_floor = math.ceil(lo * d_now - 1e-9)
        p_why = f"ratio band: ≥ {lo:.2f} × {d_now} decode"
        d_floor = math.ceil(p_now / hi - 1e-9)
        d_why = f"ratio band: ≥ {p_now} prefill ÷ {hi:.2f}"
    decode_snap = snaps.get("decode")
    rate_d = (
        role_rate_per_replica("decode", decode_snap, spec, plan, states["decode"].calibration)
        if decode_snap is not None
        else binding_rps_per_replica(decode_pool, spec)
    )

    lead = DEFAULT_LEAD_TIME_S if lead_time_s is None else max(0.0, lead_time_s)
    flow = flow_floor(snaps.get("prefill"), rate_d, decode_snap, lead + max(0.0, interval_s))
    if flow > d_floor:
        d_floor, d_why = (
            flow,
            f"prefill output and queued prompts: {flow} decode replicas carry them",
        )
    args = (now, interval_s, lead_time_s, stale_after_s)
    prefill_snap = snaps.get("prefill")
    one = {
        "prefill": decide_role(
            "prefill", spec, plan, prefill_snap, states["prefill"], *args, p_floor, p_why
        )
    }
    # decided after prefill: a backlogged prefill pool's new count is decode's next input
    backed = backlog_floor(
        spec, plan, prefill_snap, states["prefill"], one["prefill"].replicas, rate_d, decode_snap
    )
    if backed > d_floor:
        d_floor, d_why = (
            backed,
            f"prefill backlogged: {one['prefill'].replicas} prefill engines at their planned rate "
            f"feed {backed} decode replicas",
        )
    one["decode"] = decide_role(
        "decode", spec, plan, snaps.get("decode"), states["decode"], *args, d_floor, d_why
    )
    pinned = spec.scaling.replicas is not None
    if pinned:
        return RolesDecision(
            prefill=one["prefill"],
            decode=one["decode"],
            ratio_planned=d.ratio,
            coordination="pinned: both roles run spec.scaling.replicas",
        )
    p, dd, said = coordinate(one["prefill"].replicas, one["decode"].replicas, d.ratio, spec)
    out = {
        role: _raised(one[role], to, counts[role], said, now)
        for role, to in (("prefill", p), ("decode", dd))
    }
    return RolesDecision(
        prefill=out["prefill"], decode=out["decode"], ratio_planned=d.ratio, coordination=said
    )


def _raised(dec: Decision, to: int, was: int, said: str, now: float) -> Decision:
    """One role's decision raised to ``to`` by the coordination (as it is when not raised)."""
    if to <= dec.replicas:
        return dec
    why = f"coordination: {said}"
    return dec.model_copy(
        update={
            "replicas": to,
            "cause": Cause.RATIO,
            "why": why,
            "reason": f"scale up {was}→{to}: {why}" if to > was else f"hold {to}: {why}",
            "state": dec.state.model_copy(
                update={"decided_replicas": to, "last_scale_s": now, "low_since_s": None}
            ),
        }
    )
