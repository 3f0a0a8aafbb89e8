"""vLLM 0.33's ``/metrics`` for one twin, built at each scrape from its engine.

The same names, ``model_name``/``engine`` labels, bucket bounds (``catalog.vllm_metrics``),
``_total``/``_created`` samples and ``vllm:cache_config_info`` as vLLM writes them. Latencies
are modelled seconds. Counters and histogram counts are divided by ``speed``, so that
Prometheus' ``rate()`` over wall-clock windows reads modelled rates (at ``speed`` 1 they are
vLLM's own numbers).
"""

import math
from collections.abc import Iterator

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from tokenscale.catalog import vllm_metrics as v
from tokenscale.playground.engine import TwinEngine, TwinIdentity
from tokenscale.simulation.histogram import Histogram


class VllmCollector(Collector):
    """vLLM 0.33's exposition from the engine's state and recorder."""

    def __init__(self, engine: TwinEngine, ident: TwinIdentity) -> None:
        self.engine = engine
        self.ident = ident
        self.labels = {"model_name": ident.model, "engine": "0"}

    def collect(self) -> Iterator[Metric]:
        e, lab = self.engine, self.labels
        scale = 1.0 / e.clock.speed
        # the engine as of the scrape: its steps up to now, not to the driver's last wake-up
        e.replica.run_until(e.clock.now())
        replica, rec = e.replica, e.rec
        waiting, running = replica.waiting_reported, len(replica.running)
        yield _gauge("vllm:num_requests_running", "Running", lab, running)
        yield _gauge("vllm:num_requests_waiting", "Waiting", lab, waiting)
        by_reason = Metric("vllm:num_requests_waiting_by_reason", "Waiting by reason", "gauge")
        by_reason.add_sample(by_reason.name, {**lab, "reason": "capacity"}, waiting)
        by_reason.add_sample(by_reason.name, {**lab, "reason": "deferred"}, 0.0)
        yield by_reason
        yield _gauge("vllm:kv_cache_usage_perc", "KV usage", lab, replica.kv_usage)
        cfg = e.cfg
        info = {
            "block_size": str(cfg.block_size),
            "cache_dtype": "auto",
            "enable_prefix_caching": str(cfg.prefix_caching),
            "gpu_memory_utilization": str(self.ident.gpu_memory_utilization),
            "num_gpu_blocks": str(cfg.kv_blocks),
            "num_gpu_blocks_override": "None",
            "sliding_window": "None",
            "kv_cache_size_tokens": str(cfg.kv_blocks * cfg.block_size),
            "engine": "0",
        }
        yield _gauge("vllm:cache_config_info", "Cache config", info, 1.0)
        created = e.created
        for name, doc, value in (
            ("vllm:prompt_tokens", "Prompt tokens", rec.prompt_tokens),
            ("vllm:generation_tokens", "Generated tokens", rec.generation_tokens),
            ("vllm:num_preemptions", "Preemptions", rec.preemptions),
            ("vllm:prefix_cache_queries", "Queries", rec.prefix_queries),
            ("vllm:prefix_cache_hits", "Hits", rec.prefix_hits),
        ):
            yield _counter(name, doc, [(lab, value * scale)], created)
        finished = {"length": rec.success, "abort": float(e.aborted)}
        success = [
            ({**lab, "finished_reason": reason}, finished.get(reason, 0.0) * scale)
            for reason in v.FINISH_REASONS
        ]
        yield _counter("vllm:request_success", "Finished", success, created)
        for name, doc, hist in (
            ("vllm:time_to_first_token_seconds", "TTFT", rec.ttft),
            ("vllm:inter_token_latency_seconds", "ITL", rec.itl),
            ("vllm:request_time_per_output_token_seconds", "TPOT", rec.tpot),
            ("vllm:e2e_request_latency_seconds", "E2E", rec.e2e),
            ("vllm:request_queue_time_seconds", "Queue", rec.queue),
        ):
            m = Metric(name, doc, "histogram")
            cumulative = 0.0
            for bound, count in zip((*hist.bounds, math.inf), hist.counts, strict=True):
                cumulative += count
                m.add_sample(f"{name}_bucket", {**lab, "le": _le(bound)}, cumulative * scale)
            m.add_sample(f"{name}_count", lab, cumulative * scale)
            m.add_sample(f"{name}_sum", lab, hist.total * scale)
            m.add_sample(f"{name}_created", lab, created)
            yield m
        yield _request_tokens(
            v.REQUEST_GENERATION_TOKENS,
            "Output tokens per request",
            lab,
            rec.output_tokens,
            v.request_tokens_buckets(self.ident.max_model_len),
            scale,
            created,
        )


def _request_tokens(
    name: str,
    doc: str,
    lab: dict[str, str],
    hist: Histogram,
    bounds: tuple[float, ...],
    scale: float,
    created: float,
) -> Metric:
    """A request-tokens histogram on vLLM's buckets for this engine (the 1-2-5 series capped at
    its max model len): the recorder's finer series folded into them."""
    m = Metric(name, doc, "histogram")
    pairs = list(zip((*hist.bounds, math.inf), hist.counts, strict=True))
    for bound in (*bounds, math.inf):
        cumulative = sum(count for b, count in pairs if b <= bound)
        m.add_sample(f"{name}_bucket", {**lab, "le": _le(bound)}, cumulative * scale)
    m.add_sample(f"{name}_count", lab, sum(hist.counts) * scale)
    m.add_sample(f"{name}_sum", lab, hist.total * scale)
    m.add_sample(f"{name}_created", lab, created)
    return m


def _le(bound: float) -> str:
    """A bucket bound as prometheus_client spells it (``1.0``, ``+Inf``)."""
    return str(floatToGoString(bound))  # type: ignore[no-untyped-call]


def _gauge(name: str, doc: str, labels: dict[str, str], value: float) -> Metric:
    m = Metric(name, doc, "gauge")
    m.add_sample(name, labels, float(value))
    return m


def _counter(
    name: str, doc: str, series: list[tuple[dict[str, str], float]], created: float
) -> Metric:
    m = Metric(name, doc, "counter")
    for labels, value in series:
        m.add_sample(f"{name}_total", labels, value)
    for labels, _ in series:
        m.add_sample(f"{name}_created", labels, created)
    return m
