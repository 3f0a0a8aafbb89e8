"""Latency at the load a replica carries, and the predicted load-test curve.

A replica fed ``λ`` requests per second settles at the batch ``B`` where its completion rate
equals the arrival rate: ``request_rate(B) = B / (out·t_step(B) + B·t_prefill) = λ`` (a request
holds a slot for its prefill and its decode; :mod:`tokenscale.planning.performance`). The rate
rises with B and saturates, so B is found by bisection, and every latency is then evaluated at
that B: at 0.5 RPS on a replica that could take 20, TTFT is the prefill and a short queue, not
the saturated figure. Above the rate at ``maxNumSeqs`` the replica is saturated (no steady
state; the queue grows).

In flight per replica, queued included (Little's law): ``L = B + L_q``, with the prefill queue
``L_q = ρ²/(1−ρ)·(1+C²)/2`` (M/G/1), ``ρ = λ·s`` (``s``: the steps a prompt's chunks fill,
decodes included,
:meth:`PerfModel.prefill_service_seconds`). The concurrency constraint sizes the fleet so that
``L`` stays within the safe concurrency: the replica count sets the load per replica, the
load sets latency, and latency sets the concurrency — one fixed point, solved here in B.
"""

import math
from dataclasses import dataclass, replace

from tokenscale.api.workload import TokenDistribution
from tokenscale.planning.bisect import first_true
from tokenscale.planning.performance import PerfModel
from tokenscale.planning.result import CurveStep

Z_P99 = 2.326
_BISECT_STEPS = 40


@dataclass(frozen=True)
class LoadPoint:
    """Latency estimates for one replica at ``rps_per_replica`` (seconds)."""

    rps_per_replica: float
    batch: float
    prefill_utilization: float
    ttft_mean_s: float
    ttft_p99_s: float
    tpot_mean_s: float
    tpot_p99_s: float
    e2e_mean_s: float
    e2e_p99_s: float

    @property
    def in_flight(self) -> float:
        """Requests in flight per replica, queued ones included (Little's law)."""
        return self.rps_per_replica * self.e2e_mean_s


def batch_at_rate(
    perf: PerfModel, rps: float, max_batch: float, within: float | None = None
) -> float | None:
    """The steady-state batch at ``rps`` requests/s per replica; None when saturated.

    The bisection returns the upper end of its bracket (a batch whose rate covers ``rps``),
    to 1e-4 of the batch itself: an almost idle replica's batch (0.007 for one 5,500-token
    prompt every 16 s) is as exact as a busy one's. ``within``: a batch known to cover
    ``rps`` (the operating batch the fleet was sized at); the answer never exceeds it, so a
    replica fed less than that batch's rate is never timed above it.
    """
    if rps <= 0:
        return 0.0
    if perf.request_rate(max_batch) < rps:
        return None
    hi = max_batch
    if within is not None and 0.0 < within < max_batch and perf.request_rate(within) >= rps:
        hi = within
    return first_true(lambda b: perf.request_rate(b) >= rps, 0.0, hi, _BISECT_STEPS, 1e-4)


def point_at_batch(
    perf: PerfModel, batch: float, inputs: TokenDistribution, outputs: TokenDistribution
) -> LoadPoint:
    """Latencies at batch ``batch`` (the load ``request_rate(batch)``)."""
    tpot = perf.tpot_seconds(batch)
    ttft = perf.ttft_seconds(batch, inputs.mean)
    ttft99 = perf.ttft_quantile_seconds(batch, inputs.p99_or_mean, inputs.mean, 0.01)
    return LoadPoint(
        rps_per_replica=perf.request_rate(batch) if batch > 0 else 0.0,
        batch=batch,
        prefill_utilization=perf.prefill_utilization(batch) if batch > 0 else 0.0,
        ttft_mean_s=ttft,
        ttft_p99_s=ttft99,
        tpot_mean_s=tpot,
        tpot_p99_s=perf.tpot_quantile_seconds(batch, Z_P99),
        e2e_mean_s=ttft + outputs.mean * tpot,
        e2e_p99_s=ttft99 + outputs.p99_or_mean * tpot,
    )


def at_load(
    perf: PerfModel,
    rps_per_replica: float,
    inputs: TokenDistribution,
    outputs: TokenDistribution,
    max_batch: float,
    within: float | None = None,
) -> LoadPoint | None:
    """Latencies of one replica fed ``rps_per_replica``; None when that saturates it
    (``within``: :func:`batch_at_rate`)."""
    batch = batch_at_rate(perf, rps_per_replica, max_batch, within)
    if batch is None:
        return None
    return replace(point_at_batch(perf, batch, inputs, outputs), rps_per_replica=rps_per_replica)


def queued(perf: PerfModel, batch: float) -> float:
    """Prompts waiting for prefill at batch B: Little's law over the M/G/1 mean wait,
    ``rate × W = ρ²/(1−ρ) × (1 + C²)/2`` (:meth:`PerfModel.queue_wait_seconds`; M/M/1's
    ``ρ²/(1−ρ)`` when the prompts' spread is unknown)."""
    if batch <= 0:
        return 0.0
    service = perf.prefill_service_seconds(batch)
    if service <= 0:
        return 0.0
    return perf.prefill_utilization(batch) / service * perf.queue_wait_seconds(batch)


def concurrency_batch(perf: PerfModel, safe_concurrency: float) -> float:
    """Largest batch B whose in-flight count ``B + L_q(B)`` stays within the safe concurrency."""
    if safe_concurrency <= 0:
        return 0.0
    lo, hi = 0.0, safe_concurrency
    if hi + queued(perf, hi) <= safe_concurrency:
        return hi
    for _ in range(_BISECT_STEPS):
        mid = (lo + hi) / 2.0
        if mid + queued(perf, mid) <= safe_concurrency:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-3:
            break
    return max(lo, 1e-6)


def closed_loop(
    perf: PerfModel, concurrency: int, inputs: TokenDistribution, outputs: TokenDistribution
) -> CurveStep:
    """``concurrency`` clients each sending the next request when the last one ends.

    All ``c`` are in flight (no admission queue below ``maxNumSeqs``); a prompt waits only for
    the prefills of the other ``c − 1`` clients that are running when it arrives: each is in
    prefill a share ``t_prefill / cycle`` of its cycle, half of it left on average. At c = 1
    TTFT is the prefill alone.
    """
    c = float(concurrency)
    riding = max(c - 1.0, 0.0)
    tpot = perf.tpot_seconds(c)
    tpot99 = perf.tpot_quantile_seconds(c, Z_P99)

    def own(prompt: float) -> float:
        return perf.own_ttft_seconds(riding, prompt)

    t_p = perf.mean_prefill_seconds
    base = own(inputs.mean)
    cycle = base + outputs.mean * tpot
    wait = riding * (t_p / max(cycle, 1e-9)) * t_p / 2.0
    ttft = base + wait
    ttft99 = own(inputs.p99_or_mean) + min(riding, 1.0 + math.sqrt(riding)) * t_p
    e2e = ttft + outputs.mean * tpot
    rps = c / e2e
    step = perf.step_seconds(c)
    return CurveStep(
        concurrency=concurrency,
        ttft_mean_seconds=ttft,
        ttft_p50_seconds=base,
        ttft_p99_seconds=ttft99,
        tpot_mean_seconds=tpot,
        tpot_p50_seconds=tpot,
        tpot_p99_seconds=tpot99,
        itl_mean_seconds=tpot,
        itl_p50_seconds=step,
        itl_p99_seconds=step + perf.tail_chunk_seconds if riding > 0 else step,
        e2e_mean_seconds=e2e,
        e2e_p50_seconds=e2e,
        e2e_p99_seconds=ttft99 + outputs.p99_or_mean * tpot99,
        input_tps=rps * inputs.mean,
        output_tps=rps * outputs.mean,
        requests_per_second=rps,
    )


def curve(
    perf: PerfModel,
    inputs: TokenDistribution,
    outputs: TokenDistribution,
    max_concurrency: float,
) -> list[CurveStep]:
    """Closed-loop predictions at concurrency 1, 2, 4, … up to ``max_concurrency`` (the KV
    limit or maxNumSeqs, whichever is lower), the last point at the limit itself."""
    top = max(1, int(max_concurrency))
    levels: list[int] = []
    c = 1
    while c < top:
        levels.append(c)
        c *= 2
    levels.append(top)
    return [closed_loop(perf, level, inputs, outputs) for level in levels]
