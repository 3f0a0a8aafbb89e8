"""Capacity sized for the arrivals' dispersion (scaling/dispersion.py): the statistic, the
room it asks for, the engine's use of it, and the simulator's observation of it."""

import itertools
import math
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tests.unit.test_engine import FAST, NOW, _spec, run, snap, snapshots
from tokenscale.cli.simulate import explanation_text
from tokenscale.scaling import ScalingState, Snapshot
from tokenscale.scaling.dispersion import (
    MAX_DISPERSION_ROOM,
    MIN_WINDOWS,
    Z_P99,
    dispersion_of,
    room_for,
)
from tokenscale.simulation.observe import with_dispersion
from tokenscale.simulation.result import Explanation

means = st.floats(0.1, 5_000)


def counts(index: float, mean: float = 300.0, windows: int = 120) -> dict[str, float]:
    """Snapshot fields for arrival counts of ``mean`` per window with index ``index``."""
    return {
        "arrivals_per_window_mean": mean,
        "arrivals_per_window_allan": index * mean,
        "arrival_windows": float(windows),
    }


def sizing(on: bool = True, **patch: Any) -> Any:
    return _spec(scaling={"policy": {"dispersionSizing": on}}, **patch)


# -- the room ---------------------------------------------------------------------------------
@given(st.floats(0, 1), means)
def test_poisson_or_steadier_asks_for_no_room(index: float, mean: float) -> None:
    assert room_for(index, mean) == 1.0


@given(st.floats(0, 500), st.floats(0, 500), means)
def test_more_dispersion_never_less_room(a: float, b: float, mean: float) -> None:
    lo, hi = sorted((a, b))
    assert 1.0 <= room_for(lo, mean) <= room_for(hi, mean) <= MAX_DISPERSION_ROOM


def test_the_room_is_the_p99_count_over_poissons() -> None:
    # m = 300 per window, index 4: (300 + z·√1200) / (300 + z·√300)
    expected = (300 + Z_P99 * math.sqrt(1200)) / (300 + Z_P99 * math.sqrt(300))
    assert room_for(4.0, 300.0) == pytest.approx(expected)
    assert 1.1 < expected < 1.2
    assert room_for(10_000.0, 300.0) == MAX_DISPERSION_ROOM


# -- the statistic, and what is not usable ------------------------------------------------------
def test_the_index_is_the_allan_variance_over_the_mean() -> None:
    d = dispersion_of(snap(**counts(9.0)))
    assert d.index == pytest.approx(9.0)
    assert d.room == pytest.approx(room_for(9.0, 300.0), abs=1e-4)
    assert "index of dispersion 9.00" in d.reason


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({}, "no arrival counts read"),
        (counts(9.0, windows=MIN_WINDOWS - 1), f"fewer than {MIN_WINDOWS}"),
        (counts(9.0, mean=0.0), "no arrivals"),
        ({**counts(9.0), "arrivals_per_window_allan": math.nan}, "not usable"),
        ({**counts(9.0), "arrivals_per_window_mean": math.inf}, "not usable"),
        ({**counts(9.0), "arrivals_per_window_allan": -5.0}, "not usable"),
        ({**counts(9.0), "arrival_windows": None}, "no arrival counts read"),
    ],
)
def test_missing_or_odd_counts_give_poisson_sizing_with_the_reason(
    fields: dict[str, Any], why: str
) -> None:
    d = dispersion_of(snap(**fields))
    assert (d.room, d.index) == (1.0, None)
    assert d.reason.startswith("Poisson sizing: ")
    assert why in d.reason


def test_switched_off_the_index_is_reported_and_no_room_asked() -> None:
    d = dispersion_of(snap(**counts(50.0)), sizing=False)
    assert d.index == pytest.approx(50.0)
    assert d.room == 1.0
    assert "dispersionSizing is off" in d.reason


# -- the engine ---------------------------------------------------------------------------------
def _same(a: Any, b: Any) -> None:
    assert a.replicas == b.replicas
    assert a.model_replicas == b.model_replicas
    assert a.cause == b.cause
    assert a.why == b.why
    assert a.state == b.state


@FAST
@given(snapshots(), st.integers(1, 15), st.floats(0, 1), st.booleans())
def test_dispersion_one_decides_exactly_as_poisson_sizing(
    s: Snapshot, decided: int, index: float, on: bool
) -> None:
    spec = sizing(on)
    state = ScalingState(decided_replicas=decided)
    without = run(spec, s, state)
    with_counts = run(spec, s.model_copy(update=counts(index)), state)
    _same(with_counts, without)
    assert with_counts.dispersion is not None
    assert with_counts.dispersion.room == 1.0


@FAST
@given(snapshots(), st.integers(1, 15), st.floats(0, 300))
def test_switched_off_any_dispersion_decides_as_before(
    s: Snapshot, decided: int, index: float
) -> None:
    spec = sizing(False)
    state = ScalingState(decided_replicas=decided)
    _same(run(spec, s.model_copy(update=counts(index)), state), run(spec, s, state))


@FAST
@given(snapshots(), st.integers(1, 15), st.floats(0, 300), st.floats(0, 300))
def test_more_dispersion_never_fewer_replicas(
    s: Snapshot, decided: int, a: float, b: float
) -> None:
    lo, hi = sorted((a, b))
    assume(hi > lo)
    spec = sizing(True)
    state = ScalingState(decided_replicas=decided)
    calm = run(spec, s.model_copy(update=counts(lo)), state)
    wild = run(spec, s.model_copy(update=counts(hi)), state)
    assert wild.replicas >= calm.replicas
    assert (wild.model_replicas or 0) >= (calm.model_replicas or 0)


def test_bursty_counts_raise_the_model_and_say_why() -> None:
    spec = sizing(True)
    state = ScalingState(decided_replicas=2, peak_at_s=NOW - 15)
    s = snap(n=2, started_rps=40.0)
    calm = run(spec, s, state)
    bursty = run(spec, s.model_copy(update=counts(80.0)), state)
    assert bursty.dispersion is not None
    assert bursty.dispersion.room > 1.5
    assert bursty.model_replicas is not None
    assert calm.model_replicas is not None
    assert bursty.model_replicas > calm.model_replicas
    assert bursty.replicas == bursty.model_replicas > calm.replicas
    assert "index of dispersion 80.00" in bursty.why
    assert bursty.state.slo_headroom == calm.state.slo_headroom  # the learned one is its own


# -- the simulator's observation ----------------------------------------------------------------
def _observed(history: list[tuple[float, float]], now: float, **kw: Any) -> Snapshot:
    out = with_dispersion(Snapshot(at=now, replicas_reporting=1), history, now, **kw)
    assert out is not None
    return out


def test_the_simulator_counts_windows_at_aligned_steps() -> None:
    # a counter sampled every 15 s: 10 per window, then 40, then 10 again
    increments = [10] * 6 + [40] + [10] * 5
    history, total = [(0.0, 0.0)], 0.0
    for k, inc in enumerate(increments, start=1):
        total += inc
        history.append((15.0 * k, total))
    s = _observed(history, now=15.0 * len(increments) + 3.0)
    windows = increments  # every step from 15 s on has its window
    assert s.arrivals_per_window_mean == pytest.approx(sum(windows) / len(windows))
    diffs = [(b - a) ** 2 for a, b in itertools.pairwise(windows)]
    assert s.arrival_windows == len(diffs)
    assert s.arrivals_per_window_allan == pytest.approx(sum(diffs) / len(diffs) / 2)


def test_a_steady_count_has_no_allan_variance_and_a_ramp_almost_none() -> None:
    steady = [(15.0 * k, 7.0 * k) for k in range(40)]
    assert _observed(steady, 39 * 15.0 + 3.0).arrivals_per_window_allan == 0.0
    # windows of 10, 11, 12, ... : the plain variance grows with the ramp, the Allan stays ½
    ramp, total = [(0.0, 0.0)], 0.0
    for k in range(1, 40):
        total += 9 + k
        ramp.append((15.0 * k, total))
    s = _observed(ramp, 39 * 15.0 + 3.0)
    assert s.arrivals_per_window_allan == pytest.approx(0.5)


def test_only_the_range_is_counted_and_a_silent_counter_is_no_window() -> None:
    history = [(15.0 * k, 5.0 * k) for k in range(200)]  # 50 min of 5 per window
    s = _observed(history, now=199 * 15.0, range_s=300.0)
    assert s.arrival_windows == 300 / 15  # a difference at every step inside (now − 5 min, now]
    assert s.arrivals_per_window_mean == 5.0
    # a step past the newest scrape counts the counter as it last was: an empty window
    late = _observed(history, now=200 * 15.0, range_s=300.0)
    assert late.arrivals_per_window_mean == pytest.approx((19 * 5.0 + 0.0) / 20)
    # nothing scraped for longer than the lookback: no window, the snapshot unchanged
    stale = _observed([(0.0, 0.0), (15.0, 5.0)], now=1000.0, range_s=300.0, lookback_s=300.0)
    assert stale.arrivals_per_window_mean is None
    assert stale.arrival_windows is None


def test_simulate_explain_says_what_the_arrivals_asked_for() -> None:
    d = run(sizing(True), snap(n=2, started_rps=40.0, **counts(80.0)), ScalingState())
    text = explanation_text(
        Explanation(t_s=90.0, replicas_ready=2, replicas_starting=0, snapshot=None, decision=d)
    )
    assert "  arrivals: ×1.94 · arrivals' index of dispersion 80.00" in text
