"""The gateway twin: the endpoint picker's side of the playground's router.

The router (``playground/load.py``) already holds requests while no twin is ready; this serves
what an endpoint picker exports about it on ``/metrics`` — the flow-control queue (requests
held) and the pool's saturation (1.0 when no twin is ready: an empty pool reads as saturated,
as the picker's does; else the highest KV usage of the ready twins) — labelled with the
InferencePool's name (``playground/epp_exposition.py``). Prometheus scrapes it with the
namespace label, and the operator reads it as the demand in front of the engines.
"""

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from tokenscale.playground.epp_exposition import EndpointPickerCollector, PoolReading
from tokenscale.playground.load import Router


class GatewayTwin:
    def __init__(self, router: Router, pool: str, model: str, port: int) -> None:
        self.router = router
        self.port = port
        self.registry = CollectorRegistry()
        self.registry.register(EndpointPickerCollector(pool, model, self.reading))
        self._runner: web.AppRunner | None = None

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def reading(self) -> PoolReading:
        twins = self.router.twins
        saturation = max((t.engine.replica.kv_usage for t in twins), default=1.0)
        return PoolReading(queued=self.router.held, saturation=saturation)

    async def metrics(self, _request: web.Request) -> web.Response:
        body = generate_latest(self.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def start(self) -> "GatewayTwin":
        app = web.Application()
        app.router.add_get("/metrics", self.metrics)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
