"""A twin of one vLLM pod: vLLM's OpenAI-compatible streaming API and ``/metrics``, timed by the
simulator's replica model (``simulation.replica``: V1 scheduler, chunked prefill, KV blocks,
preemption) at the planner's per-step times, advanced in real time × ``speed``.

Time. A :class:`ModelClock` maps wall time to modelled time (``× speed``); every twin of a
playground shares it. The :class:`TwinDriver` wakes when the next token is due or a request
arrives: each engine runs its scheduler steps up to "now", and each stream releases the tokens
whose modelled time has come (a stretch of decode steps is spread evenly over its span). Tokens
due within one wake-up (at least 2 ms apart) go out in one chunk, as vLLM's
``--stream-interval`` does; at modest speeds that is one chunk per token.

Metrics. The exposition is vLLM 0.33's: the same names, ``model_name``/``engine`` labels,
bucket bounds (``catalog.vllm_metrics``), ``_total``/``_created`` samples and
``vllm:cache_config_info``. Latencies are in modelled seconds. Counters and histogram counts
are divided by ``speed``, so that Prometheus' ``rate()`` over wall-clock windows reads modelled
rates (at ``speed`` 1 they are vLLM's own numbers).

Tokens are whitespace-separated words (``/tokenize`` counts them); a prompt given as a list of
token ids counts its ids. The prefix cache sees the prompt's full blocks (chained hashes, as
vLLM keys them), so prompts that share leading blocks hit. A client that goes away aborts its
request (its KV blocks are freed; ``finished_reason="abort"``).
"""

import asyncio
import contextlib
import json
import math
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from tokenscale.catalog import vllm_metrics as v
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
        self, input_tokens: int, output_tokens: int, prefix_blocks: tuple[int, ...] = ()
    ) -> Stream:
        now = self.clock.now()
        self.replica.run_until(now)
        req = SimRequest(now, max(1, input_tokens), max(1, output_tokens), prefix_blocks)
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

    def __init__(self, min_sleep_s: float = 0.002, max_sleep_s: float = 0.05) -> None:
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
            if due < math.inf and self.engines:
                speed = next(iter(self.engines)).clock.speed
                now = next(iter(self.engines)).clock.now()
                delay = min(delay, max(self.min_sleep_s, (due - now) / speed))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._kick.wait(), delay)


@dataclass(frozen=True)
class TwinIdentity:
    """What the twin says about itself (``/v1/models``, ``vllm:cache_config_info``)."""

    model: str
    max_model_len: int
    gpu_memory_utilization: float = 0.92


class _VllmCollector(Collector):
    """vLLM 0.33's exposition from the engine's state and recorder."""

    def __init__(self, engine: TwinEngine, ident: TwinIdentity) -> None:
        self.engine = engine
        self.ident = ident
        self.labels = {"model_name": ident.model, "engine": "0"}

    def collect(self) -> Iterator[Metric]:
        e, lab = self.engine, self.labels
        scale = 1.0 / e.clock.speed
        replica, rec = e.replica, e.rec
        waiting, running = len(replica.waiting), len(replica.running)
        yield _gauge("vllm:num_requests_running", "Running", lab, running)
        yield _gauge("vllm:num_requests_waiting", "Waiting", lab, waiting)
        by_reason = Metric("vllm:num_requests_waiting_by_reason", "Waiting by reason", "gauge")
        by_reason.add_sample(by_reason.name, {**lab, "reason": "capacity"}, waiting)
        by_reason.add_sample(by_reason.name, {**lab, "reason": "deferred"}, 0.0)
        yield by_reason
        yield _gauge("vllm:kv_cache_usage_perc", "KV usage", lab, replica.kv_usage)
        cfg = e.cfg
        info = {
            "block_size": str(cfg.block_size),
            "cache_dtype": "auto",
            "enable_prefix_caching": str(cfg.prefix_caching),
            "gpu_memory_utilization": str(self.ident.gpu_memory_utilization),
            "num_gpu_blocks": str(cfg.kv_blocks),
            "num_gpu_blocks_override": "None",
            "sliding_window": "None",
            "kv_cache_size_tokens": str(cfg.kv_blocks * cfg.block_size),
            "engine": "0",
        }
        yield _gauge("vllm:cache_config_info", "Cache config", info, 1.0)
        created = e.created
        for name, doc, value in (
            ("vllm:prompt_tokens", "Prompt tokens", rec.prompt_tokens),
            ("vllm:generation_tokens", "Generated tokens", rec.generation_tokens),
            ("vllm:num_preemptions", "Preemptions", rec.preemptions),
            ("vllm:prefix_cache_queries", "Queries", rec.prefix_queries),
            ("vllm:prefix_cache_hits", "Hits", rec.prefix_hits),
        ):
            yield _counter(name, doc, [(lab, value * scale)], created)
        finished = {"length": rec.success, "abort": float(e.aborted)}
        success = [
            ({**lab, "finished_reason": reason}, finished.get(reason, 0.0) * scale)
            for reason in v.FINISH_REASONS
        ]
        yield _counter("vllm:request_success", "Finished", success, created)
        for name, doc, hist in (
            ("vllm:time_to_first_token_seconds", "TTFT", rec.ttft),
            ("vllm:inter_token_latency_seconds", "ITL", rec.itl),
            ("vllm:request_time_per_output_token_seconds", "TPOT", rec.tpot),
            ("vllm:e2e_request_latency_seconds", "E2E", rec.e2e),
            ("vllm:request_queue_time_seconds", "Queue", rec.queue),
        ):
            m = Metric(name, doc, "histogram")
            cumulative = 0.0
            for bound, count in zip((*hist.bounds, math.inf), hist.counts, strict=True):
                cumulative += count
                m.add_sample(f"{name}_bucket", {**lab, "le": _le(bound)}, cumulative * scale)
            m.add_sample(f"{name}_count", lab, cumulative * scale)
            m.add_sample(f"{name}_sum", lab, hist.total * scale)
            m.add_sample(f"{name}_created", lab, created)
            yield m


def _le(bound: float) -> str:
    """A bucket bound as prometheus_client spells it (``1.0``, ``+Inf``)."""
    return str(floatToGoString(bound))  # type: ignore[no-untyped-call]


def _gauge(name: str, doc: str, labels: dict[str, str], value: float) -> Metric:
    m = Metric(name, doc, "gauge")
    m.add_sample(name, labels, float(value))
    return m


def _counter(
    name: str, doc: str, series: list[tuple[dict[str, str], float]], created: float
) -> Metric:
    m = Metric(name, doc, "counter")
    for labels, value in series:
        m.add_sample(f"{name}_total", labels, value)
    for labels, _ in series:
        m.add_sample(f"{name}_created", labels, created)
    return m


def _tokens(prompt: object) -> list[str]:
    if isinstance(prompt, list):
        return [str(t) for t in prompt]
    return str(prompt).split()


def _count_tokens(prompt: object) -> int:
    return len(_tokens(prompt))


def prompt_blocks(tokens: list[str], block_tokens: int) -> tuple[int, ...]:
    """Chained hashes of the prompt's full ``block_tokens``-token blocks, as vLLM's prefix
    cache keys its blocks: a block matches only after the same whole prefix."""
    out: list[int] = []
    previous = 0
    for i in range(len(tokens) // block_tokens):
        previous = hash((previous, tuple(tokens[i * block_tokens : (i + 1) * block_tokens])))
        out.append(previous)
    return tuple(out)


class Twin:
    """One twin: its engine and its HTTP server on ``127.0.0.1:port``."""

    def __init__(self, engine: TwinEngine, ident: TwinIdentity, port: int) -> None:
        self.engine = engine
        self.ident = ident
        self.port = port
        self.in_flight = 0
        self.requests = 0
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_VllmCollector(engine, ident))
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/completions", self.completions)
        app.router.add_get("/v1/models", self.models)
        app.router.add_post("/tokenize", self.tokenize)
        app.router.add_get("/health", self.health)
        app.router.add_get("/metrics", self.metrics)
        return app

    async def start(self) -> "Twin":
        self._runner = web.AppRunner(self.app(), shutdown_timeout=0.5, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- endpoints -------------------------------------------------------------------------------
    async def health(self, request: web.Request) -> web.Response:
        return web.Response()

    async def metrics(self, request: web.Request) -> web.Response:
        # always the classic text format, names as vLLM writes them (``vllm:…``)
        body = generate_latest(self.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def models(self, request: web.Request) -> web.Response:
        model = {
            "id": self.ident.model,
            "object": "model",
            "created": int(self.engine.created),
            "owned_by": "vllm",
            "root": self.ident.model,
            "parent": None,
            "max_model_len": self.ident.max_model_len,
        }
        return web.json_response({"object": "list", "data": [model]})

    async def tokenize(self, request: web.Request) -> web.Response:
        body = await request.json()
        n = _count_tokens(body.get("prompt", ""))
        return web.json_response(
            {"count": n, "max_model_len": self.ident.max_model_len, "tokens": list(range(n))}
        )

    async def completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        tokens = _tokens(body.get("prompt", ""))
        prompt_tokens = len(tokens)
        max_tokens = int(body.get("max_tokens") or 16)
        if prompt_tokens + max_tokens > self.ident.max_model_len:
            return _error(
                f"This model's maximum context length is {self.ident.max_model_len} tokens. "
                f"However, you requested {prompt_tokens + max_tokens} tokens "
                f"({prompt_tokens} in the messages, {max_tokens} in the completion).",
                400,
            )
        self.requests += 1
        self.in_flight += 1
        try:
            blocks = prompt_blocks(tokens, self.engine.cfg.prefix_block_tokens)
            stream = self.engine.submit(prompt_tokens, max_tokens, blocks)
            rid, created = f"cmpl-{self.port}-{self.requests}", int(time.time())
            if body.get("stream"):
                return await self._stream(request, body, stream, rid, created, prompt_tokens)
            while not stream.done:
                await stream.wake.wait()
                stream.wake.clear()
            choice = {
                "index": 0,
                "text": " tok" * max_tokens,
                "logprobs": None,
                "finish_reason": "length",
                "stop_reason": None,
                "prompt_logprobs": None,
            }
            return web.json_response(
                {
                    "id": rid,
                    "object": "text_completion",
                    "created": created,
                    "model": body.get("model") or self.ident.model,
                    "choices": [choice],
                    "usage": _usage(prompt_tokens, max_tokens),
                }
            )
        finally:
            self.in_flight -= 1

    async def _stream(
        self,
        request: web.Request,
        body: dict[str, Any],
        stream: Stream,
        rid: str,
        created: int,
        prompt_tokens: int,
    ) -> web.StreamResponse:
        try:
            return await self._write_stream(request, body, stream, rid, created, prompt_tokens)
        except (ConnectionResetError, asyncio.CancelledError):
            self.engine.abort(stream)
            raise

    async def _write_stream(
        self,
        request: web.Request,
        body: dict[str, Any],
        stream: Stream,
        rid: str,
        created: int,
        prompt_tokens: int,
    ) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        model = body.get("model") or self.ident.model
        n, sent = stream.req.output_tokens, 0
        while sent < n:
            await stream.wake.wait()
            stream.wake.clear()
            k = stream.released - sent
            if k <= 0:
                continue
            sent += k
            chunk = {
                "id": rid,
                "object": "text_completion",
                "created": created,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "text": " tok" * k,
                        "logprobs": None,
                        "finish_reason": "length" if sent >= n else None,
                        "stop_reason": None,
                    }
                ],
                "usage": None,
            }
            await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
        options = body.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage"):
            final: dict[str, Any] = {
                "id": rid,
                "object": "text_completion",
                "created": created,
                "model": model,
                "choices": [],
                "usage": _usage(prompt_tokens, n),
            }
            await resp.write(f"data: {json.dumps(final)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        return resp


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens": completion_tokens,
    }


def _error(message: str, status: int) -> web.Response:
    return web.json_response(
        {
            "object": "error",
            "message": message,
            "type": "BadRequestError",
            "param": None,
            "code": status,
        },
        status=status,
    )
