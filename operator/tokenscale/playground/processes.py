"""Start and stop real server processes; wait for readiness by polling.

Shared by the playground and the integration tests (one implementation). Every child runs in
its own session so stopping it (SIGTERM, then SIGKILL) takes its children with it.
"""

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

PORT_RANGE_ENV = "TOKENSCALE_PORT_RANGE"
_handed_out: set[int] = set()


def _bindable(port: int) -> bool:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def port_range(text: str) -> range:
    """``"LOW-HIGH"`` (inclusive, 1024–65535) as a range; ValueError naming the variable."""
    low_s, sep, high_s = text.partition("-")
    try:
        low, high = int(low_s), int(high_s)
    except ValueError:
        low, high = 0, 0
    if not sep or not 1024 <= low <= high <= 65535:
        raise ValueError(f"{PORT_RANGE_ENV}={text!r}: expected LOW-HIGH within 1024-65535")
    return range(low, high + 1)


OS_PICK_TRIES = 1000
"""How many ports the OS is asked for before :func:`free_port` gives up on a new one."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now, never one this process handed out before.

    With ``TOKENSCALE_PORT_RANGE=LOW-HIGH`` the port comes from that range (in order, from a
    point set by the process id), else the OS picks one. Parallel test workers each get their own
    range (tests/conftest.py): a server one worker stops and restarts on its port cannot lose it
    to a server another worker starts, which an OS-picked port allows.
    """
    text = os.environ.get(PORT_RANGE_ENV)
    if not text:
        # the OS may hand a port back once it is free again: ask until it names a new one
        for _ in range(OS_PICK_TRIES):
            with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
                s.bind(("127.0.0.1", 0))
                port = int(s.getsockname()[1])
            if port not in _handed_out:
                _handed_out.add(port)
                return port
        raise RuntimeError(f"the OS named only ports handed out before ({OS_PICK_TRIES} tries)")
    ports = port_range(text)
    start = os.getpid() % len(ports)
    for i in range(len(ports)):
        port = ports[(start + i) % len(ports)]
        if port not in _handed_out and _bindable(port):
            _handed_out.add(port)
            return port
    raise RuntimeError(f"{PORT_RANGE_ENV}={text}: no free port left")


def port_in_use(port: int) -> bool:
    """Something listens on ``127.0.0.1:port``."""
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def wait_for(
    check: Callable[[], object], timeout_s: float, what: str, interval_s: float = 0.2
) -> None:
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception as exc:
            last = exc
        time.sleep(interval_s)
    raise TimeoutError(f"{what} not ready after {timeout_s:.0f}s (last error: {last})")


class Process:
    """A child process with its output in a log file, stopped with SIGTERM then SIGKILL."""

    def __init__(
        self, name: str, args: list[str], log_dir: Path, env: dict[str, str] | None = None
    ) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            args,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def kill(self) -> None:
        """SIGKILL (kill -9): no cleanup, no goodbye."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)

    def stop(self, timeout_s: float = 15) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self._log.close()


@contextlib.contextmanager
def running(process: Process) -> Iterator[Process]:
    try:
        yield process
    finally:
        process.stop()
