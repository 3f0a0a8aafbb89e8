"""A vLLM *metrics emulator*: not vLLM, but its ``/metrics`` exactly as vLLM 0.33 writes it.

Same names (``vllm:…``), labels (``model_name``, ``engine``), histogram bucket bounds (spelled
as prometheus_client writes floats, as vLLM's own exposition does: ``le="1.0"``), counters
with ``_total`` and ``_created``, and ``vllm:cache_config_info`` carrying ``num_gpu_blocks`` as
a label. A test drives it: set the gauges, record finished requests, or let it generate a
steady load. One emulator = one vLLM pod (one Prometheus target, one ``instance``).
"""

import http.server
import threading
from dataclasses import dataclass
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from tokenscale.catalog import vllm_metrics as v
from tokenscale.playground.processes import free_port


@dataclass
class Load:
    """A steady load: ``rps`` requests/s finishing with these token counts and latencies."""

    rps: float = 0.0
    prompt_tokens: int = 1000
    generation_tokens: int = 200
    ttft_s: float = 0.3
    tpot_s: float = 0.02
    queue_s: float = 0.05


class VllmMetricsEmulator:
    def __init__(
        self,
        model_name: str = "test-model",
        num_gpu_blocks: int = 10_000,
        block_size: int = 16,
        engine: str = "0",
        legacy_names: bool = False,
        max_model_len: int = 131_072,
        speculative: bool = False,
    ) -> None:
        """``speculative``: also serve the speculative-decoding counters (vLLM creates them
        only when ``--speculative-config`` is set)."""
        self.registry = CollectorRegistry()
        self.port = free_port()
        self.labels = {"model_name": model_name, "engine": engine}
        self.legacy = legacy_names
        r, names = self.registry, v.LABELS
        self.running = Gauge("vllm:num_requests_running", "Running", names, registry=r)
        self.waiting = Gauge("vllm:num_requests_waiting", "Waiting", names, registry=r)
        self.waiting_by_reason = Gauge(
            "vllm:num_requests_waiting_by_reason",
            "Waiting by reason",
            (*names, "reason"),
            registry=r,
        )
        kv_name = "vllm:gpu_cache_usage_perc" if legacy_names else "vllm:kv_cache_usage_perc"
        self.kv = Gauge(kv_name, "KV usage", names, registry=r)
        info_labels = {
            "block_size": str(block_size),
            "cache_dtype": "auto",
            "enable_prefix_caching": "True",
            "gpu_memory_utilization": "0.92",
            "num_gpu_blocks": str(num_gpu_blocks),
            "num_gpu_blocks_override": "None",
            "sliding_window": "None",
            "kv_cache_size_tokens": str(num_gpu_blocks * block_size),
            "engine": engine,
        }
        self.info = Gauge("vllm:cache_config_info", "Cache config", tuple(info_labels), registry=r)
        self.info.labels(**info_labels).set(1)
        # vLLM's LoRA gauge exists only with --enable-lora: made by the first set_lora
        self.lora_info: Gauge | None = None
        self.prompt = Counter("vllm:prompt_tokens", "Prompt tokens", names, registry=r)
        self.generation = Counter("vllm:generation_tokens", "Generated tokens", names, registry=r)
        self.success = Counter(
            "vllm:request_success", "Finished", (*names, "finished_reason"), registry=r
        )
        self.preemptions = Counter("vllm:num_preemptions", "Preemptions", names, registry=r)
        self.prefix_queries = Counter("vllm:prefix_cache_queries", "Queries", names, registry=r)
        self.prefix_hits = Counter("vllm:prefix_cache_hits", "Hits", names, registry=r)
        self.ttft = Histogram(
            "vllm:time_to_first_token_seconds", "TTFT", names, buckets=v.TTFT_BUCKETS, registry=r
        )
        self.itl = Histogram(
            "vllm:inter_token_latency_seconds",
            "ITL",
            names,
            buckets=v.INTER_TOKEN_BUCKETS,
            registry=r,
        )
        tpot_name = (
            "vllm:time_per_output_token_seconds"
            if legacy_names
            else "vllm:request_time_per_output_token_seconds"
        )
        self.tpot = Histogram(tpot_name, "TPOT", names, buckets=v.INTER_TOKEN_BUCKETS, registry=r)
        self.e2e = Histogram(
            "vllm:e2e_request_latency_seconds",
            "E2E",
            names,
            buckets=v.REQUEST_LATENCY_BUCKETS,
            registry=r,
        )
        self.output_tokens = Histogram(
            v.REQUEST_GENERATION_TOKENS,
            "Output tokens per finished request",
            names,
            buckets=v.request_tokens_buckets(max_model_len),
            registry=r,
        )
        self.spec_drafts: Counter | None = None
        self.spec_draft_tokens: Counter | None = None
        self.spec_accepted: Counter | None = None
        if speculative:
            self.spec_drafts = Counter("vllm:spec_decode_num_drafts", "Drafts", names, registry=r)
            self.spec_draft_tokens = Counter(
                "vllm:spec_decode_num_draft_tokens", "Drafted tokens", names, registry=r
            )
            self.spec_accepted = Counter(
                "vllm:spec_decode_num_accepted_tokens", "Accepted tokens", names, registry=r
            )
            for counter in (self.spec_drafts, self.spec_draft_tokens, self.spec_accepted):
                counter.labels(**self.labels)
        self.queue = Histogram(
            "vllm:request_queue_time_seconds",
            "Queue",
            names,
            buckets=v.REQUEST_LATENCY_BUCKETS,
            registry=r,
        )
        for counter in (
            self.prompt,
            self.generation,
            self.preemptions,
            self.prefix_queries,
            self.prefix_hits,
        ):  # vLLM creates its labelled series at start
            counter.labels(**self.labels)
        for histogram in (self.ttft, self.itl, self.tpot, self.e2e, self.queue, self.output_tokens):
            histogram.labels(**self.labels)  # idle vLLM exposes all-zero buckets, not nothing
        for reason in v.FINISH_REASONS:  # vLLM pre-creates all five
            self.success.labels(**self.labels, finished_reason=reason)
        for reason in ("capacity", "deferred"):
            self.waiting_by_reason.labels(**self.labels, reason=reason).set(0)
        self.set_state(running=0, waiting=0, kv_usage=0.0)
        self._server: Any = None
        self._load = Load()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> "VllmMetricsEmulator":
        registry = self.registry

        class Handler(http.server.BaseHTTPRequestHandler):
            # Always the classic text format, names as vLLM writes them (``vllm:…``): newer
            # prometheus_client would answer Prometheus' OpenMetrics Accept header with the
            # colons escaped to underscores, which is not what a vLLM pod is seen to serve.
            def do_GET(self) -> None:
                body = generate_latest(registry)
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE_LATEST)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self._thread = threading.Thread(target=self._drive, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def set_state(self, running: float, waiting: float, kv_usage: float) -> None:
        self.running.labels(**self.labels).set(running)
        self.waiting.labels(**self.labels).set(waiting)
        self.waiting_by_reason.labels(**self.labels, reason="capacity").set(waiting)
        self.kv.labels(**self.labels).set(kv_usage)

    def set_lora(self, running: list[str], waiting: list[str], max_lora: int) -> None:
        """The engine's adapters as vLLM reports them: a new series for this label set, set to
        the current time (older series stay, with older times). vLLM registers the gauge only
        with LoRA on, so it appears with the first call."""
        if self.lora_info is None:
            self.lora_info = Gauge(
                "vllm:lora_requests_info",
                "Running stats on lora requests.",
                ("max_lora", "waiting_lora_adapters", "running_lora_adapters"),
                registry=self.registry,
            )
        self.lora_info.labels(
            max_lora=str(max_lora),
            waiting_lora_adapters=",".join(waiting),
            running_lora_adapters=",".join(running),
        ).set_to_current_time()

    def set_load(self, load: Load) -> None:
        self._load = load

    def record(
        self,
        prompt_tokens: int,
        generation_tokens: int,
        ttft_s: float,
        tpot_s: float,
        queue_s: float = 0.0,
        prefix_hit_tokens: int = 0,
    ) -> None:
        """One finished request, counted as vLLM counts it."""
        lab = self.labels
        self.prompt.labels(**lab).inc(prompt_tokens)
        self.generation.labels(**lab).inc(generation_tokens)
        self.success.labels(**lab, finished_reason="stop").inc()
        self.prefix_queries.labels(**lab).inc(prompt_tokens)
        self.prefix_hits.labels(**lab).inc(prefix_hit_tokens)
        self.ttft.labels(**lab).observe(ttft_s)
        self.tpot.labels(**lab).observe(tpot_s)
        self.itl.labels(**lab).observe(tpot_s)
        self.queue.labels(**lab).observe(queue_s)
        self.output_tokens.labels(**lab).observe(generation_tokens)
        self.e2e.labels(**lab).observe(queue_s + ttft_s + (generation_tokens - 1) * tpot_s)

    def record_speculation(self, drafts: int, draft_tokens: int, accepted_tokens: int) -> None:
        """Speculative steps, counted as vLLM's SpecDecodingLogging counts them."""
        counters = (self.spec_drafts, self.spec_draft_tokens, self.spec_accepted)
        for counter, amount in zip(counters, (drafts, draft_tokens, accepted_tokens), strict=True):
            assert counter is not None, "start the emulator with speculative=True"
            counter.labels(**self.labels).inc(amount)

    def _drive(self) -> None:
        tick, owed = 0.1, 0.0
        while not self._stop.wait(tick):
            load = self._load
            owed += load.rps * tick
            while owed >= 1.0:
                owed -= 1.0
                self.record(
                    load.prompt_tokens,
                    load.generation_tokens,
                    load.ttft_s,
                    load.tpot_s,
                    load.queue_s,
                )
