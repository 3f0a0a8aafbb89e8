"""Cumulative histograms with vLLM's buckets, and Prometheus' ``histogram_quantile``.

The simulated fleet records what a vLLM engine would (same buckets), and the decision engine
reads quantiles the way Prometheus computes them from bucket deltas over a window: linear
interpolation inside the bucket holding the rank; the ``+Inf`` bucket answers with the
largest finite bound; no observations → no answer (Prometheus' NaN).
"""

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class Histogram:
    bounds: tuple[float, ...]
    counts: list[float] = field(default_factory=list)
    """Per bucket (not cumulative); the last one is ``+Inf``."""
    total: float = 0.0

    def __post_init__(self) -> None:
        if not self.counts:
            self.counts = [0.0] * (len(self.bounds) + 1)

    def observe(self, value: float, n: float = 1.0) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += n
        self.total += value * n

    def copy_counts(self) -> tuple[float, ...]:
        return tuple(self.counts)


def histogram_quantile(
    q: float, bounds: Sequence[float], before: Sequence[float], after: Sequence[float]
) -> float | None:
    """Quantile of the observations made between two snapshots of the same histogram."""
    deltas = [a - b for a, b in zip(after, before, strict=True)]
    count = sum(deltas)
    if count <= 0:
        return None
    rank = q * count
    cumulative = 0.0
    for i, d in enumerate(deltas):
        if cumulative + d >= rank and d > 0:
            if i == len(bounds):  # +Inf bucket
                return float(bounds[-1])
            lower = 0.0 if i == 0 else float(bounds[i - 1])
            upper = float(bounds[i])
            return lower + (upper - lower) * (rank - cumulative) / d
        cumulative += d
    return float(bounds[-1])
