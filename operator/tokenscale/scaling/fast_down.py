"""PURE: a scale-down that is fast when it is safe.

The stabilisation window (``scaleDownStabilizationSeconds``, 300 s by default) guards against a
quiet spell inside a noisy load: a step down that the next burst would undo. When the recent
peak load (``ScalingState.peak_load``: the fleet's load in replicas at the high watermarks,
decaying with a half-life of two windows) would fill less than ``FAST_DOWN_LOAD`` of the high
watermarks at the smaller count, no burst of that size undoes the step, and waiting the whole
window only holds replicas nobody uses — the forecast's launch fleet on a quiet start, or the
fleet of a load that stepped down. Then ``FAST_DOWN_WINDOW_S`` of low signals (one rate window:
every latency read is then from after the drop) are enough, unless the rate forecast expects
a rise, or the last scaling was less than that long ago (one fast step at a time).
"""

FAST_DOWN_LOAD = 0.5
"""Projected peak load at the smaller count, as a share of the high watermarks."""
FAST_DOWN_WINDOW_S = 120.0


def scale_down_wait_s(
    window_s: float,
    peak_load: float,
    target: int,
    expected_rps: float | None,
    observed_rps: float | None,
    since_last_scale_s: float | None,
) -> float:
    """The low spell a step down to ``target`` replicas needs: ``FAST_DOWN_WINDOW_S`` when it
    is safe (module docstring), else the stabilisation window ``window_s``."""
    if target < 1 or window_s <= FAST_DOWN_WINDOW_S:
        return window_s
    rising = expected_rps is not None and observed_rps is not None and expected_rps > observed_rps
    recent = since_last_scale_s is not None and since_last_scale_s < FAST_DOWN_WINDOW_S
    if rising or recent or peak_load / target >= FAST_DOWN_LOAD:
        return window_s
    return FAST_DOWN_WINDOW_S
