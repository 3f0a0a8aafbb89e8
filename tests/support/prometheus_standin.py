"""A FAKE Prometheus: answers ``GET /api/v1/query`` with bodies a test crafts.

It exists because a real Prometheus cannot be made to return these bodies (a 200 with
``"status": "error"``, ``result: null``, a scalar where a vector was asked for, a sample without
a label map, ``1e400``); a proxy or another server speaking the query API can. Everything else
about the API is left out: the operator only ever calls the instant-query endpoint.

``answers`` maps a PromQL string (as ``tokenscale.metrics.promql.queries`` writes it) to what is
sent back: a JSON-able body (HTTP 200), a ``(status, body)`` pair, a ``str`` sent verbatim
(for bodies JSON cannot write, such as a bare ``1e400``), or a callable returning one of those
at each request (for samples that must look fresh). Unmapped queries answer the empty vector.
``seen`` records each query asked.
"""

import http.server
import json
import threading
import urllib.parse
from typing import Any, Self

EMPTY: dict[str, Any] = {"status": "success", "data": {"resultType": "vector", "result": []}}


def vector(*samples: tuple[dict[str, str], str]) -> dict[str, Any]:
    """A well-formed vector answer of ``(labels, value)`` samples at time 1e9."""
    return {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [{"metric": labels, "value": [1e9, value]} for labels, value in samples],
        },
    }


class PrometheusStandIn:
    def __init__(self) -> None:
        self.answers: dict[str, Any] = {}
        self.seen: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urllib.parse.urlparse(self.path)
                if url.path != "/api/v1/query":
                    self._send(404, {"status": "error", "error": "not found"})
                    return
                query = urllib.parse.parse_qs(url.query).get("query", [""])[0]
                outer.seen.append(query)
                answer = outer.answers.get(query, EMPTY)
                if callable(answer):
                    answer = answer()
                status, body = answer if isinstance(answer, tuple) else (200, answer)
                self._send(status, body)

            def _send(self, status: int, body: Any) -> None:
                data = (body if isinstance(body, str) else json.dumps(body)).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
