"""A timeline read once per modelled minute, and the playground's JSON summary built on it."""

import pytest

from tokenscale.playground.session import PlaygroundResult, ScaleEvent
from tokenscale.playground.summary import gpu_hours_until, summary_json
from tokenscale.simulation import TimelinePoint
from tokenscale.simulation.minutes import (
    MinutePoint,
    agreement,
    disagreements,
    per_minute,
    pool_per_minute,
)
from tokenscale.simulation.result import PoolsPoint


def _p(t: float, desired: int, ready: int, starting: int = 0) -> TimelinePoint:
    return TimelinePoint(
        t_s=t,
        arrival_rps=1.0,
        replicas_target=desired,
        replicas_ready=ready,
        replicas_starting=starting,
        waiting=0,
        kv_usage_max=0.1,
        ttft_p99_s=None,
        tpot_p99_s=None,
    )


def test_each_minute_reads_its_last_point() -> None:
    tl = [_p(15, 1, 1), _p(45, 2, 1, 1), _p(60, 2, 2), _p(75, 3, 2, 1), _p(200, 1, 1)]
    minutes = per_minute(tl, 200.0)
    assert [(m.minute, m.t_s, m.desired, m.ready) for m in minutes] == [
        (0, 60, 2, 2),  # the point at 60 s closes minute 0
        (1, 75, 3, 2),  # nothing else before 120 s
        (2, 75, 3, 2),
        (3, 200, 1, 1),  # the partial last minute ends with the trace
    ]
    assert per_minute([_p(90, 1, 1)], 180.0)[0].minute == 1  # no point yet: minute 0 left out


def test_agreement_counts_shared_minutes() -> None:
    a = [MinutePoint(minute=m, t_s=60.0 * m, desired=d, ready=d) for m, d in enumerate([1, 2, 3])]
    b = [MinutePoint(minute=m, t_s=60.0 * m, desired=d, ready=d) for m, d in enumerate([1, 3])]
    assert agreement(a, b) == pytest.approx(0.5)
    assert disagreements(a, b) == [(1, 2, 3)]
    assert agreement(a, []) != agreement(a, [])  # NaN: nothing shared


def test_playground_summary_json_counts_gpu_hours_over_the_load() -> None:
    tl = [_p(0, 2, 2), _p(60, 2, 2), _p(120, 4, 2, 2), _p(180, 4, 4), _p(240, 4, 4)]
    r = PlaygroundResult(
        service="s",
        speed=5.0,
        trace="t",
        duration_s=240.0,
        sent=10,
        completed=10,
        slo_attainment=0.9,
        ttft_p50_s=0.1,
        ttft_p99_s=float("nan"),
        tpot_p99_s=0.05,
        gpu_hours=1.0,
        replicas_max=4,
        events=[ScaleEvent(100.0, "Scaled", "scaled 2 → 4")],
        timeline=tl,
        ttft_slo_s=2.0,
        tpot_slo_s=0.1,
        ports=[],
        pids=[],
        gpus_per_replica=2,
        load_duration_s=180.0,
    )
    # (0, 60]: 2 replicas, (60, 120]: 4 (2 ready + 2 starting), (120, 180]: 4; × 2 GPUs
    assert gpu_hours_until(r, 180.0) == pytest.approx((2 * 60 + 4 * 60 + 4 * 60) * 2 / 3600)
    data = summary_json(r)
    assert data["scale_events"] == 1
    assert data["ttft_p99_s"] is None
    assert data["gpu_hours_during_load"] == pytest.approx(gpu_hours_until(r, 180.0))
    assert [m["desired"] for m in data["timeline"]] == [2, 4, 4]
    assert set(data) >= {"slo_attainment", "gpu_hours", "replicas_max", "timeline"}


def test_one_pool_of_several_is_read_minute_by_minute() -> None:
    """A fleet's decisions ask per pool; each pool's minutes read its own counts."""
    tl = [
        PoolsPoint(15.0, {"prefill": 1, "decode": 2}, {"prefill": 1, "decode": 2}, {}, "hold"),
        PoolsPoint(55.0, {"prefill": 1, "decode": 3}, {"prefill": 1, "decode": 2}, {}, "up"),
        PoolsPoint(130.0, {"prefill": 2, "decode": 3}, {"prefill": 1, "decode": 3}, {}, "up"),
    ]
    decode = pool_per_minute(tl, "decode", 180.0)
    assert [(m.minute, m.desired, m.ready) for m in decode] == [(0, 3, 2), (1, 3, 2), (2, 3, 3)]
    prefill = pool_per_minute(tl, "prefill", 180.0)
    assert [m.desired for m in prefill] == [1, 1, 2]
    assert pool_per_minute(tl, "serve", 180.0) == []
