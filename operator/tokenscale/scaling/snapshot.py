"""A live snapshot of one InferenceService's vLLM metrics (None = not observed)."""

from pydantic import BaseModel, ConfigDict, Field

from tokenscale.scaling.buckets import BucketCounts


class Snapshot(BaseModel):
    """What Prometheus said, at ``at`` (unix seconds). Units in the names."""

    model_config = ConfigDict(frozen=True)

    at: float
    replicas_reporting: int = Field(description="Engines (pods) with fresh samples.")
    waiting: float | None = None
    waiting_max_per_replica: float | None = None
    running: float | None = None
    kv_usage_max: float | None = None
    kv_usage_mean: float | None = None
    kv_blocks_total: float | None = None
    kv_blocks_free: float | None = None
    ttft_p50_s: float | None = None
    ttft_p95_s: float | None = None
    ttft_p99_s: float | None = None
    itl_p99_s: float | None = None
    tpot_p50_s: float | None = None
    tpot_p99_s: float | None = None
    tpot_mean_s: float | None = Field(
        default=None, description="rate(_sum) / rate(_count): exact, unlike bucket quantiles"
    )
    ttft_mean_s: float | None = Field(default=None, description="rate(_sum) / rate(_count)")
    queue_mean_s: float | None = Field(
        default=None, description="Mean time waiting before the prefill: rate(_sum) / rate(_count)"
    )
    ttft_buckets: BucketCounts | None = Field(
        default=None,
        description="The TTFT histogram's requests per bucket over the rate window: the share "
        "over the SLO as a range (scaling/buckets.py).",
    )
    tpot_buckets: BucketCounts | None = Field(
        default=None, description="The same for TPOT (time per output token)."
    )
    e2e_p99_s: float | None = None
    queue_p99_s: float | None = None
    request_rate_rps: float | None = Field(
        default=None, description="Finished requests per second (rate of request_success)."
    )
    started_rps: float | None = Field(
        default=None,
        description="Requests that got their first token, per second (rate of the TTFT "
        "histogram's _count): the arrival rate less the queue's growth, without the lag of "
        "waiting for requests to finish.",
    )
    started_rps_recent: float | None = Field(
        default=None,
        description="The same first-token counter's rate over half the rate window (the "
        "last minute at the default 2m; scaling/need.py: the need reads the larger of the "
        "two, so a step up shows within a minute, not a whole rate window).",
    )
    output_tokens_mean: float | None = Field(
        default=None,
        description="Output length of the requests that finished in the window "
        "(rate(_sum) / rate(_count) of vllm:request_generation_tokens).",
    )
    arrivals_per_window_mean: float | None = Field(
        default=None,
        description="Requests reaching their first token per 15-s window, the mean over the "
        "last 30 min (scaling/dispersion.py).",
    )
    arrivals_per_window_allan: float | None = Field(
        default=None,
        description="Those windows' Allan variance: half the mean squared difference of "
        "successive windows' counts.",
    )
    arrival_windows: float | None = Field(
        default=None, description="How many successive differences the Allan variance averages."
    )
    prompt_tps: float | None = None
    generation_tps: float | None = None
    prefix_cache_hit_rate: float | None = None
    preemptions_per_s: float | None = None
    spec_decode_acceptance_rate: float | None = Field(
        default=None, description="Speculative decoding: accepted ÷ drafted tokens (rates)."
    )
    lora_engines: int | None = Field(
        default=None,
        description="Engines reporting vllm:lora_requests_info (None: no engine serves LoRA).",
    )
    lora_waiting_adapters: float | None = Field(
        default=None, description="Adapters with requests waiting, summed over engines."
    )
    lora_running_adapters: float | None = Field(
        default=None, description="Adapters in the running batches, summed over engines."
    )
    lora_slot_bound_engines: int | None = Field(
        default=None,
        description="Engines whose every adapter slot (max_lora) is in use while adapters wait: "
        "their queue waits for a slot, not for compute.",
    )
    gateway_queued: float | None = Field(
        default=None,
        description="Requests held in the endpoint picker's flow-control queue for this "
        "service's InferencePool: load the engines have not seen yet.",
    )
    gateway_queued_sheddable: float | None = Field(
        default=None,
        description="Of gateway_queued, the requests of negative priority (sheddable classes' "
        "InferenceObjectives): the flow-control queue's priority label.",
    )
    pool_saturation: float | None = Field(
        default=None,
        description="The endpoint picker's saturation of the pool (1.0: flow control holds "
        "requests).",
    )
    activation_demand: float | None = Field(
        default=None, description="spec.scaling.activation.query's value (summed over series)."
    )
    newest_sample_age_s: float | None = Field(default=None, description="Staleness.")
    rate_window_s: float | None = Field(
        default=None,
        description="The window rates are read over (None: not known): the forecast learns "
        "no trend while it is still filling (scaling/forecast.py).",
    )
    problems: list[str] = Field(default_factory=list, description="Why a value is missing.")
    roles: dict[str, "Snapshot"] = Field(
        default_factory=dict,
        description="A prefill/decode service: each role's own snapshot (``prefill``, "
        "``decode``); the top-level fields are then the decode pool's.",
    )

    @property
    def core_signals_present(self) -> bool:
        """Enough to decide: the queue and the KV usage from at least one replica."""
        return (
            self.replicas_reporting > 0
            and self.waiting is not None
            and self.kv_usage_max is not None
        )

    @property
    def kv_usage_fleet(self) -> float | None:
        """The fleet's KV usage: the reporting engines' mean, else the fullest engine's. A
        replica added grows the fleet's pool, not the fullest engine's: an engine still full
        of a backlog beside one that has just become Ready (step-down at 28:15: 0.979 beside a
        mean of 0.49, both at 0.15 fifteen seconds later) is no shortage of cache."""
        return self.kv_usage_mean if self.kv_usage_mean is not None else self.kv_usage_max

    @property
    def demand(self) -> float | None:
        """Requests waiting in front of the engines: the gateway's queue plus the activation
        query, those that were read (None: neither was)."""
        parts = [v for v in (self.gateway_queued, self.activation_demand) if v is not None]
        return sum(parts) if parts else None

    @property
    def arrival_rps(self) -> float | None:
        """The request rate the engine plans for: requests starting (first token) per second
        where the TTFT histogram is there, else requests finishing. Finishing lags arriving by
        a whole E2E latency (minutes for long answers), so after a rise it reads low."""
        return self.started_rps if self.started_rps is not None else self.request_rate_rps

    @property
    def mean_input_tokens(self) -> float | None:
        """Prompt tokens per started request: vLLM counts both at the first token, so the ratio
        is exact even while the load moves."""
        rate = self.arrival_rps
        if self.prompt_tps is None or not rate:
            return None
        return self.prompt_tps / rate

    @property
    def mean_output_tokens(self) -> float | None:
        """The finished requests' output length; without that histogram, generated tokens per
        finished request (which overstates it while requests pile up in flight)."""
        if self.output_tokens_mean is not None:
            return self.output_tokens_mean
        if self.generation_tps is None or not self.request_rate_rps:
            return None
        return self.generation_tps / self.request_rate_rps

    @property
    def output_tps_per_replica(self) -> float | None:
        if self.generation_tps is None or self.replicas_reporting <= 0:
            return None
        return self.generation_tps / self.replicas_reporting
