"""The playground's scale-to-zero pieces that need no server: the idle-burst load, the spec
it runs, the gateway twin's held count and its exposition, and the cost of waking read from a
run's timeline."""

import asyncio
import itertools
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest

from tokenscale.playground.epp_exposition import EndpointPickerCollector, PoolReading
from tokenscale.playground.load import Outcome, Router, shaped_trace
from tokenscale.playground.service import default_spec_path, load_service, scale_to_zero
from tokenscale.playground.session import PlaygroundResult
from tokenscale.playground.summary import wake_ttfts
from tokenscale.simulation import TimelinePoint


def test_the_idle_burst_load_is_two_bursts_with_nothing_between() -> None:
    trace = shaped_trace("idle-burst", 900.0, 0.5, 2.0, seed=1)
    times = [r.arrival_s for r in trace.requests]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert max(gaps) > 300.0  # the silence between the bursts (40 % of the span, re-based)
    assert sum(1 for g in gaps if g > 60.0) == 1
    assert len(times) > 100


def test_the_idle_burst_spec_can_sleep_and_names_what_changed() -> None:
    service = load_service(default_spec_path().read_text(), "default")
    assert service.spec.scaling.min_replicas >= 1
    zero, changed = scale_to_zero(service, "default")
    s = zero.spec
    assert s.scaling.min_replicas == 0
    assert s.scaling.scale_to_zero.idle_seconds == 120
    assert s.gateway.inference_pool is not None
    assert "minReplicas=0" in changed
    assert zero.applied_manifest("playground")["spec"]["scaling"]["minReplicas"] == 0
    again, nothing = scale_to_zero(zero, "default")
    assert nothing == ""
    assert again is zero


def test_the_router_counts_what_it_holds_while_no_twin_is_ready() -> None:
    async def run() -> list[int]:
        router = Router()
        waiters = [asyncio.create_task(router.pick()) for _ in range(3)]
        await asyncio.sleep(0.01)
        seen = [router.held]
        twin: Any = type("T", (), {"in_flight": 0})()
        router.add(twin)
        await asyncio.gather(*waiters)
        seen.append(router.held)
        return seen

    assert asyncio.run(run()) == [3, 0]


def test_the_gateway_exports_the_pickers_gauges() -> None:
    registry = CollectorRegistry()
    registry.register(EndpointPickerCollector("chat", "m", lambda: PoolReading(4, 1.0)))
    text = generate_latest(registry).decode()
    assert "inference_extension_flow_control_queue_size{" in text
    assert 'inference_pool="chat"' in text
    assert 'inference_extension_flow_control_pool_saturation{inference_pool="chat"} 1.0' in text


def _point(t: float, target: int, ready: int, starting: int = 0) -> TimelinePoint:
    return TimelinePoint(
        t_s=t,
        arrival_rps=0.0,
        replicas_target=target,
        replicas_ready=ready,
        replicas_starting=starting,
        waiting=0,
        kv_usage_max=0.0,
        ttft_p99_s=None,
        tpot_p99_s=None,
    )


def test_the_cost_of_waking_is_the_first_ttft_of_each_stretch_at_zero() -> None:
    timeline = [
        _point(0, 2, 2),
        _point(20, 0, 0),
        _point(40, 0, 0),
        _point(60, 1, 0, 1),
        _point(120, 1, 1),
        _point(140, 0, 0),  # a stretch at zero no request arrived in
        _point(160, 1, 1),
    ]
    outcomes = [
        Outcome(10.0, True, 0.5, 0.02, 10),
        Outcome(45.0, True, 75.0, 0.02, 10),  # found none: waited for the wake
        Outcome(50.0, True, 70.0, 0.02, 10),
        Outcome(130.0, True, 0.4, 0.02, 10),
    ]
    r = PlaygroundResult(
        service="s", speed=20.0, trace="t", duration_s=160.0, sent=4, completed=4,
        slo_attainment=1.0, ttft_p50_s=1.0, ttft_p99_s=1.0, tpot_p99_s=0.02, gpu_hours=0.0,
        replicas_max=2, events=[], timeline=timeline, ttft_slo_s=2.0, tpot_slo_s=0.1,
        ports=[], pids=[], outcomes=outcomes,
    )  # fmt: skip
    assert wake_ttfts(r) == [75.0]
