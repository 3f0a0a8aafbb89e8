"""``spec.slo``: latency objectives."""

from typing import Self

from pydantic import Field, model_validator

from tokenscale.api.base import MAX_SECONDS, ApiModel


class Slo(ApiModel):
    """Latency objectives at P99 (optional P95 variants are reported against estimates too)."""

    ttft_p99_seconds: float | None = Field(
        default=None, gt=0, le=MAX_SECONDS, description="Time to first token."
    )
    tpot_p99_seconds: float | None = Field(
        default=None, gt=0, le=MAX_SECONDS, description="Time per output token."
    )
    e2e_p99_seconds: float | None = Field(
        default=None, gt=0, le=MAX_SECONDS, description="End-to-end latency."
    )
    ttft_p95_seconds: float | None = Field(
        default=None, gt=0, le=MAX_SECONDS, description="TTFT at P95."
    )
    tpot_p95_seconds: float | None = Field(
        default=None, gt=0, le=MAX_SECONDS, description="TPOT at P95."
    )
    e2e_p95_seconds: float | None = Field(
        default=None, gt=0, le=MAX_SECONDS, description="E2E at P95."
    )

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        for name, p95, p99 in (
            ("ttft", self.ttft_p95_seconds, self.ttft_p99_seconds),
            ("tpot", self.tpot_p95_seconds, self.tpot_p99_seconds),
            ("e2e", self.e2e_p95_seconds, self.e2e_p99_seconds),
        ):
            if p95 is not None and p99 is not None and p95 > p99:
                raise ValueError(f"{name}P95Seconds={p95} exceeds {name}P99Seconds={p99}")
        return self

    @property
    def any_set(self) -> bool:
        """True when at least one latency objective is set."""
        return any(
            v is not None
            for v in (
                self.ttft_p99_seconds,
                self.tpot_p99_seconds,
                self.e2e_p99_seconds,
                self.ttft_p95_seconds,
                self.tpot_p95_seconds,
                self.e2e_p95_seconds,
            )
        )
