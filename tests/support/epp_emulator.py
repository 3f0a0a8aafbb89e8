"""An endpoint-picker *metrics emulator*: not the Gateway API Inference Extension's endpoint
picker, but its flow-control gauges for one pool, exactly as it writes them
(``tokenscale.playground.epp_exposition``), on a ``/metrics`` a real Prometheus scrapes. A test
sets the queue and the saturation."""

import http.server
import threading
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from tokenscale.playground.epp_exposition import EndpointPickerCollector, PoolReading
from tokenscale.playground.processes import free_port


class EndpointPickerEmulator:
    def __init__(self, pool: str, model: str = "test-model") -> None:
        self.port = free_port()
        self.reading = PoolReading(queued=0, saturation=0.0)
        self.registry = CollectorRegistry()
        self.registry.register(EndpointPickerCollector(pool, model, lambda: self.reading))
        self._server: Any = None

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def set(self, queued: int, saturation: float) -> None:
        self.reading = PoolReading(queued, saturation)

    def start(self) -> "EndpointPickerEmulator":
        registry = self.registry

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = generate_latest(registry)
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE_LATEST)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
