"""Prometheus' ``histogram_quantile`` on classic buckets, computed in the operator.

The fleet read asks Prometheus once per histogram for every service's bucket rates
(``sum by (…, le) (rate(…_bucket[w]))``, ``metrics/promql.py``) and computes each quantile
here, by the rule of Prometheus' ``bucketQuantile`` (``promql/quantile.go``):

- ``q`` NaN → NaN; ``q < 0`` → −Inf; ``q > 1`` → +Inf;
- the buckets are sorted by upper bound; without a ``+Inf`` bucket → NaN;
- buckets with the same bound are merged (their counts summed);
- a count within a relative 1e-12 of the one before it is set to it (the float error of a
  sum of rates), then every decrease is raised to the largest count before it (the
  histogram's monotonic envelope);
- fewer than 2 buckets, or a total (the ``+Inf`` bucket) of 0 → NaN;
- the rank ``q × total`` lies in the first bucket whose cumulative count reaches it: in the
  ``+Inf`` bucket the answer is the largest finite bound; in a first bucket whose bound is
  ≤ 0, that bound; otherwise linear between the bucket's lower bound (0 for the first
  bucket) and its upper bound.

A ``le`` label is read as Go's ``strconv.ParseFloat`` reads it (``+Inf``, ``1e-3``, hex
floats); one it cannot read drops that bucket, as Prometheus does. Unlike Prometheus, a
``NaN`` bound is dropped too (Prometheus sorts it somewhere undefined).
"""

import bisect
import math
from collections.abc import Iterable
from dataclasses import dataclass

PRECISION_TOLERANCE = 1e-12
"""Relative difference under which two neighbouring counts are taken as equal."""


def le_bound(raw: str | None) -> float | None:
    """The upper bound a ``le`` label names, or None when Prometheus could not read it."""
    if raw is None or raw != raw.strip() or "_" in raw or not raw:
        return None
    try:
        bound = float(raw)
    except ValueError:
        try:
            bound = float.fromhex(raw)
        except (ValueError, OverflowError):
            return None
    return None if math.isnan(bound) else bound


@dataclass(frozen=True)
class Envelope:
    """A histogram ready to answer quantiles: ascending bounds (the last ``+Inf``) and their
    cumulative counts, never decreasing."""

    bounds: tuple[float, ...]
    counts: tuple[float, ...]


def envelope(buckets: Iterable[tuple[float, float]]) -> Envelope | str:
    """The envelope of ``(upper bound, cumulative count)`` buckets, or why every quantile of
    them is NaN."""
    ordered = sorted(buckets, key=lambda b: b[0])
    if not ordered or ordered[-1][0] != math.inf:
        return "no +Inf bucket"
    bounds: list[float] = []
    counts: list[float] = []
    for bound, count in ordered:
        if bounds and bound == bounds[-1]:
            counts[-1] += count
        else:
            bounds.append(bound)
            counts.append(count)
    prev = counts[0]
    for i in range(1, len(counts)):
        delta = abs(counts[i] - prev)
        if delta == 0:
            continue
        eps = delta / counts[i] if counts[i] != 0 else math.inf
        if eps <= PRECISION_TOLERANCE:
            counts[i] = prev
        else:
            prev = counts[i]
    top = counts[0]
    for i in range(1, len(counts)):
        if counts[i] > top:
            top = counts[i]
        elif counts[i] < top:
            counts[i] = top
    if len(counts) < 2:
        return "fewer than 2 buckets"
    if counts[-1] == 0:
        return "no observations in the window"
    return Envelope(tuple(bounds), tuple(counts))


def quantile(q: float, env: Envelope) -> float:
    """The ``q``-quantile of a histogram's envelope, as ``histogram_quantile`` answers it."""
    if math.isnan(q):
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    bounds, counts = env.bounds, env.counts
    rank = q * counts[-1]
    b = bisect.bisect_left(counts, rank, 0, len(counts) - 1)
    if b == len(counts) - 1:
        return bounds[-2]
    if b == 0 and bounds[0] <= 0:
        return bounds[0]
    start, end, count = 0.0, bounds[b], counts[b]
    if b > 0:
        start = bounds[b - 1]
        count -= counts[b - 1]
        rank -= counts[b - 1]
    return start + (end - start) * _ratio(rank, count)


def _ratio(a: float, b: float) -> float:
    """``a / b`` as Go divides floats: by zero, ±Inf, or NaN for 0/0 (``q`` 0 on an empty
    first bucket)."""
    if b != 0:
        return a / b
    if a == 0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def bucket_quantile(q: float, buckets: Iterable[tuple[float, float]]) -> float:
    """``histogram_quantile(q, …)`` of one group's ``(upper bound, cumulative count)``
    buckets: NaN where Prometheus answers NaN."""
    if math.isnan(q):
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    env = envelope(buckets)
    return math.nan if isinstance(env, str) else quantile(q, env)
