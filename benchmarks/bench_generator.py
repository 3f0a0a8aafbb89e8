"""Is the load generator the bottleneck? Streamed requests per second against a local server.

The fake OpenAI-compatible engine (tests/support/openai_server.py) runs in its own process with
no artificial latency; ``tokenscale bench``'s closed loop drives it with 8-token streamed
completions at concurrency 128 for 8 s, three times. Target: ≥ 500 streamed requests/s
(median) on this machine — both processes share its two cores.

    python benchmarks/bench_generator.py
"""

import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

from tokenscale.bench.client import Endpoint
from tokenscale.bench.runner import BenchState, closed_loop

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tokenscale.playground.processes import free_port  # noqa: E402


async def one_run(url: str) -> float:
    ep = Endpoint(url, "fake", timeout_s=30.0)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        records, took = await closed_loop(
            session, ep, BenchState(), 128, lambda: (100, 8), 1_000_000, 8.0
        )
    ok = sum(1 for r in records if r.ok)
    assert ok == len(records), f"{len(records) - ok} failed"
    return ok / took


def main() -> None:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.support.openai_server", "--port", str(port)], cwd=ROOT
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                asyncio.run(_ping(url))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        rates = [asyncio.run(one_run(url)) for _ in range(3)]
    finally:
        server.terminate()
        server.wait(10)
    median = statistics.median(rates)
    print("streamed requests/s per run:", ", ".join(f"{r:,.0f}" for r in rates))
    print(f"{'PASS' if median >= 500 else 'MISS'}  median {median:,.0f} requests/s (target ≥ 500)")


async def _ping(url: str) -> None:
    async with aiohttp.ClientSession() as s, s.get(f"{url}/metrics") as resp:
        await resp.read()


if __name__ == "__main__":
    main()
