"""The modelled engine behind each twin: the simulator's replica (``simulation.replica``: V1
scheduler, chunked prefill, KV blocks, preemption) at the planner's per-step times, advanced in
real time × ``speed``.

A :class:`ModelClock` maps wall time to modelled time (``× speed``); every twin of a playground
shares it. The :class:`TwinDriver` wakes when the next token is due or a request arrives: each
engine runs its scheduler steps up to "now", and each stream releases the tokens whose modelled
time has come (a stretch of decode steps is spread evenly over its span). Tokens due within one
wake-up (at least 2 ms apart) go out in one chunk, as vLLM's ``--stream-interval`` does; at
modest speeds that is one chunk per token.
"""

import asyncio
import contextlib
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import Replica, ReplicaConfig, SimRequest


class ModelClock:
    """Modelled seconds since the playground started: wall seconds × ``speed``."""

    def __init__(self, speed: float) -> None:
        if speed <= 0:
            raise ValueError(f"speed must be > 0 (got {speed})")
        self.speed = speed
        self._t0 = time.monotonic()

    def now(self) -> float:
        return (time.monotonic() - self._t0) * self.speed


@dataclass(eq=False)
class Stream:
    """One request's tokens as they become due (modelled times)."""

    req: SimRequest
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    seen: int = 0
    seen_s: float = 0.0
    segments: deque[tuple[int, int, float, float]] = field(default_factory=deque)
    """(tokens before, tokens after, modelled time of the first, of the last)."""
    released: int = 0

    @property
    def done(self) -> bool:
        return self.released >= self.req.output_tokens

    def learn(self) -> None:
        """Note tokens the engine produced since the last call."""
        r = self.req
        if r.generated <= self.seen:
            return
        if self.seen == 0:
            self.segments.append((0, 1, r.first_token_s, r.first_token_s))
            self.seen, self.seen_s = 1, r.first_token_s
        if r.generated > self.seen:
            self.segments.append((self.seen, r.generated, self.seen_s, r.last_token_s))
            self.seen, self.seen_s = r.generated, r.last_token_s

    def release(self, now: float) -> bool:
        """Release the tokens due by ``now``; True when some were."""
        before = self.released
        while self.segments:
            a, b, ta, tb = self.segments[0]
            if tb <= now:
                self.released = b
                self.segments.popleft()
                continue
            if now >= ta:
                # tokens a+1..b evenly over (ta, tb]: token a+k at ta + k (tb - ta) / (b - a)
                k = math.floor((now - ta) / (tb - ta) * (b - a))
                self.released = max(self.released, a + k)
            break
        return self.released > before

    def next_due(self) -> float:
        """Modelled time of the next token already scheduled (infinity when none is)."""
        if not self.segments:
            return math.inf
        a, b, ta, tb = self.segments[0]
        if b <= a + 1 or tb <= ta:
            return tb
        return ta + (self.released + 1 - a) * (tb - ta) / (b - a)


class TwinEngine:
    """The modelled engine of one twin: a simulator replica and its open streams."""

    def __init__(
        self, cfg: ReplicaConfig, clock: ModelClock, kick: Callable[[], None] = lambda: None
    ) -> None:
        self.cfg = cfg
        self.clock = clock
        self.kick = kick
        self.rec = Recorder()
        self.replica = Replica(cfg, self.rec, clock.now())
        self.streams: set[Stream] = set()
        self.created = time.time()
        self.aborted = 0

    def submit(
        self,
        input_tokens: int,
        output_tokens: int,
        prefix_blocks: tuple[int, ...] = (),
        remote: bool = False,
        arrival_s: float | None = None,
    ) -> Stream:
        """A request enters the engine now; ``remote``: its prompt's KV came from a prefill
        engine (admitted as computed, as the simulator's decode engines admit it);
        ``arrival_s``: when it reached the server, if before now (modelled seconds; its
        latencies count from then)."""
        now = self.clock.now()
        self.replica.run_until(now)
        arrived = now if arrival_s is None else min(arrival_s, now)
        req = SimRequest(
            arrived,
            max(1, input_tokens),
            max(1, output_tokens),
            prefix_blocks,
            remote_tokens=max(1, input_tokens) if remote else 0,
        )
        self.replica.add(req, now)
        stream = Stream(req)
        self.streams.add(stream)
        self.kick()
        return stream

    def abort(self, stream: Stream) -> None:
        """The client went away: drop the request and free its KV blocks, as vLLM does."""
        r, replica = stream.req, self.replica
        if stream not in self.streams:
            return
        self.streams.discard(stream)
        if r in replica.waiting:
            replica.waiting.remove(r)
        elif r in replica.running:
            replica.running.remove(r)
            replica.free_blocks += r.blocks
            r.blocks = 0
        self.aborted += 1

    def advance(self) -> float:
        """Run the engine to now, release due tokens; the modelled time of the next one."""
        if not self.streams:
            return math.inf
        now = self.clock.now()
        self.replica.run_until(now)
        due = math.inf
        for s in self.streams:
            s.learn()
            if s.release(now):
                s.wake.set()
            due = min(due, s.next_due())
        self.streams = {s for s in self.streams if not s.done}
        return due


class TwinDriver:
    """Advances every engine of the process (one task for all twins): it wakes when the next
    token is due (at most ``max_sleep_s`` later, at least ``min_sleep_s``) or a request arrives.
    """

    def __init__(
        self, clock: ModelClock, min_sleep_s: float = 0.002, max_sleep_s: float = 0.05
    ) -> None:
        self.clock = clock
        self.min_sleep_s = min_sleep_s
        self.max_sleep_s = max_sleep_s
        self.engines: set[TwinEngine] = set()
        self._kick = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def kick(self) -> None:
        self._kick.set()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            self._kick.clear()
            due = min((e.advance() for e in list(self.engines)), default=math.inf)
            delay = self.max_sleep_s
            if due < math.inf:
                wait = (due - self.clock.now()) / self.clock.speed
                delay = min(delay, max(self.min_sleep_s, wait))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._kick.wait(), delay)


@dataclass(frozen=True)
class TwinIdentity:
    """What the twin says about itself (``/v1/models``, ``vllm:cache_config_info``)."""

    model: str
    max_model_len: int
    gpu_memory_utilization: float = 0.92


def prompt_blocks(tokens: list[str], block_tokens: int) -> tuple[int, ...]:
    """Chained hashes of the prompt's full ``block_tokens``-token blocks, as vLLM's prefix
    cache keys its blocks: a block matches only after the same whole prefix."""
    out: list[int] = []
    previous = 0
    for i in range(len(tokens) // block_tokens):
        previous = hash((previous, tuple(tokens[i * block_tokens : (i + 1) * block_tokens])))
        out.append(previous)
    return tuple(out)
