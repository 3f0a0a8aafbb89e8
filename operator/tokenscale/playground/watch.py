"""Watch streams for the pod runner: the API server's change notifications, read in a daemon
thread and handed to the runner's event loop.

:class:`ApiWatch` follows one list call's watch (pods, Deployments) and calls ``on_event``
with the event's type, the object (a client model) and the wall time (``time.monotonic()``)
it arrived, on the event loop's thread. A stream that ends (the server's timeout) or fails is
opened again; the runner's periodic list stays the source of truth, the watch only makes it
prompt.
"""

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes import watch

log = logging.getLogger(__name__)
STREAM_TIMEOUT_S = 20
"""The server ends each watch after this many seconds; the thread opens the next."""


class ApiWatch:
    def __init__(
        self,
        list_call: Callable[..., Any],
        on_event: Callable[[str, Any, float], None],
        *args: Any,
        **kwargs: Any,
    ) -> None:
        self.list_call = list_call
        self.on_event = on_event
        self.args = args
        self.kwargs = kwargs
        self._stopped = threading.Event()
        self._watch: watch.Watch | None = None
        self._thread: threading.Thread | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        def follow() -> None:
            while not self._stopped.is_set():
                self._watch = watch.Watch()  # type: ignore[no-untyped-call]
                try:
                    for ev in self._watch.stream(  # type: ignore[no-untyped-call]
                        self.list_call,
                        *self.args,
                        timeout_seconds=STREAM_TIMEOUT_S,
                        **self.kwargs,
                    ):
                        if self._stopped.is_set():
                            return
                        at = time.monotonic()
                        loop.call_soon_threadsafe(self.on_event, ev["type"], ev["object"], at)
                except Exception as exc:  # the list below catches up; try again shortly
                    if self._stopped.is_set():
                        return
                    log.debug("watch %s: %s", getattr(self.list_call, "__name__", "?"), exc)
                    self._stopped.wait(0.5)

        self._thread = threading.Thread(target=follow, name="playground-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop following (the thread ends at its stream's next event or timeout)."""
        self._stopped.set()
        if self._watch is not None:
            self._watch.stop()  # type: ignore[no-untyped-call]
