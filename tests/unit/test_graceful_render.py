"""Graceful scale-down in the rendered pod: preStop drains, the grace period covers it."""

import http.server
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import EXAMPLES
from tokenscale.api.manifest import parse_manifests
from tokenscale.controller.graceful import DELETION_COST, deletion_costs
from tokenscale.planning import plan_service
from tokenscale.planning.inputs import resolve_gpu
from tokenscale.render.deployment import (
    DRAIN_SCRIPT,
    ENDPOINT_DELAY_S,
    SHUTDOWN_MARGIN_S,
    pod_template,
    termination_grace_seconds,
)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_grace_period_covers_the_plans_e2e_p99_plus_a_margin(example: Path) -> None:
    service = parse_manifests(example.read_text())[0]
    plan = plan_service(service.spec, service.metadata.name)
    pod = pod_template(service.metadata.name, service.spec, plan, resolve_gpu(service.spec))
    grace = pod["spec"]["terminationGracePeriodSeconds"]
    assert grace == termination_grace_seconds(plan)
    assert grace >= plan.e2e_p99_estimate_s + ENDPOINT_DELAY_S + SHUTDOWN_MARGIN_S
    hook = pod["spec"]["containers"][0]["lifecycle"]["preStop"]["exec"]["command"]
    assert hook[:2] == ["python3", "-c"]
    compile(hook[2], "preStop", "exec")  # valid Python


def test_the_l4_example_no_longer_cuts_its_own_e2e_p99() -> None:
    example = next(e for e in EXAMPLES if e.stem == "llama-3.1-8b-l4")
    service = parse_manifests(example.read_text())[0]
    plan = plan_service(service.spec, service.metadata.name)
    assert plan.e2e_p99_estimate_s > 60  # the old fixed grace period
    assert termination_grace_seconds(plan) > plan.e2e_p99_estimate_s + 10


@pytest.fixture
def busy_engine() -> Iterator[tuple[int, list[int]]]:
    """/metrics answering a running count that a test lowers; returns (port, [running])."""
    running = [2]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = (
                f'vllm:num_requests_running{{engine="0",model_name="m"}} {running[0]}.0\n'
                'vllm:num_requests_waiting{engine="0",model_name="m"} 0.0\n'
            ).encode()
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], running
    server.shutdown()
    server.server_close()


def test_pre_stop_waits_for_in_flight_requests_then_returns(
    busy_engine: tuple[int, list[int]],
) -> None:
    port, running = busy_engine
    script = pre_stop_script(port, delay=0, budget=20)
    started = time.monotonic()
    hook = subprocess.Popen([sys.executable, "-c", script])
    time.sleep(2.5)
    assert hook.poll() is None  # requests in flight: still waiting
    running[0] = 0
    hook.wait(10)
    assert 2.5 <= time.monotonic() - started < 8


def test_pre_stop_is_bounded(busy_engine: tuple[int, list[int]]) -> None:
    port, _ = busy_engine
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", pre_stop_script(port, delay=0, budget=2)], check=True)
    assert time.monotonic() - started < 6


def pre_stop_script(port: int, delay: int, budget: int) -> str:
    """The pod's own drain script, pointed at the test's engine with a short budget."""
    return DRAIN_SCRIPT.format(budget=budget, delay=delay, port=port)


def _pod(name: str, cost: str | None = None, deleting: bool = False) -> dict[str, object]:
    meta: dict[str, object] = {"name": name}
    if cost is not None:
        meta["annotations"] = {DELETION_COST: cost}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta}


def test_deletion_cost_is_the_running_requests_and_only_changes_are_written() -> None:
    pods = [_pod("a"), _pod("b", "7"), _pod("c", "3"), _pod("d"), _pod("e", deleting=True)]
    running = {"a": 12.4, "b": 7.0, "c": 0.0, "e": 5.0, "gone": 4.0}
    assert deletion_costs(pods, running) == {"a": "12", "c": "0"}  # d: unknown, kept
    assert deletion_costs([_pod("x")], {"x": float(2**40)}) == {"x": str(2**31 - 1)}
