"""A small OpenAI-compatible streaming server for the ``tokenscale bench`` tests (a fake engine).

It speaks vLLM's wire format — ``POST /v1/completions`` with ``stream``: SSE ``data:`` chunks
``{"id", "object": "text_completion", "created", "model", "choices": [{"index", "text",
"logprobs", "finish_reason", "stop_reason"}], "usage": null}``, a final chunk with
``"choices": []`` and ``usage`` when ``stream_options.include_usage`` is set, then
``data: [DONE]`` — plus ``POST /tokenize`` (``count``, ``max_model_len``) and ``/metrics``
(``vllm:num_requests_waiting``, ``vllm:num_requests_running``, ``vllm:kv_cache_usage_perc``).

Timing is a toy engine, not a GPU: ``max_num_seqs`` run at once (the rest wait);
TTFT = ``prefill_s_per_token × prompt tokens``; each next token after
``itl_s × (1 + running / knee)``. Knobs make it misbehave: every ``error_every``-th request
answers HTTP 500, ``stall_s`` freezes the stream mid-way, ``hang`` never answers at all,
``metrics_text`` replaces the Prometheus page, ``stop()`` kills it mid-phase.
Tokens are whitespace-separated words.
"""

import argparse
import asyncio
import json
import threading
import time
from dataclasses import dataclass

from aiohttp import web


@dataclass
class ServerKnobs:
    itl_s: float = 0.002
    prefill_s_per_token: float = 0.000_002
    knee: float = 16.0
    max_num_seqs: int = 64
    max_model_len: int = 16384
    error_every: int = 0
    stall_s: float = 0.0
    tokenize: bool = True
    models: bool = True
    """Serve ``GET /v1/models`` (with ``max_model_len``, as vLLM does)."""
    hang: bool = False
    """Accept every request and never answer."""
    metrics_text: str | None = None
    """Serve this on ``/metrics`` instead of Prometheus text."""
    tokenize_count: str | None = None
    """Send this JSON number text (``1e400``, ``-3``) as ``/tokenize``'s ``count``."""
    usage_tokens: str | None = None
    """Send this JSON number text as ``usage.prompt_tokens`` and ``completion_tokens``."""


class FakeEngine:
    def __init__(self, knobs: ServerKnobs) -> None:
        self.knobs = knobs
        self.requests = 0
        self.running = 0
        self.waiting = 0
        self._slots: asyncio.Semaphore | None = None

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/completions", self.completions)
        if self.knobs.tokenize:
            app.router.add_post("/tokenize", self.tokenize)
        app.router.add_get("/metrics", self.metrics)
        if self.knobs.models:
            app.router.add_get("/v1/models", self.models)
        if self.knobs.hang:
            app.middlewares.append(self._hang)
        return app

    @web.middleware
    async def _hang(self, request: web.Request, handler: object) -> web.StreamResponse:
        await asyncio.sleep(3600)
        raise web.HTTPServiceUnavailable

    async def models(self, request: web.Request) -> web.Response:
        model = {"id": "fake", "object": "model", "max_model_len": self.knobs.max_model_len}
        return web.json_response({"object": "list", "data": [model]})

    async def tokenize(self, request: web.Request) -> web.Response:
        body = await request.json()
        if self.knobs.tokenize_count is not None:  # a number json.dumps cannot write
            limit = self.knobs.max_model_len
            text = f'{{"count": {self.knobs.tokenize_count}, "max_model_len": {limit}}}'
            return web.Response(text=text, content_type="application/json")
        return web.json_response(
            {"count": len(str(body["prompt"]).split()), "max_model_len": self.knobs.max_model_len}
        )

    async def metrics(self, request: web.Request) -> web.Response:
        if self.knobs.metrics_text is not None:
            return web.Response(text=self.knobs.metrics_text, content_type="text/plain")
        labels = 'model_name="fake",engine="0"'
        usage = min(1.0, self.running / max(self.knobs.max_num_seqs, 1))
        text = (
            "# TYPE vllm:num_requests_waiting gauge\n"
            f"vllm:num_requests_waiting{{{labels}}} {self.waiting}\n"
            "# TYPE vllm:num_requests_running gauge\n"
            f"vllm:num_requests_running{{{labels}}} {self.running}\n"
            "# TYPE vllm:kv_cache_usage_perc gauge\n"
            f"vllm:kv_cache_usage_perc{{{labels}}} {usage}\n"
        )
        return web.Response(text=text, content_type="text/plain")

    async def completions(self, request: web.Request) -> web.StreamResponse:
        k = self.knobs
        if self._slots is None:
            self._slots = asyncio.Semaphore(k.max_num_seqs)
        body = await request.json()
        self.requests += 1
        if k.error_every and self.requests % k.error_every == 0:
            return web.json_response({"error": "injected failure"}, status=500)
        prompt_tokens = len(str(body["prompt"]).split())
        max_tokens = int(body.get("max_tokens", 16))
        if prompt_tokens + max_tokens > k.max_model_len:
            return web.json_response({"error": "context too long"}, status=400)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        self.waiting += 1
        async with self._slots:
            self.waiting -= 1
            self.running += 1
            try:
                await self._stream(resp, body, prompt_tokens, max_tokens)
            finally:
                self.running -= 1
        return resp

    async def _stream(
        self, resp: web.StreamResponse, body: dict[str, object], prompt_tokens: int, n: int
    ) -> None:
        k = self.knobs
        rid, created = f"cmpl-{self.requests}", int(time.time())
        await asyncio.sleep(k.prefill_s_per_token * prompt_tokens)
        for i in range(n):
            if i:
                await asyncio.sleep(k.itl_s * (1.0 + self.running / k.knee))
            if k.stall_s and i == n // 2:
                await asyncio.sleep(k.stall_s)
            chunk = {
                "id": rid,
                "object": "text_completion",
                "created": created,
                "model": body.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "text": " tok",
                        "logprobs": None,
                        "finish_reason": "length" if i == n - 1 else None,
                        "stop_reason": None,
                    }
                ],
                "usage": None,
            }
            await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
        options = body.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage"):
            usage = {
                "id": rid,
                "object": "text_completion",
                "created": created,
                "model": body.get("model"),
                "choices": [],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "total_tokens": prompt_tokens + n,
                    "completion_tokens": n,
                },
            }
            text = json.dumps(usage)
            if k.usage_tokens is not None:  # numbers json.dumps cannot write (1e400)
                text = text.replace(
                    f'"prompt_tokens": {prompt_tokens}', f'"prompt_tokens": {k.usage_tokens}'
                )
                text = text.replace(
                    f'"completion_tokens": {n}', f'"completion_tokens": {k.usage_tokens}'
                )
            await resp.write(f"data: {text}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")


class OpenAIServer:
    """The fake engine on a free port, served from its own thread and event loop."""

    def __init__(self, knobs: ServerKnobs, port: int) -> None:
        self.engine = FakeEngine(knobs)
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def start(self) -> "OpenAIServer":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    async def _start(self) -> None:
        self._runner = web.AppRunner(self.engine.app(), shutdown_timeout=0.5)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    def stop(self) -> None:
        """Stop answering (also mid-phase): open streams are cut."""
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
            self._runner = None

    def close(self) -> None:
        self.stop()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()


def main() -> None:
    ap = argparse.ArgumentParser(description="Fake OpenAI-compatible streaming engine")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--itl-s", type=float, default=0.0)
    ap.add_argument("--max-num-seqs", type=int, default=100_000)
    args = ap.parse_args()
    knobs = ServerKnobs(itl_s=args.itl_s, prefill_s_per_token=0.0, max_num_seqs=args.max_num_seqs)
    web.run_app(FakeEngine(knobs).app(), host="127.0.0.1", port=args.port, print=None)


if __name__ == "__main__":
    main()
