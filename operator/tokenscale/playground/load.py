"""Traffic for the playground: a trace replayed in real time × speed through a least-loaded
router over the ready twins (the Service's stand-in), streaming like ``tokenscale bench``.

Requests arriving while no twin is ready wait for one (their TTFT counts the wait, as a user's
would): the router is then the gateway holding them (``Router.held``, which the gateway twin
exports as the endpoint picker's flow-control queue: ``playground/gateway.py``). Latencies are
reported in modelled seconds (wall × speed). A trace's prefix blocks
(Mooncake's ``hash_ids``) become shared leading word blocks, which the twins' prefix caches hit.
"""

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import aiohttp

from tokenscale.bench.client import Endpoint, stream_one
from tokenscale.playground.twin import Twin
from tokenscale.simulation import Trace, synthetic_trace
from tokenscale.simulation.trace import TraceRequest
from tokenscale.simulation.workloads import TokenMix

LOAD_SHAPES = ("step", "ramp", "burst", "idle-burst")
#: Attempts per request when clients retry (``replay(retry_after_s=…)``).
MAX_ATTEMPTS = 4


class Served(Protocol):
    """Where a client sends a request (a twin, or the prefill/decode proxy)."""

    @property
    def url(self) -> str: ...


class Picker(Protocol):
    """What the load asks for a server for each request (waiting while there is none)."""

    async def pick(self) -> Served: ...


class Router:
    """The ready twins; each request goes to the one with the fewest requests in flight."""

    def __init__(self) -> None:
        self.twins: list[Twin] = []
        self._ready = asyncio.Event()
        self.held = 0
        """Requests waiting for a twin because none is ready (the gateway's queue)."""

    def add(self, twin: Twin) -> None:
        if twin not in self.twins:
            self.twins.append(twin)
            self._ready.set()

    def remove(self, twin: Twin) -> None:
        if twin in self.twins:
            self.twins.remove(twin)
        if not self.twins:
            self._ready.clear()

    async def pick(self) -> Twin:
        if not self.twins:
            self.held += 1
            try:
                while not self.twins:
                    await self._ready.wait()
            finally:
                self.held -= 1
        return min(self.twins, key=lambda t: t.in_flight)


@dataclass(frozen=True)
class Outcome:
    """One request as the client saw it, in modelled seconds."""

    arrival_s: float
    ok: bool
    ttft_s: float | None
    tpot_s: float | None
    output_tokens: int


@dataclass
class LoadStats:
    sent: int = 0
    outcomes: list[Outcome] = field(default_factory=list)


async def replay(
    trace: Trace,
    router: Picker,
    speed: float,
    model: str,
    max_model_len: int,
    stats: LoadStats,
    timeout_s: float = 600.0,
    on_done: Callable[[Outcome], None] | None = None,
    retry_after_s: float | None = None,
) -> None:
    """Send every request of ``trace`` at its time ÷ ``speed``; return when all have ended.
    With ``retry_after_s`` (modelled seconds) a request whose stream fails (not a timeout) is
    sent again that long after, up to :data:`MAX_ATTEMPTS` times, as a client retries a dead
    pod's request; its TTFT counts from the first attempt."""
    loop = asyncio.get_running_loop()
    block_tokens = trace.block_tokens
    t0 = loop.time()
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=5)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        tasks: set[asyncio.Task[None]] = set()

        async def one(r: TraceRequest, tag: int) -> None:
            start = loop.time()
            prompt = shared_prefix_prompt(r, tag, block_tokens) if r.prefix_blocks else None
            attempts = 1 if retry_after_s is None else MAX_ATTEMPTS
            for attempt in range(attempts):
                if attempt:
                    await asyncio.sleep((retry_after_s or 0.0) / speed)
                twin = await router.pick()
                waited = loop.time() - start
                ep = Endpoint(
                    twin.url, model, timeout_s, overhead_tokens=1, max_model_len=max_model_len
                )
                rec = await stream_one(
                    session, ep, r.input_tokens, r.output_tokens, tag, prompt=prompt
                )
                if rec.ok or rec.timed_out:
                    break
            ttft = None if rec.ttft_s is None else (rec.ttft_s + waited) * speed
            tpot = None if rec.tpot_s is None else rec.tpot_s * speed
            out = Outcome(r.arrival_s, rec.ok, ttft, tpot, rec.output_tokens)
            stats.outcomes.append(out)
            if on_done is not None:
                on_done(out)

        for i, r in enumerate(trace.requests):
            if r.input_tokens + r.output_tokens > max_model_len:
                continue  # vLLM would answer 400; the simulator rejects these too
            delay = t0 + r.arrival_s / speed - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            stats.sent += 1
            task = loop.create_task(one(r, i + 1))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        if tasks:
            await asyncio.gather(*tasks)


def shared_prefix_prompt(r: TraceRequest, tag: int, block_tokens: int) -> str:
    """A prompt of ``r.input_tokens`` words whose leading full blocks are the trace's prefix
    blocks (block ``h`` = ``block_tokens`` × the word ``p<h>``), the rest unique to the request
    (so only the trace's shared prefixes can hit the cache)."""
    full = min(len(r.prefix_blocks), (r.input_tokens - 1) // block_tokens)
    words = [f"p{h}" for h in r.prefix_blocks[:full] for _ in range(block_tokens)]
    words += [f"u{tag}"] * (r.input_tokens - len(words))
    return " ".join(words)


def shaped_trace(
    shape: str,
    duration_s: float,
    low_rps: float,
    high_rps: float,
    seed: int = 0,
    mix: TokenMix | None = None,
) -> Trace:
    """A synthetic load: ``step`` (low, high for the middle third, low), ``ramp`` (low → high
    → low, a triangle), ``burst`` (low with three short bursts at high) or ``idle-burst``
    (bursts at high from 35 % to 45 % and from 85 % to 95 % of the span, nothing else; re-based
    like every synthetic load, so it opens with the first burst: a service that sleeps at zero
    replicas between them and wakes); chat-like lengths, or ``mix``'s."""
    third = duration_s / 3.0

    def step(t: float) -> float:
        return high_rps if third <= t < 2 * third else low_rps

    def ramp(t: float) -> float:
        x = 1.0 - abs(2.0 * t / duration_s - 1.0)
        return low_rps + (high_rps - low_rps) * x

    def burst(t: float) -> float:
        width = duration_s / 20.0
        return (
            high_rps
            if any(abs(t - duration_s * c) < width / 2 for c in (0.25, 0.5, 0.75))
            else low_rps
        )

    def idle_burst(t: float) -> float:
        x = t / duration_s
        return high_rps if 0.35 <= x < 0.45 or 0.85 <= x < 0.95 else 0.0

    shapes: dict[str, Callable[[float], float]] = {
        "step": step,
        "ramp": ramp,
        "burst": burst,
        "idle-burst": idle_burst,
    }
    if shape not in shapes:
        raise ValueError(f"--load {shape!r}: choose one of {', '.join(LOAD_SHAPES)}")

    def n_in(rng: random.Random) -> int:
        if mix is not None:
            return mix.draw(rng)[0]
        return int(rng.lognormvariate(6.4, 0.6))  # median ≈ 600 tokens

    def n_out(rng: random.Random) -> int:
        if mix is not None:
            return mix.draw(rng)[1]
        return int(rng.lognormvariate(4.9, 0.5))  # median ≈ 130 tokens

    trace = synthetic_trace(duration_s, shapes[shape], n_in, n_out, seed=seed)
    return Trace(trace.requests, f"{shape} {low_rps:g}→{high_rps:g} rps", trace.block_tokens)
