"""High availability: two operator processes elect one leader on a Lease (real API server)."""

import time
from collections.abc import Callable
from typing import Any

import pytest
import requests
from kubernetes import client

from tests.helpers import manifest
from tests.integration.conftest import Objects
from tokenscale.playground.processes import Process, free_port, wait_for

pytestmark = pytest.mark.integration
LEASE_S, RENEW_S, RETRY_S = 6, 4, 1
LEASE = "tokenscale-leader"


HEALTH: dict[int, int] = {}
"""metrics port → health port of each candidate"""


def _candidate(
    start_operator: Callable[..., Process], namespace: str, identity: str, port: int
) -> Process:
    HEALTH[port] = free_port()
    return start_operator(
        namespace,
        "--leader-elect",
        "--leader-election-namespace",
        namespace,
        "--leader-election-identity",
        identity,
        "--lease-duration",
        str(LEASE_S),
        "--renew-deadline",
        str(RENEW_S),
        "--retry-period",
        str(RETRY_S),
        "--metrics-port",
        str(port),
        "--liveness",
        f"http://127.0.0.1:{HEALTH[port]}/healthz",
        name=identity,
    )


def _holder(objects: Objects) -> str | None:
    coordination = client.CoordinationV1Api(objects.core.api_client)
    try:
        lease = coordination.read_namespaced_lease(LEASE, objects.ns)
    except client.exceptions.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return lease.spec.holder_identity or None


def _reconciles(port: int) -> float:
    """The process's own count of reconciles (each is the only path to a write)."""
    text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    for line in text.splitlines():
        if line.startswith("tokenscale_reconcile_duration_seconds_count"):
            return float(line.split()[-1])
    return 0.0


def _scaled(objects: Objects) -> list[Any]:
    return [e for e in objects.events("test") if e.reason == "Scaled"]


def test_two_replicas_one_writer_and_a_killed_leader_is_replaced_in_time(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    ports = {"op-a": free_port(), "op-b": free_port()}
    procs = {who: _candidate(start_operator, namespace, who, ports[who]) for who in ports}
    wait_for(lambda: _holder(objects) is not None, 60, "a leader")
    leader = _holder(objects)
    assert leader is not None
    follower = next(who for who in procs if who != leader)

    objects.create(manifest())
    wait_for(lambda: objects.deployment("test") is not None, 60, "Deployment")
    for replicas in (2, 3):
        objects.patch_spec("test", {"scaling": {"replicas": replicas}})
        wait_for(
            lambda r=replicas: objects.deployment("test").spec.replicas == r, 30, f"{replicas}"
        )
    wait_for(lambda: len(_scaled(objects)) == 2, 30, "two Scaled events")
    time.sleep(3 * RETRY_S)  # several resync cycles on both processes
    assert _reconciles(ports[leader]) > 0
    assert _reconciles(ports[follower]) == 0, procs[follower].tail()
    assert "applied" not in procs[follower].log_path.read_text()
    assert len(_scaled(objects)) == 2  # one event per change, from one writer
    assert procs[follower].alive()
    health = requests.get(f"http://127.0.0.1:{HEALTH[ports[follower]]}/healthz", timeout=5)
    assert health.ok  # the idle follower stays ready
    assert "follower" in health.text
    leader_health = requests.get(f"http://127.0.0.1:{HEALTH[ports[leader]]}/healthz", timeout=5)
    assert "leader" in leader_health.text

    procs[leader].kill()  # kill -9: the Lease is not released
    killed = time.monotonic()
    wait_for(lambda: _holder(objects) == follower, LEASE_S + RETRY_S + 10, "takeover")
    took_s = time.monotonic() - killed
    assert took_s <= LEASE_S + RETRY_S + 3, took_s  # slack for process scheduling

    # the new leader carries on from status: no duplicate event for the decisions already made
    time.sleep(3 * RETRY_S)
    assert len(_scaled(objects)) == 2
    assert objects.get("test")["status"]["decidedReplicas"] == 3
    objects.patch_spec("test", {"scaling": {"replicas": 4}})
    wait_for(lambda: objects.deployment("test").spec.replicas == 4, 30, "scaled by the new leader")
    wait_for(lambda: len(_scaled(objects)) == 3, 30, "its Scaled event")
    time.sleep(2 * RETRY_S)
    assert len(_scaled(objects)) == 3
    assert _reconciles(ports[follower]) > 0
    print(f"takeover after kill -9: {took_s:.1f} s (lease {LEASE_S} s, retry {RETRY_S} s)")


def test_a_clean_stop_hands_the_lease_over_at_once(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    procs = {who: _candidate(start_operator, namespace, who, free_port()) for who in ("a", "b")}
    wait_for(lambda: _holder(objects) is not None, 60, "a leader")
    leader = _holder(objects)
    assert leader is not None
    other = next(who for who in procs if who != leader)
    wait_for(lambda: "leads; starting" in procs[leader].log_path.read_text(), 30, "started")
    time.sleep(2)
    stopped = time.monotonic()
    procs[leader].stop()  # SIGTERM: Kopf stops, then the Lease is released
    wait_for(lambda: _holder(objects) == other, LEASE_S + 10, "handover")
    took_s = time.monotonic() - stopped
    assert took_s < LEASE_S, "released, not expired"
    assert procs[other].alive()
    print(f"handover after SIGTERM: {took_s:.1f} s")
