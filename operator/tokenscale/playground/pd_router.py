"""The prefill/decode router of a disaggregated playground service: what llm-d's routing sidecar
does in front of a decode pod, as one local proxy.

A client's ``/v1/completions`` goes to the proxy; it sends the prompt to the prefill twin with
the fewest requests in flight as a one-token request with ``kv_transfer_params:
{"do_remote_decode": true}``, takes the ``kv_transfer_params`` its answer returns, and sends the
original request with them to the decode twin with the fewest requests in flight, whose answer
(streamed or not) it relays. The decode twin waits the modelled KV transfer before admitting the
prompt (``playground/twin.py``), so a client's TTFT is the prefill pool's queue and prefill, the
transfer and the decode pool's first step, as in the simulator's disaggregated fleet.

While a role has no ready twin its requests wait at the proxy (``held``).
"""

from typing import Any

import aiohttp
from aiohttp import web

from tokenscale.playground.load import Router

ROLES = ("prefill", "decode")


class RolesRouter:
    """One :class:`Router` per role and the proxy that uses them (``pick`` returns the proxy,
    once both roles have a ready twin)."""

    def __init__(self, port: int) -> None:
        self.pools = {role: Router() for role in ROLES}
        self.port = port
        self.prefills = 0
        """Prompts the proxy sent to a prefill twin."""
        self.decodes = 0
        """Requests the proxy sent on to a decode twin."""
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def held(self) -> int:
        return sum(r.held for r in self.pools.values())

    async def pick(self) -> "RolesRouter":
        return self

    async def start(self) -> "RolesRouter":
        app = web.Application()
        app.router.add_post("/v1/completions", self.completions)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=5),
        )
        return self

    async def stop(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def completions(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        body: dict[str, Any] = await request.json()
        prefill = await self.pools["prefill"].pick()
        ask = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
        ask.update(
            max_tokens=1,
            stream=False,
            kv_transfer_params={"do_remote_decode": True, "do_remote_prefill": False},
        )
        self.prefills += 1
        async with self._session.post(f"{prefill.url}/v1/completions", json=ask) as resp:
            answer = await resp.json()
            if resp.status != 200:
                return web.json_response(answer, status=resp.status)
        kv = answer.get("kv_transfer_params")
        decode = await self.pools["decode"].pick()
        self.decodes += 1
        out = web.StreamResponse()
        async with self._session.post(
            f"{decode.url}/v1/completions", json={**body, "kv_transfer_params": kv}
        ) as resp:
            out.set_status(resp.status)
            out.content_type = resp.content_type
            await out.prepare(request)
            async for chunk in resp.content.iter_any():
                await out.write(chunk)
        await out.write_eof()
        return out
