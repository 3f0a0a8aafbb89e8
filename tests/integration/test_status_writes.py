"""Status writes with metrics on: only when something a reader acts on changed (issue 38, 9).

Real API server, real Prometheus scraping a vLLM metrics emulator, the operator at a 2 s
interval. A quiet service (steady load, nothing moving) once wrote its whole status on every
tick, because the observation's time, the calibration and the forecast's horizon change with
every read.
"""

import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import watch

from tests.helpers import manifest
from tests.integration.conftest import GROUP, PLURAL, VERSION, Objects
from tests.support.vllm_emulator import Load, VllmMetricsEmulator
from tokenscale.controller.status_news import news
from tokenscale.playground.processes import Process, wait_for
from tokenscale.playground.prometheus import PrometheusServer

pytestmark = pytest.mark.integration
INTERVAL_S = 2.0
QUIET_S = 30.0  # fifteen ticks


def _status_writes(objects: Objects, seconds: float) -> list[dict[str, Any]]:
    """Every new status of InferenceService ``test`` seen by a watch over ``seconds``."""
    first = objects.get("test")
    seen: list[dict[str, Any]] = []
    last = first.get("status")
    stream = watch.Watch().stream(
        objects.custom.list_namespaced_custom_object,
        GROUP,
        VERSION,
        objects.ns,
        PLURAL,
        field_selector="metadata.name=test",
        resource_version=first["metadata"]["resourceVersion"],
        timeout_seconds=int(seconds),
    )
    for event in stream:
        status = (event["object"] or {}).get("status")
        if event["type"] == "MODIFIED" and status != last:
            seen.append(dict(status or {}))
            last = status
    return seen


def test_a_quiet_service_writes_no_status_per_tick_and_a_change_is_written_at_once(
    start_metrics_operator: Callable[..., Process],
    prometheus: PrometheusServer,
    objects: Objects,
    namespace: str,
    emulators: Callable[..., VllmMetricsEmulator],
) -> None:
    pod = emulators(namespace, "test")
    pod.set_state(running=4, waiting=0, kv_usage=0.3)
    pod.set_load(Load(rps=5, ttft_s=0.2, tpot_s=0.02))
    op = start_metrics_operator(namespace, prometheus.url, interval_s=INTERVAL_S)
    objects.create(manifest(workload={"rps": {"mean": 0.5}}, scaling={"maxReplicas": 6}))
    wait_for(
        lambda: (objects.condition("test", "MetricsAvailable") or {}).get("status") == "True",
        60,
        "MetricsAvailable=True",
    )
    # the rate windows fill; the calibration converges from the profile's (half-life 29 s;
    # a move past 10 % on the way is news)
    time.sleep(30)

    before = objects.get("test")["status"]
    quiet = _status_writes(objects, QUIET_S)
    # before: one write per tick (about 15), each moving only decision.observedAt, the
    # calibration and the forecast's horizon by a little
    why = [news(a, b) for a, b in zip([before, *quiet], quiet, strict=False)]
    assert len(quiet) <= 2, why

    pod.set_state(running=40, waiting=0, kv_usage=0.95)  # KV pressure: a reader acts on that
    changed = time.monotonic()
    wait_for(
        lambda: (objects.get("test")["status"].get("live") or {}).get("kvUsage") == 0.95,
        30,
        "the pressure written to status.live",
    )
    wait_for(lambda: objects.get("test")["status"].get("decidedReplicas") == 2, 30, "scaled to 2")
    assert time.monotonic() - changed < 10 * INTERVAL_S
    assert op.alive(), op.tail()
