"""What a fleet of vLLM engines exports (summed over engines), and every request's outcome.

Counters and histograms carry vLLM 0.33's names' meaning and buckets (catalog.vllm_metrics):
``ttft`` = ``vllm:time_to_first_token_seconds``, ``itl`` = ``vllm:inter_token_latency_seconds``,
``tpot`` = ``vllm:request_time_per_output_token_seconds``, ``e2e`` =
``vllm:e2e_request_latency_seconds``, ``queue`` = ``vllm:request_queue_time_seconds``,
``output_tokens`` = ``vllm:request_generation_tokens`` (each finished request's length).
Latencies count from the request's arrival at the fleet (what a user sees).
"""

from dataclasses import dataclass, field

from tokenscale.catalog.vllm_metrics import (
    INTER_TOKEN_BUCKETS,
    REQUEST_LATENCY_BUCKETS,
    TTFT_BUCKETS,
    request_tokens_buckets,
)
from tokenscale.simulation.histogram import Histogram

OUTPUT_TOKENS_BUCKETS = request_tokens_buckets(1_000_000)


@dataclass(frozen=True, slots=True)
class Outcome:
    arrival_s: float
    ttft_s: float
    tpot_s: float
    e2e_s: float
    output_tokens: int
    priority: int = 0
    input_tokens: int = 0


@dataclass
class Recorder:
    ttft: Histogram = field(default_factory=lambda: Histogram(TTFT_BUCKETS))
    itl: Histogram = field(default_factory=lambda: Histogram(INTER_TOKEN_BUCKETS))
    tpot: Histogram = field(default_factory=lambda: Histogram(INTER_TOKEN_BUCKETS))
    e2e: Histogram = field(default_factory=lambda: Histogram(REQUEST_LATENCY_BUCKETS))
    queue: Histogram = field(default_factory=lambda: Histogram(REQUEST_LATENCY_BUCKETS))
    output_tokens: Histogram = field(default_factory=lambda: Histogram(OUTPUT_TOKENS_BUCKETS))
    success: float = 0.0
    prompt_tokens: float = 0.0
    generation_tokens: float = 0.0
    preemptions: float = 0.0
    prefix_queries: float = 0.0
    prefix_hits: float = 0.0
    lora_host_loads: float = 0.0
    """LoRA adapters loaded onto the GPU from host memory."""
    lora_source_loads: float = 0.0
    """LoRA adapters read from their source (not among the host's maxCpuLoras)."""
    outcomes: list[Outcome] = field(default_factory=list)

    def counters(self) -> dict[str, float]:
        return {
            "success": self.success,
            "prompt_tokens": self.prompt_tokens,
            "generation_tokens": self.generation_tokens,
            "preemptions": self.preemptions,
            "prefix_queries": self.prefix_queries,
            "prefix_hits": self.prefix_hits,
        }

    def histograms(self) -> dict[str, Histogram]:
        return {
            "ttft": self.ttft,
            "itl": self.itl,
            "tpot": self.tpot,
            "e2e": self.e2e,
            "queue": self.queue,
            "output_tokens": self.output_tokens,
        }
