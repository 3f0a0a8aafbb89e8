"""A scale-down that is fast when it is safe (scaling/fast_down.py) and the engine using it."""

from hypothesis import given
from hypothesis import strategies as st

from tokenscale.scaling.fast_down import FAST_DOWN_LOAD, FAST_DOWN_WINDOW_S, scale_down_wait_s


def test_fast_only_when_the_recent_peak_fits_with_room() -> None:
    assert scale_down_wait_s(300, 0.4, 1, 10.0, 10.0, None) == FAST_DOWN_WINDOW_S
    assert scale_down_wait_s(300, 0.6, 1, 10.0, 10.0, None) == 300  # the peak would not fit
    assert scale_down_wait_s(300, 0.6, 2, 10.0, 10.0, None) == FAST_DOWN_WINDOW_S
    assert scale_down_wait_s(300, 0.1, 1, 12.0, 10.0, None) == 300  # a rise is expected
    assert scale_down_wait_s(300, 0.1, 1, 10.0, 10.0, 60.0) == 300  # scaled a minute ago
    assert scale_down_wait_s(300, 0.1, 1, None, None, 600.0) == FAST_DOWN_WINDOW_S
    assert scale_down_wait_s(60, 0.0, 1, None, None, None) == 60  # a shorter window stands


@given(
    st.floats(min_value=0, max_value=3600),
    st.floats(min_value=0, max_value=100),
    st.integers(min_value=0, max_value=64),
    st.one_of(st.none(), st.floats(min_value=0, max_value=1e4)),
    st.one_of(st.none(), st.floats(min_value=0, max_value=1e4)),
    st.one_of(st.none(), st.floats(min_value=0, max_value=1e5)),
)
def test_never_longer_than_the_window_never_shorter_than_the_fast_one(
    window: float,
    peak: float,
    target: int,
    expected: float | None,
    observed: float | None,
    since: float | None,
) -> None:
    wait = scale_down_wait_s(window, peak, target, expected, observed, since)
    assert wait <= window
    assert wait >= min(window, FAST_DOWN_WINDOW_S)
    if wait < window:  # fast: only with room for the recent peak
        assert peak / target < FAST_DOWN_LOAD
