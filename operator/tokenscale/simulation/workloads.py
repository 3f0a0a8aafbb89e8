"""PURE, seeded traffic shapes for the autoscaling suite, each from stated parameters.

- :func:`bursty`: Gamma inter-arrivals with a coefficient of variation ``cv`` (3–4: bursty
  like production chat/code traffic), plus ``spike_s``-second spikes at ``spike_factor`` × the
  mean rate every ``spike_every_s`` seconds (jittered), as Poisson arrivals on top.
- :func:`diurnal`: a ramp ×``factor`` over ``ramp_s`` and back, between flat stretches.
- :func:`step`: ×``factor`` at once, held, and back at once.
- :func:`idle_gaps`: ``requests`` requests, then ``gap_s`` of nothing, then one request.
- :func:`idle_burst`: ``bursts`` bursts of ``requests`` Poisson arrivals at ``rps``, each after
  ``gap_s`` of nothing (the first too): a service that sleeps at zero replicas and wakes.
- :func:`staircase`: ``base_rps`` raised by ``factor`` every ``stair_s`` for ``stairs`` stairs,
  then down the same stairs.
- :func:`on_off`: ``base_rps`` and ``factor ×`` alternating, ``on_s`` high, ``off_s`` low.
- :func:`decline`: a linear fall from ``start_rps`` to ``end_rps`` over ``duration_s``.

Token mixes (lognormal, stated by mean and P99): :data:`CONVERSATION` (1k / 4k in, 200 out),
:data:`CODE` (prefill-heavy: 2k mean / 7.5k P99 in, 30 out), :data:`REASONING` (500 in, 4k out),
:data:`LONG_PROMPT` (8k / 16k in, 200 / 400 out) and :data:`SHORT_PROMPT` (300 / 800 in and out).
Arrivals are re-based to start at 0 s; a shape's duration is its last arrival.
"""

import dataclasses
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tokenscale.api.lora import zipf_shares
from tokenscale.simulation.trace import MOONCAKE_BLOCK_TOKENS, Trace, TraceRequest, synthetic_trace


@dataclass(frozen=True)
class TokenMix:
    """Lognormal input and output lengths given by their means and P99s (P99 ≥ mean)."""

    name: str
    input_mean: float
    input_p99: float
    output_mean: float
    output_p99: float
    max_total: int = 16_000

    def draw(self, rng: random.Random) -> tuple[int, int]:
        n_in = _lognormal(rng, self.input_mean, self.input_p99)
        n_out = _lognormal(rng, self.output_mean, self.output_p99)
        n_in = min(n_in, self.max_total - 1)
        return n_in, max(1, min(n_out, self.max_total - n_in))


CONVERSATION = TokenMix("conversation", 1000, 4000, 200, 800)
CODE = TokenMix("code", 2000, 7500, 30, 60)
REASONING = TokenMix("reasoning", 500, 1500, 4000, 8000)
#: Prefill/decode disaggregation's two shapes: long prompts with short answers (RAG,
#: summarization: prefill chunks stall a shared pool's decodes, two pools should win) and short
#: chats (a shared pool is never stalled for long, one pool should win).
LONG_PROMPT = TokenMix("long-prompt", 8000, 16000, 200, 400, max_total=32_000)
SHORT_PROMPT = TokenMix("short-prompt", 300, 800, 300, 800)
Z99 = 2.3263


def _lognormal(rng: random.Random, mean: float, p99: float) -> int:
    """Lognormal with this mean and P99: ``σ`` solves ``z σ − σ²/2 = ln(P99 / mean)``."""
    ratio = max(p99 / mean, 1.0 + 1e-9)
    sigma = Z99 - math.sqrt(max(Z99 * Z99 - 2.0 * math.log(ratio), 0.0))
    mu = math.log(mean) - sigma * sigma / 2.0
    return max(1, round(rng.lognormvariate(mu, sigma)))


def _trace(times: list[float], mix: TokenMix, rng: random.Random, source: str) -> Trace:
    times.sort()
    t0 = times[0] if times else 0.0
    rows = []
    for t in times:
        n_in, n_out = mix.draw(rng)
        rows.append(TraceRequest(t - t0, n_in, n_out))
    return Trace(tuple(rows), source, MOONCAKE_BLOCK_TOKENS)


def bursty(
    duration_s: float,
    mean_rps: float,
    mix: TokenMix = CONVERSATION,
    cv: float = 3.5,
    spike_factor: float = 5.0,
    spike_s: float = 10.0,
    spike_every_s: float = 300.0,
    seed: int = 0,
) -> Trace:
    """Gamma(k = 1/cv², mean 1/rate) inter-arrivals at ``mean_rps`` (the spikes come on top)."""
    rng = random.Random(seed)
    k = 1.0 / (cv * cv)
    theta = 1.0 / (mean_rps * k)
    times: list[float] = []
    t = 0.0
    while True:
        t += rng.gammavariate(k, theta)
        if t > duration_s:
            break
        times.append(t)
    start = rng.uniform(0.2, 0.8) * spike_every_s
    while start < duration_s:
        t = start
        while True:
            t += rng.expovariate(spike_factor * mean_rps)
            if t > min(start + spike_s, duration_s):
                break
            times.append(t)
        start += spike_every_s * rng.uniform(0.7, 1.3)
    return _trace(times, mix, rng, f"bursty-cv{cv:g}")


def _shaped(
    duration_s: float, rate: Callable[[float], float], mix: TokenMix, seed: int, source: str
) -> Trace:
    """Poisson arrivals at ``rate(t)`` (by thinning), token lengths drawn from ``mix``."""
    arrivals = synthetic_trace(duration_s, rate, lambda _r: 1, lambda _r: 1, seed=seed)
    return _trace([r.arrival_s for r in arrivals.requests], mix, random.Random(seed + 7), source)


def diurnal(
    base_rps: float,
    mix: TokenMix = CONVERSATION,
    factor: float = 4.0,
    flat_s: float = 300.0,
    ramp_s: float = 1200.0,
    seed: int = 0,
) -> Trace:
    """Flat at ``base_rps``, a linear ramp to ``factor ×`` over ``ramp_s``, back, flat again."""

    def rate(t: float) -> float:
        if t < flat_s or t > flat_s + 2 * ramp_s:
            return base_rps
        x = t - flat_s
        up = x / ramp_s if x <= ramp_s else 2.0 - x / ramp_s
        return base_rps * (1.0 + (factor - 1.0) * up)

    duration = 2 * flat_s + 2 * ramp_s
    return _shaped(duration, rate, mix, seed, f"diurnal-x{factor:g}")


def step(
    base_rps: float,
    mix: TokenMix = CONVERSATION,
    factor: float = 3.0,
    before_s: float = 600.0,
    hold_s: float = 900.0,
    after_s: float = 600.0,
    seed: int = 0,
) -> Trace:
    """``base_rps``, then ``factor ×`` at once for ``hold_s``, then back at once."""

    def rate(t: float) -> float:
        return base_rps * (factor if before_s <= t < before_s + hold_s else 1.0)

    duration = before_s + hold_s + after_s
    return _shaped(duration, rate, mix, seed, f"step-x{factor:g}")


def steady(duration_s: float, rps: float, mix: TokenMix, seed: int = 0) -> Trace:
    """Poisson arrivals at a constant rate with the given token mix."""
    return _shaped(duration_s, lambda _t: rps, mix, seed, mix.name)


def idle_gaps(
    requests: int = 200,
    rps: float = 20.0,
    gap_s: float = 4 * 3600.0,
    mix: TokenMix = CONVERSATION,
    seed: int = 0,
) -> Trace:
    """``requests`` Poisson arrivals at ``rps``, then ``gap_s`` of nothing, then one request."""
    rng = random.Random(seed)
    times, t = [], 0.0
    for _ in range(requests):
        t += rng.expovariate(rps)
        times.append(t)
    times.append(t + gap_s)
    return _trace(times, mix, rng, f"idle-{gap_s / 3600:g}h")


def idle_burst(
    requests: int = 60,
    rps: float = 2.0,
    gap_s: float = 1800.0,
    bursts: int = 2,
    mix: TokenMix = CONVERSATION,
    seed: int = 0,
) -> Trace:
    """``gap_s`` of nothing, then ``requests`` Poisson arrivals at ``rps``; ``bursts`` times.
    Not re-based: the trace starts with its first gap."""
    rng = random.Random(seed)
    times, t = [], 0.0
    for _ in range(bursts):
        t += gap_s
        for _ in range(requests):
            t += rng.expovariate(rps)
            times.append(t)
    rows = []
    for at in times:
        n_in, n_out = mix.draw(rng)
        rows.append(TraceRequest(at, n_in, n_out))
    return Trace(tuple(rows), f"idle-burst-{gap_s:g}s")


def staircase(
    base_rps: float,
    mix: TokenMix = CONVERSATION,
    factor: float = 1.5,
    stairs: int = 3,
    stair_s: float = 480.0,
    seed: int = 0,
) -> Trace:
    """``base_rps × factor^k`` for stair ``k`` = 0 … ``stairs``, each ``stair_s`` long, then
    back down the same stairs (``2 × stairs + 1`` stairs in all)."""
    levels = [*range(stairs + 1), *range(stairs - 1, -1, -1)]

    def rate(t: float) -> float:
        k = levels[min(len(levels) - 1, int(t // stair_s))]
        return base_rps * float(factor**k)

    return _shaped(len(levels) * stair_s, rate, mix, seed, f"staircase-x{factor:g}^{stairs}")


def on_off(
    base_rps: float,
    mix: TokenMix = CONVERSATION,
    factor: float = 2.5,
    on_s: float = 240.0,
    off_s: float = 360.0,
    cycles: int = 4,
    seed: int = 0,
) -> Trace:
    """``cycles`` periods of ``off_s`` at ``base_rps`` then ``on_s`` at ``factor ×``, and a
    last ``off_s`` at ``base_rps``."""
    period = on_s + off_s

    def rate(t: float) -> float:
        return base_rps * (factor if off_s <= t % period and t < cycles * period else 1.0)

    return _shaped(cycles * period + off_s, rate, mix, seed, f"on-off-x{factor:g}")


def decline(
    start_rps: float,
    end_rps: float,
    duration_s: float = 1800.0,
    mix: TokenMix = CONVERSATION,
    seed: int = 0,
) -> Trace:
    """Poisson arrivals at a rate falling linearly from ``start_rps`` to ``end_rps``."""

    def rate(t: float) -> float:
        return start_rps + (end_rps - start_rps) * min(1.0, t / duration_s)

    return _shaped(duration_s, rate, mix, seed, f"decline-{start_rps:g}-{end_rps:g}")


def with_adapters(trace: Trace, shares: Sequence[float], seed: int = 0) -> Trace:
    """``trace`` with each request addressing LoRA adapter ``k`` with probability
    ``shares[k]`` (seeded, independent of the arrivals)."""
    rng = random.Random(seed)
    indices = range(len(shares))
    picks = rng.choices(indices, weights=shares, k=len(trace.requests))
    requests = tuple(
        dataclasses.replace(r, adapter=k) for r, k in zip(trace.requests, picks, strict=True)
    )
    return dataclasses.replace(trace, requests=requests, source=f"{trace.source} (adapters)")


def many_adapters(
    duration_s: float,
    rps: float,
    adapters: int,
    exponent: float = 1.0,
    mix: TokenMix = CONVERSATION,
    seed: int = 0,
) -> Trace:
    """The many-adapter shape: steady Poisson arrivals over ``adapters`` LoRA adapters with
    Zipf shares (the k-th takes ``k^-s``): a few take most requests, a long tail a few each."""
    return with_adapters(steady(duration_s, rps, mix, seed), zipf_shares(adapters, exponent), seed)
