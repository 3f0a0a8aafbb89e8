"""The range each live vLLM number can take; anything outside is a problem, not a signal.

A sample is read only when its value is a finite number inside its field's range below. The
ranges are physical (a KV usage or a hit rate is a fraction, a count, a rate or a latency is
never negative) and then generous: a latency above a day, more than a million requests per
second, a billion tokens per second or 100,000 replicas of one service is beyond any fleet
this operator sizes, so such a value is a broken exporter, a proxy or a hand-written series,
and the field is left unknown with the reason (without a queue or KV reading, or without any
engine reporting, the engine holds).
``NaN`` is an empty rate window (0/0) and is named as such, not as an error.
"""

import math
from typing import Any

MAX_COUNT = 1e7
"""Requests waiting or running in one service."""
MAX_LATENCY_S = 86_400.0
MAX_RPS = 1e6
MAX_TOKENS_PER_S = 1e9
MAX_TOKENS = 1e7
"""Tokens of one request."""
MAX_REPLICAS = 100_000
"""Engines reporting for one service."""
MAX_GPU_BLOCKS = 1e9
"""KV blocks of one engine (``num_gpu_blocks``)."""

MAX_SATURATION = 1e3
"""The endpoint picker's pool saturation (1.0: its flow control holds requests; above:
oversubscribed by that factor)."""

FRACTION = (0.0, 1.0)
RANGES: dict[str, tuple[float, float]] = {
    "waiting": (0.0, MAX_COUNT),
    "waiting_max_per_replica": (0.0, MAX_COUNT),
    "running": (0.0, MAX_COUNT),
    "kv_usage_max": FRACTION,
    "kv_usage_mean": FRACTION,
    "prefix_cache_hit_rate": FRACTION,
    "request_rate_rps": (0.0, MAX_RPS),
    "started_rps": (0.0, MAX_RPS),
    "started_rps_recent": (0.0, MAX_RPS),
    "preemptions_per_s": (0.0, MAX_RPS),
    "prompt_tps": (0.0, MAX_TOKENS_PER_S),
    "generation_tps": (0.0, MAX_TOKENS_PER_S),
    "output_tokens_mean": (0.0, MAX_TOKENS),
    "replicas_reporting": (0.0, MAX_REPLICAS),
    "num_gpu_blocks": (0.0, MAX_GPU_BLOCKS),
    "spec_decode_acceptance_rate": (0.0, 1.0),
    "gateway_queued": (0.0, MAX_COUNT),
    "gateway_queued_sheddable": (0.0, MAX_COUNT),
    "activation_demand": (0.0, MAX_COUNT),
    "pool_saturation": (0.0, MAX_SATURATION),
    "arrivals_per_window_mean": (0.0, MAX_COUNT),
    "arrivals_per_window_allan": (0.0, MAX_COUNT * MAX_COUNT),
    "arrival_windows": (0.0, MAX_COUNT),
}
"""Closed ranges by Snapshot field (latencies, the ``*_s`` fields: ``[0, MAX_LATENCY_S]``)."""


def value_range(field: str) -> tuple[float, float]:
    if field in RANGES:
        return RANGES[field]
    if field.endswith("_s"):
        return (0.0, MAX_LATENCY_S)
    raise KeyError(field)


def parse_number(raw: Any) -> tuple[float | None, str | None]:
    """A float from a sample's number (a string in the query API; 1e400 reads as Inf)."""
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        return None, f"unparseable value {str(raw)[:60]!r}"
    try:
        value = float(raw)
    except (ValueError, OverflowError):
        return None, f"unparseable value {str(raw)[:60]!r}"
    if math.isnan(value):
        return None, "NaN (no data in the window)"
    if math.isinf(value):
        return None, f"{raw!s} is not a finite number"
    return value, None


def sample_value(raw: Any) -> tuple[float | None, str | None]:
    """The number of an instant-vector sample ``[time, "number"]``."""
    if not isinstance(raw, list | tuple) or len(raw) != 2:
        return None, f"unparseable sample {str(raw)[:60]!r}"
    return parse_number(raw[1])


def judged(field: str, raw: Any) -> tuple[float | None, str | None]:
    """The value of ``field`` from a sample when it is a finite number in its range; else None
    and the reason."""
    value, problem = sample_value(raw)
    if value is None:
        return None, problem
    return in_range(field, value)


def in_range(field: str, value: float) -> tuple[float | None, str | None]:
    low, high = value_range(field)
    if low <= value <= high:
        return value, None
    return None, f"{value:g} is outside [{low:g}, {high:g}]: not a plausible reading"
