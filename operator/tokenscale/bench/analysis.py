"""Pure arithmetic over measured requests: step summaries, the knee, the operating point.

The knee (knowledge map, "load testing"): raise concurrency while throughput grows faster
than latency; the knee is the last step before TPOT P99 or TTFT P99 grows by a larger factor
than output throughput does (TTFT measured on top of one token interval, so a TTFT within the
client's noise does not make a knee). The operating point is the largest concurrency whose TTFT and
TPOT P99 meet the SLOs.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from tokenscale.api.profile import BenchStep, Phase


@dataclass
class RequestRecord:
    """One request as the client saw it (seconds from the request's start)."""

    input_tokens: int
    output_tokens: int = 0
    ttft_s: float | None = None
    e2e_s: float | None = None
    itls_s: list[float] = field(default_factory=list)
    error: str | None = None
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out and self.e2e_s is not None

    @property
    def tpot_s(self) -> float | None:
        """vLLM's per-request TPOT: decode time ÷ (output tokens − 1)."""
        if not self.ok or self.ttft_s is None or self.e2e_s is None or self.output_tokens < 2:
            return None
        return (self.e2e_s - self.ttft_s) / (self.output_tokens - 1)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(
    phase: Phase,
    records: Sequence[RequestRecord],
    duration_seconds: float,
    concurrency: int | None = None,
    rate_rps: float | None = None,
    waiting: Sequence[float] = (),
    kv_usage: Sequence[float] = (),
) -> BenchStep:
    ok = [r for r in records if r.ok]
    ttft = [r.ttft_s for r in ok if r.ttft_s is not None]
    tpot = [t for r in ok if (t := r.tpot_s) is not None]
    e2e = [r.e2e_s for r in ok if r.e2e_s is not None]
    itl = [x for r in ok for x in r.itls_s]
    span = max(duration_seconds, 1e-9)
    out_tokens = sum(r.output_tokens for r in ok)
    in_tokens = sum(r.input_tokens for r in ok)
    return BenchStep(
        phase=phase,
        concurrency=concurrency,
        rate_rps=rate_rps,
        duration_seconds=duration_seconds,
        requests=len(ok),
        errors=sum(1 for r in records if r.error is not None),
        timeouts=sum(1 for r in records if r.timed_out),
        input_tokens_mean=in_tokens / len(ok) if ok else 0.0,
        output_tokens_mean=out_tokens / len(ok) if ok else 0.0,
        ttft_mean_seconds=_mean(ttft),
        tpot_mean_seconds=_mean(tpot),
        e2e_mean_seconds=_mean(e2e),
        ttft_p50_seconds=percentile(ttft, 0.5),
        ttft_p95_seconds=percentile(ttft, 0.95),
        ttft_p99_seconds=percentile(ttft, 0.99),
        tpot_p50_seconds=percentile(tpot, 0.5),
        tpot_p95_seconds=percentile(tpot, 0.95),
        tpot_p99_seconds=percentile(tpot, 0.99),
        itl_p99_seconds=percentile(itl, 0.99),
        e2e_p50_seconds=percentile(e2e, 0.5),
        e2e_p95_seconds=percentile(e2e, 0.95),
        e2e_p99_seconds=percentile(e2e, 0.99),
        output_tps=out_tokens / span,
        input_tps=in_tokens / span,
        requests_per_second=len(ok) / span,
        waiting_mean=sum(waiting) / len(waiting) if waiting else None,
        kv_usage_max=max(kv_usage) if kv_usage else None,
    )


def find_knee(ramp: Sequence[BenchStep]) -> int | None:
    """The last concurrency before latency P99 grows faster than output throughput."""
    steps = [s for s in ramp if s.requests > 0 and s.output_tps > 0]
    if not steps:
        return None
    knee = steps[0].concurrency
    for prev, cur in pairwise(steps):
        gain = cur.output_tps / prev.output_tps
        # a TTFT shorter than one token interval is within the client's own noise: its growth
        # is measured on top of one interval (a 3 → 9 ms TTFT beside 12 ms tokens is no knee)
        floor = prev.tpot_p50_seconds or 0.0
        growth = max(
            _ratio(cur.tpot_p99_seconds, prev.tpot_p99_seconds),
            _ratio(_plus(cur.ttft_p99_seconds, floor), _plus(prev.ttft_p99_seconds, floor)),
        )
        if growth > gain:
            return knee
        knee = cur.concurrency
    return knee


def _plus(a: float | None, b: float) -> float | None:
    return None if a is None else a + b


def _ratio(a: float | None, b: float | None) -> float:
    if a is None or b is None or b <= 0:
        return 1.0
    return a / b


def operating_concurrency(
    ramp: Sequence[BenchStep], ttft_slo_s: float | None, tpot_slo_s: float | None
) -> int | None:
    """The largest ramp concurrency whose TTFT and TPOT P99 meet the SLOs (None: none did)."""
    best: int | None = None
    for s in ramp:
        if s.requests == 0 or s.errors or s.timeouts:
            continue
        ok_ttft = ttft_slo_s is None or (
            s.ttft_p99_seconds is not None and s.ttft_p99_seconds <= ttft_slo_s
        )
        ok_tpot = tpot_slo_s is None or (
            s.tpot_p99_seconds is not None and s.tpot_p99_seconds <= tpot_slo_s
        )
        if ok_ttft and ok_tpot and s.concurrency is not None:
            best = s.concurrency if best is None else max(best, s.concurrency)
    return best
