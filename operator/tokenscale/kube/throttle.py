"""Client-side manners for the API server: a QPS/burst token bucket and back-off on 429.

client-go's conventions: a token bucket refilled at ``qps`` tokens per second holding at
most ``burst`` tokens; every request takes one, waiting when the bucket is empty. A 429
(API Priority and Fairness, or ``--max-requests-inflight``, rejected the request before
running it, so a retry is safe for writes too) is retried after the ``Retry-After`` the
server sent (else an exponential back-off from 0.5 s, capped at 30 s), up to ``max_retries``
times; then the 429 is returned to the caller like any other error.

:func:`install` wraps the client's ``rest_client.request``, the one door every typed method
and ``Kube._raw`` goes through. Kopf's own requests (its watches, its annotation patches) use
Kopf's client, which backs off on 429 by itself.
"""

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client

log = logging.getLogger(__name__)
BACKOFF_FIRST_S = 0.5
BACKOFF_CAP_S = 30.0


@dataclass(frozen=True)
class ClientLimits:
    """Client-side limits. client-go's defaults (5 QPS, burst 10) would take half an hour
    over the ~9 requests each new service costs (three GETs of names not yet cached, three
    applies, one event, two status writes); 300 QPS with a burst of 600 lets a thousand creates
    through in about 30 s while still bounding a runaway loop, and the server's fairness (429,
    retried here) protects everyone else."""

    qps: float = 300.0
    burst: int = 600
    max_retries: int = 8


class TokenBucket:
    """``take()`` blocks until a token is free; thread-safe. ``qps`` ≤ 0: unlimited."""

    def __init__(
        self,
        qps: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.qps, self.burst = qps, max(1, burst)
        self.clock, self.sleep = clock, sleep
        self._tokens = float(self.burst)
        self._at = clock()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take a token now, possibly going into debt; the seconds to wait before using it."""
        if self.qps <= 0:
            return 0.0
        with self._lock:
            now = self.clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.qps)
            self._at = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def take(self) -> float:
        """Wait for a token; the seconds waited."""
        wait = self.reserve()
        if wait > 0:
            self.sleep(wait)
        return wait


def retry_after_s(headers: Any, attempt: int) -> float:
    """The server's ``Retry-After`` (whole seconds), else 0.5 s × 2^attempt with ±20 % jitter,
    capped at 30 s."""
    raw = None
    if headers is not None:
        try:
            raw = headers.get("Retry-After")
        except AttributeError:
            raw = None
    if raw is not None:
        try:
            return min(BACKOFF_CAP_S, max(0.0, float(raw)))
        except ValueError:
            pass
    base = min(BACKOFF_CAP_S, BACKOFF_FIRST_S * 2.0**attempt)
    return float(base * random.uniform(0.8, 1.2))


RequestObserver = Callable[[str, int], None]
"""Called once per response with (HTTP method, status); 429s included, each attempt."""


def install(
    api: client.ApiClient,
    limits: ClientLimits,
    observe: RequestObserver | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> TokenBucket:
    """Rate-limit and 429-retry every request ``api`` makes; returns the bucket."""
    bucket = TokenBucket(limits.qps, limits.burst, sleep=sleep)
    rest = api.rest_client
    inner: Callable[..., Any] = rest.request

    def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        attempt = 0
        while True:
            bucket.take()
            response = inner(method, url, *args, **kwargs)
            status = int(getattr(response, "status", 0) or 0)
            if observe is not None:
                observe(method, status)
            if status != 429 or attempt >= limits.max_retries:
                return response
            delay = retry_after_s(getattr(response, "headers", None), attempt)
            response.read()  # frees the connection
            log.warning(
                "API server answered 429 (too many requests) to %s %s; retry %d/%d in %.1f s",
                method,
                url.split("?", 1)[0],
                attempt + 1,
                limits.max_retries,
                delay,
            )
            attempt += 1
            sleep(delay)

    rest.request = request  # type: ignore[method-assign]
    return bucket
