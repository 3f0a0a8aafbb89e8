"""Forecast, burst headroom, lead time and bucket-honest scale-down (pure parts)."""

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import spec as make_spec
from tokenscale.catalog.vllm_metrics import INTER_TOKEN_BUCKETS
from tokenscale.planning import plan_service
from tokenscale.scaling import EngineInput, ScalingState, Snapshot, decide
from tokenscale.scaling.buckets import bucket_range, reads_low
from tokenscale.scaling.forecast import (
    DEFAULT_LEAD_TIME_S,
    RateForecast,
    expected_rps,
    headroom,
    outlook,
    update,
)
from tokenscale.simulation.fleet import Fleet
from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import replica_config

NOW = 1_000_000.0


def _feed(rates: list[float], dt: float = 15.0) -> RateForecast:
    f: RateForecast | None = None
    for k, r in enumerate(rates):
        f = update(f, r, NOW + dt * k)
    assert f is not None
    return f


def test_a_steady_rate_has_no_trend_and_no_headroom() -> None:
    f = _feed([10.0] * 100)
    assert f.level_rps == pytest.approx(10.0)
    assert f.trend_rps_per_s == pytest.approx(0.0, abs=1e-9)
    assert headroom(f) == pytest.approx(1.0)
    assert expected_rps(f, 10.0, 195.0) == pytest.approx(10.0)


def test_a_ramp_is_expected_to_continue_one_lead_time_ahead() -> None:
    rates = [10.0 + 0.05 * 15 * k for k in range(80)]  # +0.05 RPS per second
    f = _feed(rates)
    ahead = expected_rps(f, rates[-1], 195.0)
    assert ahead > rates[-1] + 0.05 * 195 * 0.5
    assert ahead < rates[-1] + 0.05 * 195 * 1.5


def test_a_ramp_read_through_a_rate_window_is_expected_where_it_will_be() -> None:
    """``rate()`` over W seconds is the mean of the last W: on a ramp, the rate of W/2 ago.
    The outlook looks W/2 further, so a settled ramp is expected where it will be one lead
    time past now; without the half window it falls short by slope × W/2."""
    slope, window, dt, lead = 0.05, 120.0, 15.0, 180.0
    f: RateForecast | None = None
    seen = 0.0
    for k in range(120):
        t = dt * k
        seen = 6.0 + slope * max(0.0, t - window / 2)  # the window's mean on the ramp
        f = update(f, seen, NOW + t, window)
    assert f is not None
    now = dt * 119
    truth = 6.0 + slope * (now + lead + dt)
    with_window = outlook(f, seen, lead, dt, None, window)
    without = outlook(f, seen, lead, dt, None)
    assert with_window.horizon_s == lead + dt + window / 2
    assert with_window.expected_rps == pytest.approx(truth, rel=0.02)
    assert truth - without.expected_rps == pytest.approx(slope * window / 2, rel=0.1)


def test_once_a_step_has_filled_the_window_the_trend_only_decays() -> None:
    """The trend follows the observed rate's own changes, not the level catching up with
    them: a step seen through a 120-s window (a two-minute ramp, then flat) stops feeding
    the trend the moment the window has filled, so from then on it decays by (1 − b) per
    decision; fed by the level (still below the rate), it kept rising and projected the step
    on (held-out step-down: 49.8 RPS expected 90 s after the window filled at 29)."""
    dt, window = 15.0, 120.0
    f: RateForecast | None = None
    trends = []
    for k in range(40):
        t = dt * k
        seen = 10.0 + 20.0 * min(1.0, max(0.0, (t - 300.0) / window))  # step at 300 s
        f = update(f, seen, NOW + t, window)
        trends.append(f.trend_rps_per_s)
    b = 1.0 - math.exp(-dt / 180.0)
    filled = int((300.0 + window) / dt)
    assert trends[filled] > 0.05
    for k in range(filled + 1, 40):
        assert trends[k] == pytest.approx((1.0 - b) * trends[k - 1], rel=1e-9)


def test_a_falling_rate_never_lowers_the_expectation_below_what_is_seen() -> None:
    f = _feed([40.0 - 0.3 * k for k in range(100)])
    assert expected_rps(f, 10.0, 300.0) >= 10.0
    assert f.trend_rps_per_s < 0


def test_bursty_traffic_earns_headroom_steady_traffic_does_not() -> None:
    rng = random.Random(1)
    steady = _feed([20.0 + rng.uniform(-0.5, 0.5) for _ in range(200)])
    bursty = _feed([20.0 * (3.0 if rng.random() < 0.1 else 0.8) for _ in range(200)])
    assert headroom(steady) < 1.05
    assert 1.2 < headroom(bursty) <= 1.5


def test_a_long_gap_restarts_the_smoother() -> None:
    f = update(_feed([10.0] * 10), 50.0, NOW + 10_000)
    assert f.level_rps == 50.0
    assert f.trend_rps_per_s == 0.0


def _filling(rate: float, window_s: float, dt: float = 15.0, n: int = 40) -> list[float]:
    """What ``rate()`` reads of a flat ``rate`` whose engines started at the first
    observation: the requests seen since then over the whole window, until it is full."""
    return [rate * min(dt * k + dt, window_s) / window_s for k in range(n)]


def test_a_filling_rate_window_is_not_read_as_a_trend() -> None:
    # 1.5 RPS flat from the start, through a 120-s window: 0.19 → 1.5 over the first 2 min
    rates, window = _filling(1.5, 120.0), 120.0
    f: RateForecast | None = None
    for k, r in enumerate(rates):
        f = update(f, r, NOW + 15.0 * k, window)
        assert f is not None
        if 15.0 * k < window:  # filling: the level is what is seen, no trend
            assert (f.level_rps, f.trend_rps_per_s, f.variance) == (r, 0.0, 0.0)
        assert expected_rps(f, r, 195.0) < 1.5 * 1.01
    assert f is not None
    assert f.since_s == NOW
    # without the window (or a state from before it was kept), the ramp is learned as a trend
    learned = _feed(rates[:10])  # 150 s in
    assert expected_rps(learned, 1.5, 195.0) > 1.5 * 1.2
    old = RateForecast(level_rps=0.2, at_s=NOW)  # no since_s
    assert update(old, 0.4, NOW + 15.0, window).trend_rps_per_s > 0


@given(st.floats(0.1, 100.0), st.floats(30.0, 600.0), st.floats(5.0, 60.0))
def test_after_a_filling_window_a_flat_rate_never_reads_above_itself(
    rate: float, window_s: float, dt: float
) -> None:
    f: RateForecast | None = None
    for k, r in enumerate(_filling(rate, window_s, dt, n=int(3 * window_s / dt) + 2)):
        f = update(f, r, NOW + dt * k, window_s)
        assert f is not None
        assert expected_rps(f, r, 195.0) <= rate * (1 + 1e-9)


def test_outlook_uses_the_measured_lead_time_or_the_default() -> None:
    f = _feed([10.0] * 20)
    measured = outlook(f, 10.0, 60.0, 15.0, 4.0)
    assert measured.horizon_s == 75.0
    assert measured.lead_time_measured
    assert measured.replicas == 3
    default = outlook(f, 10.0, None, 15.0, None)
    assert default.lead_time_s == DEFAULT_LEAD_TIME_S
    assert not default.lead_time_measured
    assert default.replicas is None


@settings(max_examples=60, deadline=None)
@given(st.floats(1.0, 100.0), st.floats(1.0, 5.0), st.integers(5, 60))
def test_a_step_up_never_lowers_the_forecast(base: float, factor: float, after: int) -> None:
    before = _feed([base] * 40)
    stepped = _feed([base] * 40 + [base * factor] * after)
    assert expected_rps(stepped, base * factor, 195.0) >= expected_rps(before, base, 195.0)


# -- bucket-honest scale-down ------------------------------------------------------------------
def test_a_quantile_is_read_as_its_bucket() -> None:
    assert bucket_range(0.07, INTER_TOKEN_BUCKETS) == (0.05, 0.075)
    assert bucket_range(0.075, INTER_TOKEN_BUCKETS) == (0.05, 0.075)
    lo, hi = bucket_range(1e9, INTER_TOKEN_BUCKETS)
    assert math.isinf(hi)
    assert lo == INTER_TOKEN_BUCKETS[-1]


def test_a_tpot_p99_inside_a_bucket_below_the_slo_reads_low() -> None:
    # TPOT SLO 80 ms, low at 0.7 × = 56 ms: 0.07 lies in (0.05, 0.075], entirely under the SLO
    assert reads_low("tpot_p99_s", 0.07, 0.056, 0.08)[0]
    # a bucket reaching over the SLO does not
    assert not reads_low("tpot_p99_s", 0.09, 0.056, 0.08)[0]
    # ... nor one starting above the low watermark
    assert not reads_low("tpot_p99_s", 0.07, 0.04, 0.08)[0]


def test_the_engine_scales_down_through_an_interpolated_tpot_p99() -> None:
    spec = make_spec(
        workload={"rps": {"mean": 2}},
        slo={"ttftP99Seconds": 2.0, "tpotP99Seconds": 0.08},
        scaling={
            "minReplicas": 1,
            "maxReplicas": 20,
            "policy": {"scaleDownStabilizationSeconds": 60},
        },
    )
    state = ScalingState(decided_replicas=6)
    replicas = 6
    for k in range(60):
        now = NOW + 15 * k
        s = Snapshot(
            at=now,
            replicas_reporting=replicas,
            waiting=0.0,
            running=2.0 * replicas,
            kv_usage_max=0.1,
            kv_usage_mean=0.1,
            ttft_p99_s=0.3,
            tpot_p99_s=0.07,
            request_rate_rps=1.0,
            prompt_tps=1000.0,
            generation_tps=200.0,
            newest_sample_age_s=1.0,
        )
        d = decide(
            EngineInput(
                spec=spec,
                forecast=plan_service(spec),
                snapshot=s,
                state=state,
                now_s=now,
                interval_s=15.0,
            )
        )
        state, replicas = d.state, d.replicas
    assert replicas < 6
    tpot = next(x for x in d.signals if x.name == "tpot_p99_s")
    assert tpot.level == "low"
    assert "bucket (0.05, 0.075]" in tpot.reason
    assert d.outlook is not None
    assert d.outlook.burst_headroom == pytest.approx(1.0)


# -- the simulated fleet measures lead time as the operator does -------------------------------
def test_the_fleet_measures_creation_to_ready() -> None:
    spec = make_spec()
    cfg = replica_config(spec, plan_service(spec), 512)
    fleet = Fleet.one_pool(cfg, Recorder(), 1, cold_start_s=90.0, initial_ready=1)
    # the launch replica was created one cold start before it served, as a cluster's pod shows
    assert list(fleet.lead_times_s) == [90.0]
    fleet.set_target(3, 10.0)
    fleet.advance(50.0)
    assert list(fleet.lead_times_s) == [90.0]  # starting ones are not measured yet
    fleet.advance(100.0)
    assert list(fleet.lead_times_s) == [90.0, 90.0, 90.0]
    assert fleet.lead_time_s() == pytest.approx(90.0)
    # no launch fleet, or a replay with no cold start: nothing to measure before a start
    assert (
        Fleet.one_pool(cfg, Recorder(), 1, cold_start_s=90.0, initial_ready=0).lead_time_s() is None
    )
    assert (
        Fleet.one_pool(cfg, Recorder(), 1, cold_start_s=0.0, initial_ready=2).lead_time_s() is None
    )


def _load_snap(now: float, replicas: int, rps: float, per_replica_rps: float) -> Snapshot:
    """A fleet carrying ``rps``: KV and running grow with the load per replica."""
    load = rps / max(replicas, 1) / per_replica_rps
    return Snapshot(
        at=now,
        replicas_reporting=replicas,
        waiting=0.0,
        running=20.0 * load * replicas,
        kv_usage_max=min(1.0, 0.6 * load),
        kv_usage_mean=min(1.0, 0.6 * load),
        ttft_p99_s=0.3,
        tpot_p99_s=0.02,
        request_rate_rps=rps,
        prompt_tps=1000.0 * rps,
        generation_tps=200.0 * rps,
        newest_sample_age_s=1.0,
    )


@settings(max_examples=25, deadline=None)
@given(st.floats(2.0, 30.0), st.floats(1.2, 4.0), st.integers(2, 40))
def test_a_step_up_in_load_never_lowers_the_replica_count(
    base: float, factor: float, after: int
) -> None:
    spec = make_spec(
        workload={"rps": {"mean": 2}},
        scaling={"minReplicas": 1, "maxReplicas": 40},
    )
    plan = plan_service(spec)
    state = ScalingState(decided_replicas=plan.sized.total)
    replicas = plan.sized.total
    for k in range(40 + after):
        now = NOW + 15 * k
        rps = base if k < 40 else base * factor
        d = decide(
            EngineInput(
                spec=spec,
                forecast=plan,
                snapshot=_load_snap(now, replicas, rps, 5.0),
                state=state,
                now_s=now,
                interval_s=15.0,
            )
        )
        if k == 39:
            before = d.replicas
        if k >= 40:
            assert d.replicas >= before, (k, d.reason)
        state, replicas = d.state, d.replicas
