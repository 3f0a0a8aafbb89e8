"""Prometheus as the decision engine sees it: scrapes every few seconds, windows over them.

A :class:`Scrape` is what one scrape of every ready engine returns (per-engine gauges, the
fleet's counters and histogram buckets). :func:`snapshot_at` answers the operator's queries
(metrics/promql.py) from the scrapes: gauges from the newest scrape inside the gauge window
(``last_over_time``), rates and quantiles from the change between the oldest and newest scrape
inside the rate window ``[now − window, now]`` (as Prometheus 2 selects it; ``rate``,
``histogram_quantile`` over bucket rates). Rates are Prometheus' ``rate()``: the change
extrapolated towards the window's edges (:func:`extrapolated_rate`) and divided by the whole
window, so a series younger than the window (the trace's first minutes) reads low, as it does
live. Too few samples, no observations or no engine give ``None`` with the reason in
``problems``, as the real source does for an empty result or NaN.
"""

import itertools
import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.scaling.buckets import BucketCounts
from tokenscale.scaling.dispersion import COUNT_WINDOW_S, DISPERSION_RANGE_S
from tokenscale.scaling.snapshot import Snapshot
from tokenscale.simulation.histogram import histogram_quantile
from tokenscale.simulation.recorder import Recorder


@dataclass(frozen=True)
class Scrape:
    at: float
    waiting: tuple[int, ...]
    running: tuple[int, ...]
    kv_usage: tuple[float, ...]
    blocks_per_engine: int
    counters: dict[str, float]
    buckets: dict[str, tuple[float, ...]]
    sums: dict[str, float]
    held: int = 0
    """Requests the gateway holds because no replica is ready (what the endpoint picker's
    flow-control queue, or an activator's pending count, reads)."""
    lora: tuple[tuple[int, int, bool], ...] | None = None
    """Each engine's ``vllm:lora_requests_info``: running adapters, waiting adapters and
    whether every slot is in use while adapters wait (None: LoRA off)."""
    held_sheddable: int = 0
    """Of them, the sheddable requests flow control holds while the fleet is saturated."""


LOOKBACK_S = 300.0
"""Prometheus' lookback for an instant selector: a sample older than this is no value."""


def scrape(
    at: float,
    engines: Sequence[tuple[int, int, float]],
    blocks_per_engine: int,
    recs: Sequence[Recorder],
    held: int = 0,
    held_sheddable: int = 0,
    lora: Sequence[tuple[int, int, bool]] | None = None,
) -> Scrape:
    """``engines``: (waiting, running, KV usage) of each engine that answers the scrape;
    ``recs``: the recorders of the pools scraped together (their series summed, as
    ``sum(rate(...))`` over the pools' pods); ``held``: requests held at the gateway,
    ``held_sheddable`` of them sheddable; ``lora``: each engine's adapters (LoRA on)."""
    if len(recs) == 1:
        rec = recs[0]
        counters = rec.counters()
        buckets = {k: h.copy_counts() for k, h in rec.histograms().items()}
        sums = {k: h.total for k, h in rec.histograms().items()}
    else:
        counters = {k: sum(r.counters()[k] for r in recs) for k in recs[0].counters()}
        names = recs[0].histograms()
        buckets = {
            k: tuple(map(sum, zip(*(r.histograms()[k].counts for r in recs), strict=True)))
            for k in names
        }
        sums = {k: sum(r.histograms()[k].total for r in recs) for k in names}
    return Scrape(
        held=held,
        held_sheddable=held_sheddable,
        lora=None if lora is None else tuple(lora),
        at=at,
        waiting=tuple(e[0] for e in engines),
        running=tuple(e[1] for e in engines),
        kv_usage=tuple(e[2] for e in engines),
        blocks_per_engine=blocks_per_engine,
        counters=counters,
        buckets=buckets,
        sums=sums,
    )


def snapshot_at(
    scrapes: Sequence[Scrape],
    now: float,
    rec: Recorder,
    gauge_window_s: float = 60.0,
    rate_window_s: float = 120.0,
) -> Snapshot | None:
    """The Snapshot the Prometheus source would build at ``now`` (scrapes oldest first)."""
    seen = [s for s in scrapes if s.at <= now]
    if not seen:
        return None
    last = seen[-1]
    if now - last.at > gauge_window_s or not last.waiting:
        return Snapshot(
            at=now,
            replicas_reporting=0,
            problems=["no series: no engine scraped in the gauge window"],
        )
    window = [s for s in seen if s.at >= now - rate_window_s] or [last]
    w = _Window(window, now, rate_window_s, rec)
    # the first-token rate over half the rate window, as the operator's query (1m at 2m)
    half_s = rate_window_s / 2.0
    minute = [s for s in seen if s.at >= now - half_s] or [last]
    recent = _Window(minute, now, half_s, rec).count_rate("ttft")
    problems = [] if w.span > 0 else ["rates: fewer than two scrapes in the rate window"]
    queries = w.rate("prefix_queries")
    hits = w.rate("prefix_hits")
    n = len(last.waiting)
    return Snapshot(
        at=now,
        rate_window_s=rate_window_s,
        replicas_reporting=n,
        waiting=float(sum(last.waiting)),
        waiting_max_per_replica=float(max(last.waiting)),
        running=float(sum(last.running)),
        kv_usage_max=max(last.kv_usage),
        kv_usage_mean=sum(last.kv_usage) / n,
        kv_blocks_total=float(last.blocks_per_engine * n),
        kv_blocks_free=sum(last.blocks_per_engine * (1.0 - u) for u in last.kv_usage),
        ttft_p50_s=w.quantile(0.5, "ttft"),
        ttft_p95_s=w.quantile(0.95, "ttft"),
        ttft_p99_s=w.quantile(0.99, "ttft"),
        itl_p99_s=w.quantile(0.99, "itl"),
        tpot_p50_s=w.quantile(0.5, "tpot"),
        tpot_p99_s=w.quantile(0.99, "tpot"),
        ttft_buckets=w.counts("ttft"),
        tpot_buckets=w.counts("tpot"),
        tpot_mean_s=w.mean("tpot"),
        ttft_mean_s=w.mean("ttft"),
        queue_mean_s=w.mean("queue"),
        e2e_p99_s=w.quantile(0.99, "e2e"),
        queue_p99_s=w.quantile(0.99, "queue"),
        request_rate_rps=w.rate("success"),
        started_rps=w.count_rate("ttft"),
        started_rps_recent=recent,
        output_tokens_mean=w.mean("output_tokens"),
        prompt_tps=w.rate("prompt_tokens"),
        generation_tps=w.rate("generation_tokens"),
        prefix_cache_hit_rate=(hits / queries) if queries and hits is not None else None,
        preemptions_per_s=w.rate("preemptions"),
        newest_sample_age_s=now - last.at,
        problems=problems,
        **_lora_fields(last),
    )


def _lora_fields(last: Scrape) -> dict[str, float | int]:
    """The snapshot's LoRA fields from the engines' adapter states (none without LoRA)."""
    if last.lora is None or not last.lora:
        return {}
    return {
        "lora_engines": len(last.lora),
        "lora_running_adapters": float(sum(e[0] for e in last.lora)),
        "lora_waiting_adapters": float(sum(e[1] for e in last.lora)),
        "lora_slot_bound_engines": sum(1 for e in last.lora if e[2]),
    }


class _Window:
    """The scrapes inside one rate window, and what Prometheus computes over them."""

    def __init__(
        self, window: Sequence[Scrape], now: float, rate_window_s: float, rec: Recorder
    ) -> None:
        self.first, self.last = window[0], window[-1]
        self.samples = len(window)
        self.now, self.rate_window_s = now, rate_window_s
        self.span = self.last.at - self.first.at
        self.hists = rec.histograms()

    def per_second(self, first_value: float, last_value: float) -> float | None:
        if self.span <= 0:
            return None
        return extrapolated_rate(
            first_value,
            last_value,
            self.first.at,
            self.last.at,
            self.samples,
            self.now - self.rate_window_s,
            self.now,
        )

    def rate(self, name: str) -> float | None:
        return self.per_second(self.first.counters[name], self.last.counters[name])

    def quantile(self, q: float, name: str) -> float | None:
        if self.span <= 0:
            return None
        bounds = self.hists[name].bounds
        return histogram_quantile(q, bounds, self.first.buckets[name], self.last.buckets[name])

    def counts(self, name: str) -> BucketCounts | None:
        """``sum by (le) (increase(…_bucket[w]))``: each cumulative ``le`` series' change over
        the window, extrapolated to its edges as Prometheus' ``increase`` does (``rate × w``)."""
        first = list(itertools.accumulate(self.first.buckets[name]))
        last = list(itertools.accumulate(self.last.buckets[name]))
        if self.span <= 0 or last[-1] - first[-1] <= 0:
            return None
        grown = [
            (self.per_second(a, b) or 0.0) * self.rate_window_s
            for a, b in zip(first, last, strict=True)
        ]
        total = grown[-1]
        return BucketCounts(
            bounds=tuple(self.hists[name].bounds),
            cumulative=tuple(min(c, total) for c in grown[:-1]),
            total=total,
        )

    def mean(self, name: str) -> float | None:
        """``rate(_sum) / rate(_count)``: None when nothing was observed in the window."""
        count = sum(self.last.buckets[name]) - sum(self.first.buckets[name])
        if self.span <= 0 or count <= 0:
            return None
        return (self.last.sums[name] - self.first.sums[name]) / count

    def count_rate(self, name: str) -> float | None:
        """``rate(_count)`` of a histogram."""
        return self.per_second(sum(self.first.buckets[name]), sum(self.last.buckets[name]))


def with_dispersion(
    snap: Snapshot | None,
    counts: Sequence[tuple[float, float]],
    now: float,
    step_s: float = COUNT_WINDOW_S,
    range_s: float = DISPERSION_RANGE_S,
    lookback_s: float = LOOKBACK_S,
) -> Snapshot | None:
    """``snap`` with the arrival counts' mean, Allan variance and number of differences
    (``scaling/dispersion.py``), from ``counts``: (scrape time, requests that reached their
    first token so far) of each scrape that found an engine, oldest first. As the operator's
    subquery (``metrics/promql.py``) evaluates them: at steps that are multiples of ``step_s``
    inside ``(now − range_s, now]``, the counter is its newest sample at or before the step
    (within the ``lookback_s`` Prometheus allows an instant selector); a window's count is its
    increase over the step before (never below 0), and a difference is two successive windows'.
    Unchanged (None fields) when no window has a count."""
    if snap is None or not counts:
        return snap
    times = [c[0] for c in counts]

    def counter(at: float) -> float | None:
        k = bisect_right(times, at + 1e-9) - 1
        if k < 0 or at - times[k] > lookback_s:
            return None
        return counts[k][1]

    last = math.floor(now / step_s + 1e-9) * step_s
    steps = [last - j * step_s for j in range(int(range_s // step_s))]
    steps = [t for t in reversed(steps) if t > now - range_s]

    def window(at: float) -> float | None:
        end, start = counter(at), counter(at - step_s)
        return None if end is None or start is None else max(0.0, end - start)

    windows = [window(t) for t in steps]
    seen = [w for w in windows if w is not None]
    if not seen:
        return snap
    diffs: list[float] = []
    previous = window(steps[0] - step_s)  # the first step's own "offset 15s" window
    for w in windows:
        if previous is not None and w is not None:
            diffs.append((w - previous) ** 2)
        previous = w
    return snap.model_copy(
        update={
            "arrivals_per_window_mean": sum(seen) / len(seen),
            "arrivals_per_window_allan": sum(diffs) / len(diffs) / 2.0 if diffs else None,
            "arrival_windows": float(len(diffs)),
        }
    )


def extrapolated_rate(
    first_value: float,
    last_value: float,
    first_at: float,
    last_at: float,
    samples: int,
    range_start: float,
    range_end: float,
) -> float:
    """Prometheus' ``rate()`` of a counter sampled ``samples`` times from ``first_at`` to
    ``last_at`` inside ``(range_start, range_end]``: the change, extrapolated to each edge of
    the range when the edge is within 1.1 average sample intervals (else by half an interval),
    never to before the counter was zero, divided by the range's length."""
    sampled = last_at - first_at
    delta = last_value - first_value
    to_start, to_end = first_at - range_start, range_end - last_at
    average = sampled / (samples - 1)
    if delta > 0 and first_value >= 0:
        to_start = min(to_start, sampled * (first_value / delta))
    threshold = average * 1.1
    extended = sampled
    extended += to_start if to_start < threshold else average / 2
    extended += to_end if to_end < threshold else average / 2
    return delta * (extended / sampled) / (range_end - range_start)


def with_demand(
    snap: Snapshot | None,
    scrapes: Sequence[Scrape],
    now: float,
    spec: InferenceServiceSpec,
    gauge_window_s: float = 60.0,
) -> Snapshot | None:
    """``snap`` with the demand in front of the engines the spec reads (its activation
    sources): the requests the gateway holds at the last scrape within the gauge window, as
    the endpoint picker's queue (``spec.gateway.inferencePool``) and as the activation query's
    value (``spec.scaling.activation.query``, modelled as an activator counting the same held
    requests). Unchanged when the spec reads none, or nothing was scraped in the window."""
    pool = spec.gateway.inference_pool is not None
    activation = spec.scaling.activation is not None and bool(spec.scaling.activation.query)
    seen = [s for s in scrapes if now - gauge_window_s <= s.at <= now]
    if snap is None or not seen or not (pool or activation):
        return snap
    held = float(seen[-1].held)
    sheddable = float(seen[-1].held_sheddable) if spec.workload.classes else None
    return snap.model_copy(
        update={
            "gateway_queued": held if pool else None,
            "gateway_queued_sheddable": sheddable if pool else None,
            "activation_demand": held if activation else None,
        }
    )
