"""Lead time from pods (pure) and the forecast's round trip through status."""

from typing import Any

import pytest

from tokenscale.api.status import InferenceServiceStatus
from tokenscale.controller.lead_time import lead_time_s, pod_lead_time
from tokenscale.controller.status import memory_of, read_status, status_document
from tokenscale.scaling.forecast import RateForecast
from tokenscale.scaling.state import ScalingState


def _pod(created: str, ready: str | None, status: str = "True") -> dict[str, Any]:
    conditions = (
        [] if ready is None else [{"type": "Ready", "status": status, "lastTransitionTime": ready}]
    )
    return {"metadata": {"creationTimestamp": created}, "status": {"conditions": conditions}}


def test_a_ready_pod_took_ready_minus_created() -> None:
    got = pod_lead_time(_pod("2026-01-01T00:00:00Z", "2026-01-01T00:03:10Z"))
    assert got is not None
    assert got[1] == 190.0


@pytest.mark.parametrize(
    "pod",
    [
        _pod("2026-01-01T00:00:00Z", None),  # still starting
        _pod("2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "False"),
        _pod("2026-01-01T00:05:00Z", "2026-01-01T00:01:00Z"),  # clock skew: ignored
        _pod("garbage", "2026-01-01T00:01:00Z"),
        {},
    ],
)
def test_pods_that_say_nothing_are_ignored(pod: dict[str, Any]) -> None:
    assert pod_lead_time(pod) is None


def test_the_median_of_the_most_recent_pods() -> None:
    pods = [
        _pod(f"2026-01-01T0{h}:00:00Z", f"2026-01-01T0{h}:0{m}:00Z")
        for h, m in [(0, 9), (1, 1), (2, 2), (3, 3), (4, 2), (5, 1)]  # the 9-minute one is old
    ]
    assert lead_time_s(pods) == 120.0
    assert lead_time_s([]) is None


def test_the_rate_forecast_survives_a_restart_through_status() -> None:
    state = ScalingState(
        decided_replicas=3,
        lead_time_s=95.0,
        rate=RateForecast(level_rps=12.5, trend_rps_per_s=0.01, variance=4.0, at_s=1000.0),
    )
    status = status_document(InferenceServiceStatus(decided_replicas=3, scaling=state))
    assert status["scaling"]["leadTimeSeconds"] == 95.0
    assert "decidedReplicas" not in status["scaling"]  # written once, at the top level
    read, problems = read_status(status)
    assert problems == []
    assert memory_of(read) == state
