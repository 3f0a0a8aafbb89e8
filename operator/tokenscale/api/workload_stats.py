"""Rates and token-length distributions: the statistics a workload (or one of its classes) is
described by."""

from typing import Self

from pydantic import Field, model_validator

from tokenscale.api.base import MAX_RPS, MAX_TOKENS, ApiModel


class Rps(ApiModel):
    """Request rate. Peak is given directly or as ``mean × burstFactor``; sizing uses the peak."""

    mean: float = Field(ge=0, le=MAX_RPS, description="Mean requests per second.")
    peak: float | None = Field(
        default=None, ge=0, le=MAX_RPS, description="Peak requests per second."
    )
    burst_factor: float | None = Field(
        default=None, ge=1, le=1000, description="Peak / mean; used when peak is absent."
    )

    @model_validator(mode="after")
    def _peak(self) -> Self:
        if self.peak is not None and self.burst_factor is not None:
            raise ValueError("give peak or burstFactor, not both")
        if self.peak is not None and self.peak < self.mean:
            raise ValueError(f"peak={self.peak} is below mean={self.mean}; peak must be >= mean")
        return self

    @property
    def design_rps(self) -> float:
        """The rate the fleet is sized for: peak, else mean × burstFactor, else mean."""
        if self.peak is not None:
            return self.peak
        return self.mean * (self.burst_factor or 1.0)


class TokenDistribution(ApiModel):
    """Tokens per request: mean and tail percentiles. Absent percentiles fall back to the mean."""

    mean: float = Field(ge=1, le=MAX_TOKENS, description="Mean tokens per request.")
    p95: float | None = Field(
        default=None, ge=1, le=MAX_TOKENS, description="95th percentile tokens."
    )
    p99: float | None = Field(
        default=None, ge=1, le=MAX_TOKENS, description="99th percentile tokens."
    )

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.p99 is not None and self.p99 < self.mean:
            raise ValueError(f"p99={self.p99} is below mean={self.mean}; p99 must be >= mean")
        if self.p95 is not None and self.p99 is not None and self.p95 > self.p99:
            raise ValueError(f"p95={self.p95} exceeds p99={self.p99}")
        return self

    @property
    def p99_or_mean(self) -> float:
        return self.p99 if self.p99 is not None else self.mean
