"""A twin of one vLLM pod: vLLM's OpenAI-compatible streaming API (``/v1/completions``,
``/v1/models``, ``/tokenize``, ``/health``) and its ``/metrics`` (:mod:`.exposition`), served
by an aiohttp server on its own port and timed by a :class:`~.engine.TwinEngine`.

Tokens are whitespace-separated words (``/tokenize`` counts them); a prompt given as a list of
token ids counts its ids. The prefix cache sees the prompt's full blocks (chained hashes, as
vLLM keys them), so prompts that share leading blocks hit. A client that goes away aborts its
request (its KV blocks are freed; ``finished_reason="abort"``).

Prefill/decode (vLLM's KV-transfer API, as the NIXL connector and llm-d's routing sidecar use
it): a request with ``kv_transfer_params: {"do_remote_decode": true}`` is a prefill (the client
sends ``max_tokens: 1``) and its response carries the ``kv_transfer_params`` a decode engine
pulls the KV with; a request with ``kv_transfer_params: {"do_remote_prefill": true, …}`` at a
twin given a ``transfer_s`` waits the modelled KV transfer of its prompt (÷ speed) and is then
admitted with the prompt's KV computed; its latencies count from its arrival.
"""

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from tokenscale.playground.engine import Stream, TwinEngine, TwinIdentity, prompt_blocks
from tokenscale.playground.exposition import VllmCollector


def _tokens(prompt: object) -> list[str]:
    if isinstance(prompt, list):
        return [str(t) for t in prompt]
    return str(prompt).split()


def _count_tokens(prompt: object) -> int:
    return len(_tokens(prompt))


class Twin:
    """One twin: its engine and its HTTP server on ``127.0.0.1:port``."""

    def __init__(
        self,
        engine: TwinEngine,
        ident: TwinIdentity,
        port: int,
        transfer_s: Callable[[int], float] | None = None,
    ) -> None:
        self.engine = engine
        self.ident = ident
        self.port = port
        self.transfer_s = transfer_s
        """A decode twin's modelled KV transfer of a prompt (modelled seconds; None: none)."""
        self.in_flight = 0
        self.requests = 0
        self.exposed = True
        """Whether ``/metrics`` answers (False: 503, as a pod Prometheus does not scrape yet or
        any more; the playground's runner opens it at Ready and closes it at deletion)."""
        self.first_scraped: float | None = None
        """When ``/metrics`` first answered (``time.monotonic()``; None: not yet)."""
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(VllmCollector(engine, ident))
        self._runner: web.AppRunner | None = None
        self._connections: set[asyncio.Transport] = set()
        self._handlers: set[asyncio.Task[Any]] = set()

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

    async def kill(self) -> int:
        """The pod's process dies: every open request's handler is cancelled and its connection
        cut at once (its client sees the stream break), then the server stops. Returns how many
        requests were cut."""
        cut = len(self._handlers)
        for task in list(self._handlers):
            task.cancel()  # the handler frees its KV blocks and ends without writing
        for transport in list(self._connections):
            transport.abort()
        self._connections.clear()
        self._handlers.clear()
        await self.stop()
        return cut

    # -- endpoints -------------------------------------------------------------------------------
    async def health(self, request: web.Request) -> web.Response:
        return web.Response()

    async def metrics(self, request: web.Request) -> web.Response:
        if not self.exposed:
            return _error("not a scrape target", 503)
        if self.first_scraped is None:
            self.first_scraped = time.monotonic()
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
        transport = request.transport
        if transport is not None:
            self._connections.add(transport)
        handler = asyncio.current_task()
        if handler is not None:
            self._handlers.add(handler)
        try:
            kv = body.get("kv_transfer_params")
            kv = kv if isinstance(kv, dict) else {}
            remote = bool(kv.get("do_remote_prefill")) and self.transfer_s is not None
            arrived = self.engine.clock.now()
            if remote and self.transfer_s is not None:  # the decode engine pulls the KV
                await asyncio.sleep(self.transfer_s(prompt_tokens) / self.engine.clock.speed)
            blocks = prompt_blocks(tokens, self.engine.cfg.prefix_block_tokens)
            stream = self.engine.submit(
                prompt_tokens, max_tokens, blocks, remote=remote, arrival_s=arrived
            )
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
                    "kv_transfer_params": self._produced(kv, prompt_tokens),
                }
            )
        finally:
            self.in_flight -= 1
            if transport is not None:
                self._connections.discard(transport)
            if handler is not None:
                self._handlers.discard(handler)

    def _produced(self, kv: dict[str, Any], prompt_tokens: int) -> dict[str, Any] | None:
        """What a prefill engine returns for its decode engine to pull the KV with (vLLM's NIXL
        connector's fields); None when the request asked for no remote decode."""
        if not kv.get("do_remote_decode"):
            return None
        blocks = -(-prompt_tokens // self.engine.cfg.block_size)
        return {
            "do_remote_prefill": True,
            "do_remote_decode": False,
            "remote_engine_id": f"twin-{self.port}",
            "remote_block_ids": list(range(blocks)),
            "remote_host": "127.0.0.1",
            "remote_port": self.port,
        }

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
