"""A scale-up on the model's need alone is taken only beyond the arrival count's sampling error
(``scaling/rate_error.py``): a need of 2.01 read from a hundred requests adds no replica, the
same need read from ten thousand does, and pressure is never held by it."""

import math

from hypothesis import given
from hypothesis import strategies as st

from tests.unit.test_engine import _spec, run, snap
from tokenscale.planning import plan_service
from tokenscale.scaling import ScalingState, Snapshot
from tokenscale.scaling.rate_error import Z, band, within_error


def test_the_band_is_the_counts_relative_error_at_five_percent() -> None:
    assert math.isclose(Z, 1.6449, abs_tol=1e-4)
    assert band(None) is None
    assert band(0.0) is None
    assert math.isclose(band(100.0) or 0.0, 0.16449, abs_tol=1e-5)
    assert within_error(2.01, 2, 131.0)  # ± 14 %
    assert not within_error(2.40, 2, 131.0)
    assert not within_error(2.10, 2, 10_000.0)  # ± 1.6 %
    assert not within_error(1.90, 2, 131.0)  # not above the count: nothing to hold
    assert not within_error(2.01, 2, None)


@given(
    need=st.floats(0.0, 50.0),
    current=st.integers(1, 40),
    fewer=st.floats(1.0, 1e5),
    more=st.floats(1.0, 1e5),
)
def test_more_requests_never_widen_the_band(
    need: float, current: int, fewer: float, more: float
) -> None:
    fewer, more = min(fewer, more), max(fewer, more)
    if within_error(need, current, more):
        assert within_error(need, current, fewer)
    if within_error(need, current, fewer):
        assert current < need <= current * (1 + Z)


def _at(rps: float, window_s: float | None, current: int, kv: float = 0.3) -> Snapshot:
    base = snap(n=current, kv=kv)
    return base.model_copy(update={"request_rate_rps": rps, "rate_window_s": window_s})


def test_a_need_just_over_the_count_waits_for_the_rate_to_say_so() -> None:
    spec = _spec()
    current = plan_service(spec).sized.total + 1  # above the forecast's floor
    state = ScalingState(decided_replicas=current)

    def model(rps: float, window_s: float | None = None) -> int:
        d = run(spec, _at(rps, window_s, current), state)
        return d.model_replicas or 0

    low, high = 0.01, 500.0  # the rate at which the model first asks for one more
    assert model(low) <= current < model(high)
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (low, mid) if model(mid) > current else (mid, high)
    edge = high
    just_over = run(spec, _at(edge * 1.01, None, current), state)
    assert just_over.replicas > current  # no window known: no band, as before
    held = run(spec, _at(edge * 1.01, 120.0, current), state)
    assert held.replicas == current
    assert "sampling error" in held.reason
    # 30 % over the count is over the band (±14 % at 120 s of this rate)
    assert run(spec, _at(edge * 1.01 * 1.3, 120.0, current), state).replicas > current
    # pressure is not held: a full KV cache scales up at the same rate
    full = _at(edge * 1.01, 120.0, current, kv=0.97)
    assert run(spec, full, state).replicas > current
