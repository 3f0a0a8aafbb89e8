"""A scale-down that is fast when it is safe (scaling/fast_down.py) and the engine using it."""

from hypothesis import given
from hypothesis import strategies as st

from tokenscale.scaling.fast_down import FAST_DOWN_LOAD, FAST_DOWN_WINDOW_S, scale_down_wait_s


def test_fast_only_when_the_recent_peak_fits_with_room() -> None:
    quiet = [(0.02, 0.056)]  # TPOT 20 ms against a 56 ms low watermark
    assert scale_down_wait_s(300, 0.4, 2, 1, quiet, None) == FAST_DOWN_WINDOW_S
    assert scale_down_wait_s(300, 0.6, 2, 1, quiet, None) == 300  # the peak would not fit
    assert scale_down_wait_s(300, 0.6, 3, 2, quiet, None) == FAST_DOWN_WINDOW_S
    assert scale_down_wait_s(300, 0.1, 2, 1, quiet, 60.0) == 300  # scaled a minute ago
    assert scale_down_wait_s(300, 0.1, 2, 1, quiet, 600.0) == FAST_DOWN_WINDOW_S
    assert scale_down_wait_s(60, 0.0, 2, 1, quiet, None) == 60  # a shorter window stands
    # low now, but not with two replicas' load on one: TPOT 30 ms × 2 ≥ 56 ms
    assert scale_down_wait_s(300, 0.1, 2, 1, [(0.03, 0.056)], None) == 300
    assert scale_down_wait_s(300, 0.1, 8, 7, [(0.03, 0.056)], None) == FAST_DOWN_WINDOW_S


@given(
    st.floats(min_value=0, max_value=3600),
    st.floats(min_value=0, max_value=100),
    st.integers(min_value=0, max_value=64),
    st.integers(min_value=0, max_value=64),
    st.lists(st.tuples(st.floats(0, 10), st.floats(0, 10)), max_size=2),
    st.one_of(st.none(), st.floats(min_value=0, max_value=1e5)),
)
def test_never_longer_than_the_window_never_shorter_than_the_fast_one(
    window: float,
    peak: float,
    current: int,
    target: int,
    latency: list[tuple[float, float]],
    since: float | None,
) -> None:
    wait = scale_down_wait_s(window, peak, current, target, latency, since)
    assert wait <= window
    assert wait >= min(window, FAST_DOWN_WINDOW_S)
    if wait < window:  # fast: only with room for the recent peak and for every latency read
        assert peak / target < FAST_DOWN_LOAD
        assert all(value * current / target < low for value, low in latency)
