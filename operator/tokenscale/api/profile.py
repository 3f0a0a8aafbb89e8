"""The load-test profile: what ``tokenscale bench --profile-out`` writes (JSON or YAML, camelCase),
and what ``spec.profile`` holds (or ``spec.profileRef`` names in a ConfigMap).

Schema ``tokenscale.io/bench-profile/v1``: the endpoint's identity (model, GPU, TP, engine
version — as given on the command line or read from the server), one :class:`BenchStep` per
measured step (phase, concurrency or rate, latency percentiles, throughput, errors, and the
engine's queue and KV usage sampled from ``/metrics`` during the step), the knee and the
operating point that met the SLOs.
"""

from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError

from tokenscale.api.base import MAX_REPLICAS, MAX_RPS, MAX_SECONDS, MAX_TOKENS, ApiModel
from tokenscale.api.errors import from_validation_error
from tokenscale.api.k8s_names import ObjectName
from tokenscale.api.yaml_loader import safe_load

Phase = Literal["baseline", "ramp", "mix", "replay"]
PROFILE_KIND = "tokenscale.io/bench-profile/v1"

#: A measured duration or latency, seconds: never negative, at most a day.
Seconds = Annotated[float, Field(ge=0, le=MAX_SECONDS)]
#: A count of requests (int32, as Kubernetes would store it).
Count = Annotated[int, Field(ge=0, le=2**31 - 1)]
#: Tokens per request or per second.
Tokens = Annotated[float, Field(ge=0, le=MAX_TOKENS * 1000)]
#: A concurrency level: at least one request in flight.
Concurrency = Annotated[int, Field(ge=1, le=MAX_REPLICAS * 10)]


class BenchStep(ApiModel):
    """One measured step."""

    phase: Phase
    concurrency: Concurrency | None = Field(description="Requests kept in flight (closed loop)")
    rate_rps: float | None = Field(
        default=None, ge=0, le=MAX_RPS, description="Arrival rate (open loop, replay)"
    )
    duration_seconds: Seconds
    requests: Count = Field(description="Finished successfully")
    errors: Count
    timeouts: Count
    input_tokens_mean: Tokens
    output_tokens_mean: Tokens
    ttft_mean_seconds: Seconds | None = None
    tpot_mean_seconds: Seconds | None = None
    e2e_mean_seconds: Seconds | None = None
    ttft_p50_seconds: Seconds | None
    ttft_p95_seconds: Seconds | None
    ttft_p99_seconds: Seconds | None
    tpot_p50_seconds: Seconds | None
    tpot_p95_seconds: Seconds | None
    tpot_p99_seconds: Seconds | None
    itl_p99_seconds: Seconds | None
    e2e_p50_seconds: Seconds | None
    e2e_p95_seconds: Seconds | None
    e2e_p99_seconds: Seconds | None
    output_tps: Tokens = Field(description="Output tokens of finished requests ÷ step time")
    input_tps: Tokens
    requests_per_second: float = Field(ge=0, le=MAX_RPS)
    waiting_mean: float | None = Field(
        default=None, ge=0, le=1e9, description="vllm:num_requests_waiting"
    )
    kv_usage_max: float | None = Field(
        default=None, ge=0, le=1, description="vllm:kv_cache_usage_perc"
    )


class BenchProfile(ApiModel):
    """A ``tokenscale bench`` profile (the file, or ``spec.profile`` inline)."""

    kind: str = PROFILE_KIND
    model: str
    url: str
    gpu: str | None = None
    tensor_parallel_size: int | None = Field(default=None, ge=1, le=64)
    engine_version: str | None = None
    complete: bool = Field(description="False when interrupted or a phase hit its cap early")
    steps: list[BenchStep]
    knee_concurrency: Concurrency | None = Field(
        description="Last ramp step before TPOT P99 or TTFT P99 rose faster than throughput"
    )
    slo_ttft_p99_seconds: Seconds | None = None
    slo_tpot_p99_seconds: Seconds | None = None
    operating_concurrency: Concurrency | None = Field(
        description="Largest ramp concurrency meeting the given SLOs at P99"
    )
    notes: list[str] = Field(default_factory=list)

    def ramp(self) -> list[BenchStep]:
        return [s for s in self.steps if s.phase == "ramp" and s.requests > 0]

    def step_at(self, concurrency: int | None) -> BenchStep | None:
        return next((s for s in self.ramp() if s.concurrency == concurrency), None)


class ProfileRef(ApiModel):
    """A profile kept in a ConfigMap in the InferenceService's namespace."""

    config_map_name: ObjectName = Field(description="ConfigMap holding the profile.")
    key: str = Field(
        default="profile.yaml",
        pattern=r"^[-._a-zA-Z0-9]+$",
        max_length=253,
        description="Key of the profile (YAML or JSON).",
    )


def parse_profile(text: str, where: str) -> BenchProfile:
    """A profile from YAML or JSON text; errors name ``where`` and the field."""
    data: Any = safe_load(text, where)
    try:
        return BenchProfile.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc, where) from exc
