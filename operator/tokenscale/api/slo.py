"""``spec.slo``: latency objectives."""

from typing import Self

from pydantic import Field, ValidationInfo, field_validator, model_validator

from tokenscale.api.base import MAX_SECONDS, ApiModel

#: The largest TTFT and TPOT objectives anyone means, in seconds (docs/spec.md#slo): a chat
#: client shows nothing until the first token, and a minute is where users and common proxy
#: read timeouts (nginx's ``proxy_read_timeout`` is 60 s) give up; 2 s per token is half a
#: token a second, a 300-token answer in 10 minutes. Above them the value is almost surely
#: milliseconds written in a seconds field (``tpotP99Seconds: 80`` for 80 ms).
MAX_MEANT_SECONDS = {"ttft": 60.0, "tpot": 2.0}


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

    @field_validator("ttft_p99_seconds", "tpot_p99_seconds", "ttft_p95_seconds", "tpot_p95_seconds")
    @classmethod
    def _meant(cls, value: float | None, info: ValidationInfo) -> float | None:
        kind = (info.field_name or "")[:4]
        bound = MAX_MEANT_SECONDS[kind]
        if value is not None and value > bound:
            raise ValueError(
                f"{value:g} s is not a {kind.upper()} objective anyone means (at most "
                f"{bound:g} s); the unit is seconds — did you mean milliseconds? write "
                f"{value / 1e3:g}"
            )
        return value

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
