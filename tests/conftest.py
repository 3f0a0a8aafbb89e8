"""Fixtures shared by the unit and integration suites."""

import os
from collections.abc import Callable, Iterator

import pytest
from hypothesis import settings

# The tests never reach the Hugging Face Hub: a model name the catalog does not know is looked up
# in the local cache only (tests that need a cache point HF_HUB_CACHE at their own directory).
os.environ["HF_HUB_OFFLINE"] = "1"

from tests.support.openai_server import OpenAIServer, ServerKnobs
from tokenscale.playground.processes import free_port

# Parallel workers (pytest-xdist) pick their servers' ports from disjoint ranges below the OS's
# ephemeral range (free_port reads the variable at each call), so a port one worker's stopped
# server frees is never taken by the other's.
_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker.startswith("gw") and _worker[2:].isdigit() and "TOKENSCALE_PORT_RANGE" not in os.environ:
    _low = 20000 + 2000 * (int(_worker[2:]) % 6)
    os.environ["TOKENSCALE_PORT_RANGE"] = f"{_low}-{_low + 1999}"

# No per-example deadline: the unit suite runs on two workers sharing two cores, where a wall-clock
# limit measures the neighbour, not the code (timings live in benchmarks/, not in tests).
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


@pytest.fixture
def server() -> Iterator[Callable[..., OpenAIServer]]:
    """Start fake streaming engines (``server(**ServerKnobs fields)``); all closed afterwards."""
    started: list[OpenAIServer] = []

    def start(**knobs: object) -> OpenAIServer:
        s = OpenAIServer(ServerKnobs(**knobs), free_port()).start()  # type: ignore[arg-type]
        started.append(s)
        return s

    yield start
    for s in started:
        s.close()
