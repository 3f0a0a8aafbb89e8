"""The timing the live loop and the simulator share: the resync loop's fixed-rate starts, the
engine's clock under ``--time-scale``, and Prometheus' ``rate()`` as the simulator models it."""

import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tokenscale.controller.resync import FleetMetrics, next_due
from tokenscale.controller.telemetry import Telemetry
from tokenscale.metrics import PrometheusConfig, PrometheusSource
from tokenscale.scaling import Snapshot
from tokenscale.simulation.observe import extrapolated_rate


def test_a_cycle_within_its_period_starts_the_next_one_period_after_the_last() -> None:
    assert next_due(100.0, 101.2, 3.0) == 103.0  # not 101.2 + 3: no drift by the cycle's time


def test_a_cycle_that_overran_skips_the_starts_it_missed() -> None:
    assert next_due(100.0, 107.5, 3.0) == 109.0


@given(
    st.floats(0, 1e6, allow_nan=False),
    st.floats(0, 1e3, allow_nan=False),
    st.floats(0.01, 100, allow_nan=False),
)
def test_starts_stay_on_the_grid_and_are_never_in_the_past(
    due: float, late: float, period: float
) -> None:
    now = due + late
    nxt = next_due(due, now, period)
    assert nxt >= now - 1e-6
    assert nxt - now <= period + 1e-6
    steps = (nxt - due) / period
    assert abs(steps - round(steps)) < 1e-6


class _Stub(PrometheusSource):
    """A source answering one service's snapshot, its newest sample 0.5 wall s old."""

    def snapshots(
        self, namespaces: list[str] | None, now_s: float, dispersion: bool = False
    ) -> dict[Any, Snapshot]:
        snap = Snapshot(at=now_s, replicas_reporting=1, newest_sample_age_s=0.5)
        return {("ns", "svc"): snap}

    def running_by_pod(self, namespaces: list[str] | None) -> dict[Any, dict[str, float]]:
        return {}


def test_the_engine_clock_runs_time_scale_times_the_wall_clock() -> None:
    fleet = FleetMetrics(
        _Stub(PrometheusConfig(url="http://x")),
        None,
        60.0,
        Telemetry(),
        interval_s=15.0,
        time_scale=5.0,
        origin_s=1000.0,
    )
    assert fleet.engine_time(1000.0) == 1000.0
    assert fleet.engine_time(1010.0) == 1050.0
    fleet.refresh()
    view = fleet.view(("ns", "svc"))
    assert view is not None
    assert view.snapshot is not None
    assert view.read_at_s is not None
    assert view.snapshot.at == view.read_at_s  # the observation is on the engine's clock
    assert view.snapshot.newest_sample_age_s == 2.5  # 0.5 wall s × 5
    assert view.time_scale == 5.0
    assert view.now_s >= view.read_at_s


class _RolesStub(PrometheusSource):
    """A prefill/decode service's snapshot: each role's own, stamped at the wall read time."""

    def snapshots(
        self, namespaces: list[str] | None, now_s: float, dispersion: bool = False
    ) -> dict[Any, Snapshot]:
        roles = {
            role: Snapshot(
                at=now_s, replicas_reporting=1, newest_sample_age_s=0.5, rate_window_s=6.0
            )
            for role in ("prefill", "decode")
        }
        snap = Snapshot(
            at=now_s, replicas_reporting=1, newest_sample_age_s=0.5, rate_window_s=6.0, roles=roles
        )
        return {("ns", "svc"): snap}

    def running_by_pod(self, namespaces: list[str] | None) -> dict[Any, dict[str, float]]:
        return {}


def test_each_roles_snapshot_is_on_the_engine_clock_too() -> None:
    """Under ``--time-scale`` a role's snapshot read at the wall time looked minutes stale on
    the engine's clock (ahead of the wall by ``(scale − 1) × elapsed``), so both P/D roles held
    blind in the playground."""
    fleet = FleetMetrics(
        _RolesStub(PrometheusConfig(url="http://x")),
        None,
        60.0,
        Telemetry(),
        interval_s=15.0,
        time_scale=20.0,
        origin_s=1000.0,
    )
    fleet.refresh()
    view = fleet.view(("ns", "svc"))
    assert view is not None
    assert view.snapshot is not None
    for role in ("prefill", "decode"):
        snap = view.snapshot.roles[role]
        assert snap.at == view.read_at_s
        assert snap.newest_sample_age_s == 10.0  # 0.5 wall s × 20
        # the rate window too: the forecast learns no trend while 120 engine s fill it
        assert snap.rate_window_s == 120.0
    assert view.snapshot.rate_window_s == 120.0


def test_at_time_scale_one_the_engine_clock_is_the_wall_clock() -> None:
    fleet = FleetMetrics(None, None, 60.0, Telemetry(), interval_s=15.0)
    assert fleet.engine_time(1234.5) == 1234.5


def test_a_steady_counter_over_a_full_window_reads_its_rate() -> None:
    # 2 per second, sampled every 5 s, the newest sample at the window's end
    samples = [(t, 2.0 * t) for t in range(5, 125, 5)]
    (t0, v0), (t1, v1) = samples[0], samples[-1]
    rate = extrapolated_rate(v0 + 100, v1 + 100, t0, t1, len(samples), 0.0, 120.0)
    assert math.isclose(rate, 2.0, rel_tol=1e-9)


def test_a_series_younger_than_the_window_reads_low_as_prometheus_does() -> None:
    # a counter that began at zero 40 s ago, 2 per second: Prometheus does not extrapolate
    # to before the zero and divides by the whole 120-s window
    rate = extrapolated_rate(0.0, 80.0, 80.0, 120.0, 9, 0.0, 120.0)
    assert math.isclose(rate, 80.0 / 120.0, rel_tol=1e-9)
    assert rate < 80.0 / 40.0
