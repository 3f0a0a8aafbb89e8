"""PURE decision engine: (spec, forecast plan, snapshot, state, now) → Decision.

- **Model**: re-plan with the observed workload (default ``max(forecast, observed)`` RPS and
  token means; the rate is requests reaching their first token, the output length that of
  finished requests) and the calibrated efficiencies; the three constraints track real
  traffic. The count is multiplied by the **SLO headroom** learned from breaches
  (``scaling/headroom.py``: ×1.2 per breach, once per 240 s, ≤ 2; decays with a 30-minute
  half-life while every latency signal reads low), so bursts too short for any pod start are
  met by a standing fleet rather than chased.
- **Pressure, fast up**: KV usage ≥ high watermark, waiting per replica ≥ threshold, TTFT P99 >
  SLO or TPOT P99 > SLO each recommend ``ceil(n × value / threshold)`` replicas for the
  ``n`` replicas that report; the largest wins, at most ``maxScaleUpStep`` more at once.
  A queue seen for the first time that the fleet's spare capacity clears before a new
  replica could be Ready (the lead time) is a burst: the queue reads ``normal`` (a queue seen
  at two decisions in a row, or one that cannot drain in time, is pressure). The KV reading
  is judged on its own, so a queue on top of a full cache never asks for fewer replicas.
  Pressure is measured on reporting (ready) replicas while the decision is compared with
  the replicas already asked for, so pods that are still loading count as supply.
- **Careful down**: only when every signal has stayed below its low watermark for the
  stabilisation window, the model asks for fewer, and the recent peak load would still fit
  under the high watermarks at the smaller count (``peak_load / target < scaleDownHeadroom``,
  0.9 by default, where
  ``peak_load = max(value / high) × replicas reporting`` decays with a half-life of two
  windows): a quiet spell inside a noisy but stationary load cannot trigger a step that the
  noise would undo; ``maxScaleDownStep`` at a time, never below ``minReplicas`` or the model;
  the window restarts after each step.
- **Never blind**: no snapshot, missing core signals or stale samples → hold the operator's own
  last decision, never below the forecast plan, never down; ``metrics_available`` False.
"""

import math

from pydantic import BaseModel, ConfigDict

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.scaling import ScalingPolicy
from tokenscale.api.workload import TokenDistribution, Workload
from tokenscale.planning import (
    Calibration,
    Conditions,
    Plan,
    Resolved,
    layout_of,
    perf_at,
    plan_at,
    resolve,
)
from tokenscale.planning.measured import measured_point
from tokenscale.scaling.buckets import reads_low
from tokenscale.scaling.decision import Decision, Signal
from tokenscale.scaling.diagnosis import diagnose
from tokenscale.scaling.forecast import DEFAULT_LEAD_TIME_S, Outlook, outlook, update
from tokenscale.scaling.headroom import Backlog, backlog_of, decayed, raised
from tokenscale.scaling.snapshot import Snapshot
from tokenscale.scaling.state import ScalingState
from tokenscale.scaling.traffic import idle_floor, is_idle

CALIBRATION_BOUNDS = (0.5, 1.5)
CALIBRATION_SMOOTHING = 0.3
MAX_LOAD_RATIO = 2.0
MAX_LATENCY_RATIO = 1.2
SCALE_DOWN_STEP_S = 120.0
PEAK_HALF_LIFE_WINDOWS = 2.0
LOAD_SIGNALS = ("kv_usage", "waiting_per_replica")
LATENCY_SIGNALS = ("ttft_p99_s", "tpot_p99_s")


class EngineInput(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    spec: InferenceServiceSpec
    forecast: Plan
    snapshot: Snapshot | None
    state: ScalingState
    now_s: float
    stale_after_s: float = 120.0
    lead_time_s: float | None = None
    """Measured creation→Ready time of this service's pods; None until one has started."""
    interval_s: float = 15.0
    """The time between decisions (the operator's resync interval)."""


def _bounded(replicas: int, spec: InferenceServiceSpec) -> int:
    s = spec.scaling
    return min(max(replicas, s.min_replicas), s.max_replicas)


def observed_workload(w: Workload, snap: Snapshot, source: str) -> Workload:
    """The workload the metrics show, per ``workloadSource``: ``observed`` (the metrics), ``max``
    (the larger of forecast and observed, per quantity) or ``forecast`` (the spec's)."""
    if source == "forecast" or snap.arrival_rps is None:
        return w
    observed_rps = snap.arrival_rps
    in_mean = snap.mean_input_tokens or w.input_tokens.mean
    out_mean = snap.mean_output_tokens or w.output_tokens.mean
    if source == "max":
        observed_rps = max(observed_rps, w.rps.design_rps)
        in_mean = max(in_mean, w.input_tokens.mean)
        out_mean = max(out_mean, w.output_tokens.mean)
    return w.model_copy(
        update={
            "rps": w.rps.model_copy(
                update={"mean": observed_rps, "peak": None, "burst_factor": None}
            ),
            "input_tokens": w.input_tokens.model_copy(
                update={
                    "mean": in_mean,
                    "p99": max(in_mean, w.input_tokens.p99_or_mean),
                    "p95": None,
                }
            ),
            "output_tokens": w.output_tokens.model_copy(
                update={
                    "mean": out_mean,
                    "p99": max(out_mean, w.output_tokens.p99_or_mean),
                    "p95": None,
                }
            ),
        }
    )


def live_conditions(
    spec: InferenceServiceSpec, snap: Snapshot, factor: float, prefill_factor: float | None = None
) -> Conditions:
    """The engine's question to the planner: the observed workload (per ``workloadSource``),
    the calibrated engines, sized at the SLO batch.

    Live, replicas are sized at the SLO batch, not the knee: the knee is the forecast's comfort
    margin for traffic nobody has seen; with live traffic the pressure signals guard the SLO and
    the knee would hold ~20 % more GPUs than needed (measured by the fleet simulator). Without an
    SLO the knee stays the only latency limit. Calibration is per phase: decode from the exact
    TPOT mean, prefill from the exact prefill phase (TTFT mean − queue mean); without a prefill
    factor the decode one stands for both.
    """
    workload = observed_workload(spec.workload, snap, spec.scaling.policy.workload_source)
    prefill = factor if prefill_factor is None else prefill_factor
    return Conditions(
        workload=workload, calibration=Calibration(prefill=prefill, decode=factor), knee="slo"
    )


def _smoothed(old: float, ratio: float) -> float:
    """One calibration step: the predicted/observed ratio, bounded, blended into the old
    factor (EWMA), bounded again."""
    lo, hi = CALIBRATION_BOUNDS
    bounded = min(max(ratio, lo), hi)
    smoothed = old * (1 - CALIBRATION_SMOOTHING) + bounded * CALIBRATION_SMOOTHING
    return round(min(max(smoothed, lo), hi), 4)


def calibrate(r: Resolved, forecast: Plan, snap: Snapshot, old: float) -> float:
    """Smoothed, bounded ratio of predicted to observed TPOT at the observed batch.

    Observed: the exact mean (histogram sum ÷ count) where Prometheus has it, else the P50
    from buckets (up to ±25 % off inside vLLM's 25 ms TPOT buckets — enough to make the model
    think correct engines slow). Predicted: the model at the TP the fleet runs, the observed
    batch *and* the observed token means (the forecast's means would blame a workload change on
    the engines). The batch is the one of the window the TPOT comes from, by Little's law
    (generated tokens per second per replica × TPOT), not the running gauge of this instant:
    right after a step the gauge shows the new batch while the window's requests decoded at
    the old one, and the engines would look faster (or, after a scale-up, slower) than they
    are. Without a token rate the gauge stands in.
    """
    spec = r.spec
    observed = snap.tpot_mean_s if snap.tpot_mean_s is not None else snap.tpot_p50_s
    if not spec.scaling.policy.calibrate or observed is None or snap.running is None:
        return old
    n = max(snap.replicas_reporting, 1)
    batch = snap.running / n
    if snap.generation_tps is not None and snap.generation_tps > 0 and observed > 0:
        batch = snap.generation_tps / n * observed
    if batch < 1 or observed <= 0:
        return old
    seen = Conditions(workload=observed_workload(spec.workload, snap, "observed"))
    predicted = perf_at(r, seen, layout_of(forecast)).tpot_seconds(batch)
    return _smoothed(old, predicted / observed)


PREFILL_QUEUE_LIMIT = 1.0
"""Waiting prompts per replica above which the prefill phase is not measured cleanly."""


def calibrate_prefill(r: Resolved, forecast: Plan, snap: Snapshot, old: float) -> float:
    """Smoothed, bounded ratio of predicted to observed prefill phase (TTFT − queue wait, both
    exact means) at the observed batch and prompt mean; unchanged while the queue is long (its
    wait dominates and the split is noisy) or a mean is missing."""
    spec = r.spec
    if (
        not spec.scaling.policy.calibrate
        or snap.ttft_mean_s is None
        or snap.queue_mean_s is None
        or snap.running is None
        or snap.mean_input_tokens is None
    ):
        return old
    n = max(snap.replicas_reporting, 1)
    if snap.waiting is not None and snap.waiting / n > PREFILL_QUEUE_LIMIT:
        return old
    observed = snap.ttft_mean_s - snap.queue_mean_s
    if observed <= 0:
        return old
    seen = Conditions(workload=observed_workload(spec.workload, snap, "observed"))
    perf = perf_at(r, seen, layout_of(forecast), forecast.max_num_batched_tokens)
    predicted = perf.own_ttft_seconds(snap.running / n, snap.mean_input_tokens)
    return _smoothed(old, predicted / observed)


def profile_calibration(r: Resolved, forecast: Plan) -> float:
    """Where calibration starts when a bench profile applies: predicted ÷ measured TPOT P50 at
    the measured operating concurrency and token means (bounded); 1 without one."""
    spec = r.spec
    point = measured_point(spec.profile, spec.slo, forecast.tensor_parallel_size, forecast.gpu, [])
    if point is None or not point.step.tpot_p50_seconds:
        return 1.0
    w = spec.workload
    step = point.step
    measured = Conditions(
        workload=w.model_copy(
            update={
                "input_tokens": TokenDistribution(mean=step.input_tokens_mean),
                "output_tokens": TokenDistribution(mean=step.output_tokens_mean),
            }
        )
    )
    predicted = perf_at(r, measured, layout_of(forecast)).tpot_seconds(point.concurrency)
    ratio = predicted / point.step.tpot_p50_seconds
    return round(min(max(ratio, CALIBRATION_BOUNDS[0]), CALIBRATION_BOUNDS[1]), 4)


def signals(
    snap: Snapshot,
    spec: InferenceServiceSpec,
    policy: ScalingPolicy,
    backlog: Backlog | None = None,
) -> list[Signal]:
    """Every pressure signal with its level and the replicas it recommends. With ``backlog``
    (the fleet's drain estimate), a queue that drains before a new replica could start and
    was not seen at the previous decision reads ``normal`` (``scaling/headroom.py``)."""
    n = max(snap.replicas_reporting, 1)
    idle = is_idle(snap)
    out: list[Signal] = []

    def add(
        name: str,
        value: float | None,
        high: float | None,
        low: float | None,
        latency: bool = False,
    ) -> None:
        if high is None:
            return
        if value is None:
            # no request finished, none in flight: an empty histogram window is no traffic
            empty = latency and idle
            out.append(
                Signal(
                    name=name,
                    value=None,
                    high=high,
                    low=low or 0.0,
                    level="low" if empty else "missing",
                    replicas=n,
                    reason=f"{name}: idle (no requests in the window)"
                    if empty
                    else f"{name}: no data",
                )
            )
            return
        level = (
            "high" if value >= high else ("low" if low is not None and value < low else "normal")
        )
        honest = ""
        if latency and level == "normal" and low is not None:
            is_low, honest = reads_low(name, value, low, high)
            level = "low" if is_low else level
        rec = n
        if level == "high":
            # the ratio is capped: past saturation a queue measures backlog, not load (it would
            # ask for dozens at once), and latency neither scales with replicas nor is current
            # (its P99 lags by the rate window): at most ×2 for load, ×1.2 for latency
            cap = MAX_LATENCY_RATIO if latency else MAX_LOAD_RATIO
            rec = max(n + 1, math.ceil(n * min(value / high, cap) - 1e-9))
        out.append(
            Signal(
                name=name,
                value=value,
                high=high,
                low=low or 0.0,
                level=level,
                replicas=rec,
                reason=(
                    f"{name} {value:.3g} ≥ {high:g} on {n} reporting"
                    if level == "high"
                    else f"{name} {value:.3g}{honest} (high {high:g})"
                ),
            )
        )

    waiting = None if snap.waiting is None else snap.waiting / n
    add("kv_usage", snap.kv_usage_max, policy.kv_high_watermark, policy.kv_low_watermark)
    add(
        "waiting_per_replica",
        waiting,
        policy.waiting_per_replica_high,
        policy.waiting_per_replica_low,
    )
    if backlog is not None and backlog.seen and backlog.transient:
        # the queue is one burst's: gone before a new replica is Ready. Only the queue: the KV
        # reading stands on its own (a full cache with no queue already asks for a replica,
        # and a queue on top of it is no reason to ask for fewer)
        for k, w in enumerate(out):
            if w.level == "high" and w.name == "waiting_per_replica":
                out[k] = w.model_copy(
                    update={
                        "level": "normal",
                        "replicas": n,
                        "reason": f"{w.name} {w.value:.3g}: a burst, drains in "
                        f"~{backlog.drain_s:.0f} s, before a new replica could start "
                        f"({backlog.lead_s:.0f} s)",
                    }
                )
    for name, value, slo in (
        ("ttft_p99_s", snap.ttft_p99_s, spec.slo.ttft_p99_seconds),
        ("tpot_p99_s", snap.tpot_p99_s, spec.slo.tpot_p99_seconds),
    ):
        if slo is not None:
            add(name, value, slo * (1 + 1e-9), slo * policy.latency_low_ratio, latency=True)
    return out


def decide(inp: EngineInput) -> Decision:
    spec, forecast, state, now = inp.spec, inp.forecast, inp.state, inp.now_s
    policy = spec.scaling.policy
    floor = forecast.sized.total
    # the last decision, within today's bounds (maxReplicas may have been lowered since)
    current = _bounded(
        state.decided_replicas if state.decided_replicas is not None else floor, spec
    )
    if spec.scaling.replicas is not None:
        pin = spec.scaling.replicas
        return Decision(
            replicas=pin,
            source="pin",
            reason=f"pinned by spec.scaling.replicas={pin}",
            metrics_available=inp.snapshot is not None,
            metrics_reason="pinned: metrics are reported, not acted on",
            state=state.model_copy(update={"decided_replicas": pin}),
        )
    snap = inp.snapshot
    blind = _blindness(snap, now, inp.stale_after_s)
    if blind is not None:
        held = _bounded(max(current, floor), spec)
        return Decision(
            replicas=held,
            source="hold",
            reason=f"metrics unavailable ({blind}): holding {held} (last decision {current}, "
            f"forecast floor {floor}); never scaling down blind",
            metrics_available=False,
            metrics_reason=blind,
            state=state.model_copy(
                update={"decided_replicas": held, "low_since_s": None, "pressure_since_s": None}
            ),
        )
    assert snap is not None
    resolved = resolve(spec, forecast.name)
    start = (
        state.calibration
        if state.peak_at_s is not None
        else profile_calibration(resolved, forecast)
    )
    factor = calibrate(resolved, forecast, snap, start)
    prefill_start = state.prefill_calibration if state.peak_at_s is not None else start
    prefill = calibrate_prefill(resolved, forecast, snap, prefill_start)
    live = plan_at(resolved, live_conditions(spec, snap, factor, prefill), layout_of(forecast))
    per_replica = live.rps_per_replica if live.replicas is not None else None
    lead_s = DEFAULT_LEAD_TIME_S if inp.lead_time_s is None else max(0.0, inp.lead_time_s)
    backlog = backlog_of(
        snap,
        per_replica,
        policy.waiting_per_replica_high,
        lead_s,
        state.backlog_at_s,
        now,
        inp.interval_s,
    )
    sigs = signals(snap, spec, policy, backlog)
    slo_room, raised_at = _slo_headroom(state, sigs, now)
    base = live.replicas.with_redundancy if live.replicas is not None else floor
    model = _bounded(math.ceil(base * slo_room - 1e-9), spec)
    if is_idle(snap) and policy.workload_source != "forecast":
        model = idle_floor(spec)  # no traffic is a fact: the forecast is not a floor for it
    rate = state.rate
    look: Outlook | None = None
    if snap.arrival_rps is not None:
        rate = update(state.rate, snap.arrival_rps, now)
        look = outlook(
            rate,
            snap.arrival_rps,
            inp.lead_time_s,
            inp.interval_s,
            None if per_replica is None else per_replica / slo_room,
        )
        if look.replicas is not None and look.replicas > model:
            model = _bounded(look.replicas, spec)  # the load expected one lead time ahead
    diagnosis = diagnose(snap, spec.slo, policy)
    high = [s for s in sigs if s.level == "high"]
    all_low = bool(sigs) and all(s.level == "low" for s in sigs)
    peak_load = _peak_load(state, sigs, snap.replicas_reporting, now, policy)
    new_state = state.model_copy(
        update={
            "calibration": factor,
            "prefill_calibration": prefill,
            "peak_load": peak_load,
            "peak_at_s": now,
            "rate": rate,
            "slo_headroom": slo_room,
            "slo_headroom_raised_s": raised_at,
            "backlog_at_s": now if backlog is not None and backlog.seen else None,
        }
    )
    up_cap = current + policy.max_scale_up_step

    if high or model > current:
        pressure_since = state.pressure_since_s if state.pressure_since_s is not None else now
        want = max([model, *(s.replicas for s in high)])
        if (
            high
            and now - pressure_since < policy.scale_up_stabilization_seconds
            and model <= current
        ):
            return _keep(
                look,
                current,
                "pressure not yet sustained",
                sigs,
                diagnosis,
                model,
                new_state.model_copy(update={"pressure_since_s": pressure_since}),
            )
        target = _bounded(min(max(want, current), up_cap), spec)
        why = (
            ", ".join(s.reason for s in high) or f"model needs {model} ({live.binding_constraint})"
        )
        state_out = new_state.model_copy(
            update={"pressure_since_s": pressure_since if high else None, "low_since_s": None}
        )
        if target > current:
            return _decided(
                look,
                target,
                f"scale up {current}→{target}: {why}",
                sigs,
                diagnosis,
                model,
                state_out.model_copy(update={"last_scale_s": now}),
            )
        return _keep(
            look, current, f"at maxReplicas or step: {why}", sigs, diagnosis, model, state_out
        )

    if all_low and model < current:
        low_since = state.low_since_s if state.low_since_s is not None else now
        waited = now - low_since
        if waited >= policy.scale_down_stabilization_seconds:
            target = _bounded(max(current - policy.max_scale_down_step, model), spec)
            projected = peak_load / max(target, 1)
            if target < current and projected >= policy.scale_down_headroom:
                return _keep(
                    look,
                    current,
                    f"the recent peak load ({peak_load:.2f} replicas at the high watermarks) "
                    f"would reach {projected:.2f} of them at {target} replicas "
                    f"(headroom {policy.scale_down_headroom:g})",
                    sigs,
                    diagnosis,
                    model,
                    new_state.model_copy(
                        update={"low_since_s": low_since, "pressure_since_s": None}
                    ),
                )
            if target < current:
                reason = (
                    f"scale down {current}→{target}: every signal low for {waited:.0f} s "
                    f"(≥ {policy.scale_down_stabilization_seconds} s) and the model needs {model}"
                )
                return _decided(
                    look,
                    target,
                    reason,
                    sigs,
                    diagnosis,
                    model,
                    new_state.model_copy(
                        update={
                            "last_scale_s": now,
                            # the next step needs one more rate window of low signals, not a
                            # whole stabilisation window: the dip has already proven itself
                            "low_since_s": now
                            - max(
                                0.0,
                                policy.scale_down_stabilization_seconds - SCALE_DOWN_STEP_S,
                            ),
                            "pressure_since_s": None,
                        }
                    ),
                )
        return _keep(
            look,
            current,
            f"all signals low for {waited:.0f} s of "
            f"{policy.scale_down_stabilization_seconds} s before scaling down",
            sigs,
            diagnosis,
            model,
            new_state.model_copy(update={"low_since_s": low_since, "pressure_since_s": None}),
        )
    return _keep(
        look,
        current,
        "signals within watermarks",
        sigs,
        diagnosis,
        model,
        new_state.model_copy(update={"low_since_s": None, "pressure_since_s": None}),
    )


def _slo_headroom(
    state: ScalingState, sigs: list[Signal], now: float
) -> tuple[float, float | None]:
    """The learned standing headroom after this decision's latency signals: raised on a
    breach, decayed while every latency signal reads low (``scaling/headroom.py``)."""
    latency = [s for s in sigs if s.name in LATENCY_SIGNALS]
    h, raised_at = state.slo_headroom, state.slo_headroom_raised_s
    if any(s.level == "high" for s in latency):
        return raised(h, raised_at, now)
    if latency and all(s.level == "low" for s in latency) and state.peak_at_s is not None:
        return decayed(h, now - state.peak_at_s), raised_at
    return h, raised_at


def _peak_load(
    state: ScalingState, sigs: list[Signal], reporting: int, now: float, policy: ScalingPolicy
) -> float:
    """``max(decayed previous peak, max(value / high) × replicas reporting)``."""
    ratios = [
        min(s.value / s.high, MAX_LOAD_RATIO)
        for s in sigs
        if s.value is not None and s.name in LOAD_SIGNALS
    ]
    now_load = float(max(ratios, default=0.0)) * max(reporting, 1)
    if state.peak_at_s is None:
        return now_load
    half_life = max(60.0, PEAK_HALF_LIFE_WINDOWS * policy.scale_down_stabilization_seconds)
    decayed = state.peak_load * math.pow(0.5, max(0.0, now - state.peak_at_s) / half_life)
    return max(now_load, decayed)


def _decided(
    look: Outlook | None,
    replicas: int,
    reason: str,
    sigs: list[Signal],
    diagnosis: list[str],
    model: int,
    state: ScalingState,
) -> Decision:
    """A decision made on fresh metrics (the engine's memory updated to it)."""
    return Decision(
        replicas=replicas,
        source="metrics",
        reason=reason,
        signals=sigs,
        diagnosis=diagnosis,
        model_replicas=model,
        calibration=state.calibration,
        prefill_calibration=state.prefill_calibration,
        metrics_available=True,
        metrics_reason="ok",
        outlook=look,
        state=state.model_copy(update={"decided_replicas": replicas}),
    )


def _keep(
    look: Outlook | None,
    current: int,
    why: str,
    sigs: list[Signal],
    diagnosis: list[str],
    model: int,
    state: ScalingState,
) -> Decision:
    return _decided(look, current, f"hold {current}: {why}", sigs, diagnosis, model, state)


def _blindness(snap: Snapshot | None, now: float, stale_after_s: float) -> str | None:
    if snap is None:
        return "no snapshot from the metrics source"
    if not snap.core_signals_present:
        why = "; ".join(snap.problems[:3]) or "no vLLM series for this service"
        return f"core signals missing: {why}"
    if snap.newest_sample_age_s is not None and snap.newest_sample_age_s > stale_after_s:
        return f"samples are {snap.newest_sample_age_s:.0f} s old (> {stale_after_s:.0f} s)"
    if now - snap.at > stale_after_s:
        return f"snapshot taken {now - snap.at:.0f} s ago"
    return None
