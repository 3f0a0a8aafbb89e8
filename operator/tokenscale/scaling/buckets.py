"""PURE: a quantile read from histogram buckets is a range, not a point.

Prometheus' ``histogram_quantile`` interpolates linearly inside the bucket that holds the
rank, so a TPOT P99 of 0.07 s from vLLM's buckets only says the P99 lies in (0.05, 0.075].
For scale-down the engine reads that range honestly: a latency counts as low when the
interpolated value is below the low watermark, or when its bucket starts below the low
watermark and ends below the SLO (the true P99 may well be low, and cannot be over the SLO).
Scale-up keeps the interpolated value (a range reaching over the SLO is not yet a breach).
"""

import bisect
import math
from collections.abc import Sequence

from tokenscale.catalog.vllm_metrics import INTER_TOKEN_BUCKETS, TTFT_BUCKETS

BOUNDS: dict[str, Sequence[float]] = {
    "ttft_p99_s": TTFT_BUCKETS,
    "tpot_p99_s": INTER_TOKEN_BUCKETS,
}


def bucket_range(value: float, bounds: Sequence[float]) -> tuple[float, float]:
    """``(lower, upper]``: the bucket an interpolated quantile ``value`` lies in."""
    i = bisect.bisect_left(bounds, value)
    if i >= len(bounds):
        return (float(bounds[-1]), math.inf)
    return (0.0 if i == 0 else float(bounds[i - 1]), float(bounds[i]))


def reads_low(name: str, value: float, low: float, high: float) -> tuple[bool, str]:
    """Whether a latency quantile counts as low for scale-down, and the range it came from."""
    if value < low:
        return True, ""
    bounds = BOUNDS.get(name)
    if bounds is None:
        return False, ""
    lower, upper = bucket_range(value, bounds)
    return lower < low and upper < high, f" (bucket ({lower:g}, {upper:g}])"
