"""vLLM 0.33's metric names, labels and default histogram buckets (vllm/v1/metrics/buckets.py).

The names below are what ``metrics/promql.py`` queries; the buckets are what the simulator's
recorder and the test emulator expose (the emulator spells the names on its own, as a second
witness of what vLLM serves).
"""

LABELS = ("model_name", "engine")

# Gauges
NUM_REQUESTS_RUNNING = "vllm:num_requests_running"
NUM_REQUESTS_WAITING = "vllm:num_requests_waiting"
KV_CACHE_USAGE = "vllm:kv_cache_usage_perc"
#: The KV usage gauge's name before vLLM 0.12.
KV_CACHE_USAGE_LEGACY = "vllm:gpu_cache_usage_perc"
CACHE_CONFIG_INFO = "vllm:cache_config_info"
# Histograms (seconds)
TIME_TO_FIRST_TOKEN = "vllm:time_to_first_token_seconds"
INTER_TOKEN_LATENCY = "vllm:inter_token_latency_seconds"
REQUEST_TIME_PER_OUTPUT_TOKEN = "vllm:request_time_per_output_token_seconds"
#: The per-token histogram's name before vLLM 0.13.
TIME_PER_OUTPUT_TOKEN_LEGACY = "vllm:time_per_output_token_seconds"
E2E_REQUEST_LATENCY = "vllm:e2e_request_latency_seconds"
REQUEST_QUEUE_TIME = "vllm:request_queue_time_seconds"
# Counters
REQUEST_SUCCESS = "vllm:request_success_total"
PROMPT_TOKENS = "vllm:prompt_tokens_total"
GENERATION_TOKENS = "vllm:generation_tokens_total"
REQUEST_GENERATION_TOKENS = "vllm:request_generation_tokens"
"""Histogram: the output length of each finished request."""
PREFIX_CACHE_HITS = "vllm:prefix_cache_hits_total"
PREFIX_CACHE_QUERIES = "vllm:prefix_cache_queries_total"
NUM_PREEMPTIONS = "vllm:num_preemptions_total"
# Speculative decoding (vllm/v1/spec_decode/metrics.py): drafts, drafted and accepted tokens
SPEC_DECODE_NUM_DRAFTS = "vllm:spec_decode_num_drafts_total"
SPEC_DECODE_NUM_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
SPEC_DECODE_NUM_ACCEPTED_TOKENS = "vllm:spec_decode_num_accepted_tokens_total"
#: LoRA (vllm/v1/metrics/loggers.py): a gauge set to the current time whenever the engine's
#: adapters change, labelled with the running and waiting adapters (comma-separated names)
#: and ``max_lora``; the newest series of an engine is its state.
LORA_REQUESTS_INFO = "vllm:lora_requests_info"
LORA_RUNNING = "running_lora_adapters"
LORA_WAITING = "waiting_lora_adapters"
LORA_MAX = "max_lora"

TTFT_BUCKETS = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
    160.0,
    640.0,
    2560.0,
)
INTER_TOKEN_BUCKETS = (
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
)
REQUEST_LATENCY_BUCKETS = (
    0.3,
    0.5,
    0.8,
    1.0,
    1.5,
    2.0,
    2.5,
    5.0,
    10.0,
    15.0,
    20.0,
    30.0,
    40.0,
    50.0,
    60.0,
    120.0,
    240.0,
    480.0,
    960.0,
    1920.0,
    7680.0,
)
FINISH_REASONS = ("stop", "length", "abort", "error", "repetition")


def request_tokens_buckets(max_model_len: int) -> tuple[float, ...]:
    """The 1-2-5 series capped at ``max_model_len`` (vLLM's ``build_1_2_5_buckets``)."""
    out: list[float] = []
    exponent = 0
    while True:
        for mantissa in (1, 2, 5):
            value = mantissa * 10**exponent
            if value > max_model_len:
                return tuple(out)
            out.append(float(value))
        exponent += 1
