"""PURE: the pressure signals — each observed value against its watermarks, the replicas
it recommends — and the memory they feed (the recent peak load, the SLO headroom).

The fleet's KV usage (the engines' mean, ``Snapshot.kv_usage_fleet``) ≥ high watermark (with
the tokens it holds and the pool's tokens beside it), the engines' queue as the seconds its
work takes ≥ the queue that would push TTFT past its SLO
(``queue_s``, ``scaling/queue_work.py``; without a TTFT SLO or a timing model, waiting requests
per replica against ``waitingPerReplicaHigh/Low``), where the endpoint picker is read the
gateway's queue per replica, the pool's saturation ≥ 1 (the endpoint picker's flow control
holding requests), TTFT P99 > SLO or TPOT P99 > SLO each recommend
``max(n + 1, ceil(n × min(value / threshold, cap)))`` replicas for the ``n`` replicas that
report (the cap: ×2 for load, ×1.2 for latency). A queue seen for the first
time that the fleet's spare capacity clears before a new replica could be Ready reads
``normal`` (``scaling/headroom.py``); the KV reading is judged on its own. A latency signal
is read as attainment (``scaling/buckets.py``): high only when the share of requests surely
over its SLO is more than the error budget ``1 − spec.scaling.targetAttainment`` explains by
chance over the window's requests (``buckets.surely_over_budget``), or the load
signals confirm a possible breach; never on a P99 interpolated inside the SLO's own bucket.

With ``spec.lora``, ``lora_slot_wait`` is the share of LoRA engines whose queue waits for an
adapter slot (``metrics/lora.py``). It never asks for replicas itself (more replicas do not
free a slot; a larger ``spec.lora.maxLoras`` does) and reads ``normal`` while any engine is
slot-bound, so no scale-down happens over such a queue; when at least
:data:`LORA_SLOT_BOUND` of the engines are, the queue signal asks for one replica more, not for
its ratio: the queue measures adapter churn, not missing compute.
"""

import math
from collections.abc import Sequence

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.scaling import ScalingPolicy
from tokenscale.scaling.buckets import BOUNDS, BucketCounts, latency_breach, over_slo, reads_low
from tokenscale.scaling.decision import Signal
from tokenscale.scaling.headroom import Backlog, decayed, raised
from tokenscale.scaling.queue_work import QueueWork
from tokenscale.scaling.snapshot import Snapshot
from tokenscale.scaling.state import ScalingState
from tokenscale.scaling.traffic import is_idle

MAX_LOAD_RATIO = 2.0
MAX_LATENCY_RATIO = 1.2
PEAK_HALF_LIFE_WINDOWS = 2.0
POOL_SATURATED = 1.0
"""The endpoint picker's saturation at which its flow control starts holding requests."""
LORA_SLOT_BOUND = 0.5
"""Share of LoRA engines waiting for an adapter slot from which the queue is read as theirs."""
LOAD_SIGNALS = (
    "kv_usage",
    "queue_s",
    "waiting_per_replica",
    "gateway_queue_per_replica",
    "pool_saturation",
)
QUEUE_SIGNALS = ("queue_s", "waiting_per_replica")
"""The engines' own queue: as work (``queue_s``) or, without a TTFT SLO, as a count."""
LATENCY_SIGNALS = ("ttft_p99_s", "tpot_p99_s")


def signals(
    snap: Snapshot,
    spec: InferenceServiceSpec,
    policy: ScalingPolicy,
    backlog: Backlog | None = None,
    work: QueueWork | None = None,
    kv_capacity_tokens: float | None = None,
) -> list[Signal]:
    """Every pressure signal with its level and the replicas it recommends. With ``backlog``
    (the fleet's drain estimate), a queue that drains before a new replica could start and
    was not seen at the previous decision reads ``normal`` (``scaling/headroom.py``). With
    ``work`` the engines' queue is read as the time its work takes (``queue_s``), else as
    waiting requests per replica; ``kv_capacity_tokens`` (one engine's pool) puts the KV
    reading in tokens beside its share."""
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
        if high is not None:
            out.append(judged(name, value, high, low, n, idle, latency))

    waiting = None if snap.waiting is None else snap.waiting / n
    kv = snap.kv_usage_fleet
    add("kv_usage", kv, policy.kv_high_watermark, policy.kv_low_watermark)
    if kv_capacity_tokens is not None and kv_capacity_tokens > 0 and out:
        out[-1] = _in_tokens(out[-1], kv, kv_capacity_tokens)
    if work is not None:
        add("queue_s", work.queue_s, work.high_s, work.low_s)
        out[-1] = _as_work(out[-1], work)
    else:
        add(
            "waiting_per_replica",
            waiting,
            policy.waiting_per_replica_high,
            policy.waiting_per_replica_low,
        )
    if backlog is not None and backlog.seen and backlog.transient:
        _burst_reads_normal(out, backlog, n)
    if spec.lora is not None and snap.lora_engines:
        out.extend(lora_slot_signals(snap, out, n))
    if snap.gateway_queued is not None:
        # requests held at the gateway (the endpoint picker's flow control): load the engines
        # have not seen yet, judged per reporting replica like the engines' own queue
        add(
            "gateway_queue_per_replica",
            snap.gateway_queued / n,
            policy.waiting_per_replica_high,
            policy.waiting_per_replica_low,
        )
    if snap.pool_saturation is not None:
        # the endpoint picker holds requests at 1.0: the pool is full by its own measure
        add("pool_saturation", snap.pool_saturation, POOL_SATURATED, policy.kv_low_watermark)
    load_high = any(s.level == "high" for s in out if s.name in LOAD_SIGNALS)
    budget = 1.0 - spec.scaling.target_attainment
    for name, value, slo, counts in (
        ("ttft_p99_s", snap.ttft_p99_s, spec.slo.ttft_p99_seconds, snap.ttft_buckets),
        ("tpot_p99_s", snap.tpot_p99_s, spec.slo.tpot_p99_seconds, snap.tpot_buckets),
    ):
        if slo is not None:
            add(name, value, slo * (1 + 1e-9), slo * policy.latency_low_ratio, latency=True)
            out[-1] = as_attainment(out[-1], n, slo, counts, budget, load_high)
    return out


def judged(
    name: str,
    value: float | None,
    high: float,
    low: float | None,
    n: int,
    idle: bool,
    latency: bool = False,
    histogram: str | None = None,
) -> Signal:
    """One reading against its watermarks (module docstring) for the ``n`` replicas that
    report: its level and the replicas it recommends (``histogram``: the buckets a latency
    reading comes from, when they are not named ``name``)."""
    if value is None:
        # no request finished, none in flight: an empty histogram window is no traffic
        empty = latency and idle
        return Signal(
            name=name,
            value=None,
            high=high,
            low=low or 0.0,
            level="low" if empty else "missing",
            replicas=n,
            reason=f"{name}: idle (no requests in the window)" if empty else f"{name}: no data",
        )
    level = "high" if value >= high else ("low" if low is not None and value < low else "normal")
    honest = ""
    if latency and level == "normal" and low is not None:
        is_low, honest = reads_low(histogram or name, value, low, high)
        level = "low" if is_low else level
    rec = n
    if level == "high":
        # the ratio is capped: past saturation a queue measures backlog, not load (it would
        # ask for dozens at once), and latency neither scales with replicas nor is current
        # (its P99 lags by the rate window): at most ×2 for load, ×1.2 for latency
        cap = MAX_LATENCY_RATIO if latency else MAX_LOAD_RATIO
        rec = max(n + 1, math.ceil(n * min(value / high, cap) - 1e-9))
    return Signal(
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


def _in_tokens(kv: Signal, kv_usage: float | None, kv_capacity_tokens: float) -> Signal:
    """The KV reading with the tokens it holds and one engine's pool beside its share."""
    held = None if kv_usage is None else kv_usage * kv_capacity_tokens
    return kv.model_copy(
        update={
            "tokens": held,
            "capacity_tokens": kv_capacity_tokens,
            "basis": "the engines' mean share × the plan's KV pool per replica",
        }
    )


def _as_work(q: Signal, work: QueueWork) -> Signal:
    """The queue signal with its work: the tokens waiting, the prefill rate and how the
    seconds were worked out."""
    return q.model_copy(
        update={
            "tokens": work.waiting_tokens,
            "tokens_per_s": work.prefill_tps_per_replica,
            "basis": f"the larger of {work.waiting:g} waiting × "
            f"{work.prompt_tokens_mean:.0f} {work.prompt_source} prompt tokens ÷ "
            f"({work.replicas} × {work.prefill_tps_per_replica:.0f} tokens/s prefill, "
            f"calibrated planner) = {work.prefill_s:.3g} s and the admission "
            + (
                "(no start rate yet)"
                if work.admit_s is None
                else f"{work.waiting:g} ÷ the observed start rate = {work.admit_s:.3g} s"
            )
            + "; high: TTFT SLO − a mean prompt's own prefill",
            "reason": q.reason
            if q.level == "high"
            else f"queue_s {work.queue_s:.3g} s (high {work.high_s:.3g} s, low {work.low_s:.3g} s)",
        }
    )


def _burst_reads_normal(out: list[Signal], backlog: Backlog, n: int) -> None:
    """The queue is one burst's: gone before a new replica is Ready, so its high queue
    signals read ``normal``. Only the queue: the KV reading stands on its own (a full cache
    with no queue already asks for a replica, and a queue on top of it is no reason to ask
    for fewer)."""
    for k, w in enumerate(out):
        if w.level == "high" and w.name in QUEUE_SIGNALS:
            out[k] = w.model_copy(
                update={
                    "level": "normal",
                    "replicas": n,
                    "reason": f"{w.name} {w.value:.3g}: a burst, drains in "
                    f"~{backlog.drain_s:.0f} s, before a new replica could start "
                    f"({backlog.lead_s:.0f} s)",
                }
            )


def lora_slot_signals(snap: Snapshot, sigs: list[Signal], n: int) -> list[Signal]:
    """``lora_slot_wait``, and the queue signal in ``sigs`` stepped by one replica when the
    queue is the adapter slots' (module docstring); ``sigs`` is changed in place."""
    engines = snap.lora_engines or 0
    bound = snap.lora_slot_bound_engines or 0
    share = bound / engines if engines else 0.0
    waiting = int(snap.lora_waiting_adapters or 0)
    if share >= LORA_SLOT_BOUND:
        for k, w in enumerate(sigs):
            if w.name in QUEUE_SIGNALS and w.level == "high":
                sigs[k] = w.model_copy(
                    update={
                        "replicas": n + 1,
                        "reason": f"{w.reason}; {bound} of {engines} engines wait for an "
                        "adapter slot (all maxLoras in use): one replica more, not the "
                        "queue's ratio; raise spec.lora.maxLoras",
                    }
                )
    return [
        Signal(
            name="lora_slot_wait",
            value=share,
            high=1.0,
            low=0.0,
            level="normal" if bound else "low",
            replicas=n,
            reason=f"lora_slot_wait {share:.2f}: {bound} of {engines} engines have every adapter "
            f"slot in use and {waiting} adapter{'s' if waiting != 1 else ''} waiting"
            if bound
            else f"lora_slot_wait 0: no engine waits for an adapter slot ({waiting} waiting)",
        )
    ]


def as_attainment(
    sig: Signal,
    n: int,
    slo: float,
    counts: BucketCounts | None,
    budget: float,
    load_high: bool,
    bounds: Sequence[float] | None = None,
) -> Signal:
    """A latency signal re-read as attainment (``scaling/buckets.py``): high only on a breach
    the buckets (or the load) bear out, high too when more than the budget is surely over the
    SLO whatever the P99 reads; with the share's bounds and the budget on the signal."""
    if sig.level == "missing":
        return sig
    share = over_slo(counts, slo)
    bounds = BOUNDS.get(sig.name) if bounds is None else bounds
    total = None if counts is None else counts.total
    breach, words = latency_breach(sig.value, slo, share, budget, load_high, bounds, total)
    update: dict[str, object] = {
        "over_slo_low": None if share is None else share[0],
        "over_slo_high": None if share is None else share[1],
        "error_budget": budget,
    }
    value = sig.value
    if breach and sig.level != "high":
        ratio = 1.0 if value is None else value / sig.high
        update |= {
            "level": "high",
            "replicas": max(n + 1, math.ceil(n * min(ratio, MAX_LATENCY_RATIO) - 1e-9)),
            "reason": f"{sig.name}{words}",
        }
    elif not breach and sig.level == "high":
        shown = "–" if value is None else f"{value:.3g}"
        update |= {"level": "normal", "replicas": n, "reason": f"{sig.name} {shown}{words}"}
    elif words:
        update["reason"] = f"{sig.reason}{words}"
    return sig.model_copy(update=update)


def slo_headroom(state: ScalingState, sigs: list[Signal], now: float) -> tuple[float, float | None]:
    """The learned standing headroom after this decision's latency signals: raised on a
    breach, decayed while every latency signal reads low (``scaling/headroom.py``)."""
    latency = [s for s in sigs if s.name in LATENCY_SIGNALS]
    h, raised_at = state.slo_headroom, state.slo_headroom_raised_s
    if any(s.level == "high" for s in latency):
        return raised(h, raised_at, now)
    if latency and all(s.level == "low" for s in latency) and state.peak_at_s is not None:
        return decayed(h, now - state.peak_at_s), raised_at
    return h, raised_at


def peak_load(
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
    faded = state.peak_load * math.pow(0.5, max(0.0, now - state.peak_at_s) / half_life)
    return max(now_load, faded)


def blindness(
    snap: Snapshot | None, now: float, stale_after_s: float, subject: str = "this service"
) -> str | None:
    """Why ``snap`` cannot be decided on (None: it can): no snapshot, the core vLLM series
    missing, or samples older than ``stale_after_s``. ``subject`` names what it is of (the
    service, or one prefill/decode role) in the reason."""
    if snap is None:
        return f"no metrics for {subject}"
    if not snap.core_signals_present:
        why = "; ".join(snap.problems[:3]) or f"no vLLM series for {subject}"
        return f"core signals missing: {why}"
    if snap.newest_sample_age_s is not None and snap.newest_sample_age_s > stale_after_s:
        return f"samples are {snap.newest_sample_age_s:.0f} s old (> {stale_after_s:.0f} s)"
    if now - snap.at > stale_after_s:
        return f"snapshot taken {now - snap.at:.0f} s ago"
    return None
