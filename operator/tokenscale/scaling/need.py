"""PURE: the model's need — the planner re-asked with the workload the metrics show and the
engines' calibrated speed.

- **Observed workload** (``workloadSource``): ``max`` (default) takes the larger of forecast and
  observed per quantity; the rate is requests reaching their first token, the output length
  that of finished requests.
- **Calibration**: predicted ÷ observed TPOT (decode) and prefill phase (TTFT − queue), each
  bounded to ``CALIBRATION_BOUNDS`` and smoothed per unit of time: the blend weight for an
  observation ``dt`` seconds after the last is ``1 − 0.5^(dt / CALIBRATION_HALF_LIFE_S)``, so a
  longer ``--interval`` reacts more per observation and the same per minute.
"""

import math

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.workload import TokenDistribution, Workload
from tokenscale.planning import (
    Calibration,
    Conditions,
    Plan,
    Resolved,
    layout_of,
    perf_at,
)
from tokenscale.planning.measured import measured_point
from tokenscale.scaling.snapshot import Snapshot

CALIBRATION_BOUNDS = (0.5, 1.5)
CALIBRATION_HALF_LIFE_S = 15.0 * math.log(2.0) / math.log(1.0 / 0.7)
"""≈ 29.1 s: the blend of 0.3 per 15-s observation the simulator's figures were measured with,
expressed per unit of time."""


def observed_workload(w: Workload, snap: Snapshot, source: str) -> Workload:
    """The workload the metrics show, per ``workloadSource``: ``observed`` (the metrics), ``max``
    (the larger of forecast and observed, per quantity) or ``forecast`` (the spec's)."""
    if source == "forecast" or snap.arrival_rps is None:
        return w
    observed_rps = snap.arrival_rps
    if snap.started_rps_recent is not None and snap.started_rps_recent > observed_rps:
        observed_rps = snap.started_rps_recent  # a step up, seen within a minute: fast up
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


def smoothed(old: float, ratio: float, dt_s: float) -> float:
    """One calibration step ``dt_s`` seconds after the last: the predicted/observed ratio,
    bounded, blended into the old factor with weight ``1 − 0.5^(dt / half-life)``, bounded
    again."""
    lo, hi = CALIBRATION_BOUNDS
    bounded = min(max(ratio, lo), hi)
    weight = 1.0 - math.pow(0.5, max(0.0, dt_s) / CALIBRATION_HALF_LIFE_S)
    blended = old * (1 - weight) + bounded * weight
    return round(min(max(blended, lo), hi), 4)


def calibrate(r: Resolved, forecast: Plan, snap: Snapshot, old: float, dt_s: float) -> float:
    """Smoothed (over the ``dt_s`` seconds since the last observation), bounded ratio of
    predicted to observed TPOT at the observed batch.

    Observed: the exact mean (histogram sum ÷ count) where Prometheus has it, else the P50
    from buckets (up to ±25 % off inside vLLM's 25 ms TPOT buckets — enough to make the model
    think correct engines slow). Predicted: the model at the TP the fleet runs, the observed
    batch *and* the observed token means (the forecast's means would blame a workload change on
    the engines), in its open-system form (``PerfModel.tpot_open_seconds``: the prompts
    prefilled beside a decode under Poisson traffic are the batch ``B``, not a fixed batch's
    ``B − 1``; at the batch of 1–2 that long prompts leave, the fixed-batch form read exact
    engines as a fifth to a third slow). The batch is the one of the window the TPOT comes
    from, by Little's law (generated tokens per second per replica × TPOT), not the running
    gauge of this instant: right after a step the gauge shows the new batch while the window's
    requests decoded at the old one, and the engines would look faster (or, after a scale-up,
    slower) than they are. Without a token rate the gauge stands in.
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
    predicted = perf_at(r, seen, layout_of(forecast)).tpot_open_seconds(batch)
    return smoothed(old, predicted / observed, dt_s)


PREFILL_QUEUE_LIMIT = 1.0
"""Waiting prompts per replica above which the prefill phase is not measured cleanly."""


def calibrate_prefill(
    r: Resolved, forecast: Plan, snap: Snapshot, old: float, dt_s: float
) -> float:
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
    return smoothed(old, predicted / observed, dt_s)


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
