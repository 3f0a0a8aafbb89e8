"""``spec.scaling``: bounds, redundancy and an optional pin."""

from typing import Self

from pydantic import Field, model_validator

from tokenscale.api.base import ApiModel


class Redundancy(ApiModel):
    """Headroom over the computed need: ``ceil(need × factor) + spareReplicas`` (N+k)."""

    factor: float = Field(default=1.0, ge=1.0, description="Multiplier on the computed need.")
    spare_replicas: int = Field(default=0, ge=0, description="Extra replicas for N+k.")


class Scaling(ApiModel):
    """Replica bounds and policy."""

    min_replicas: int = Field(default=1, ge=0, description="Never fewer replicas than this.")
    max_replicas: int = Field(default=64, ge=1, description="Never more replicas than this.")
    redundancy: Redundancy = Field(default_factory=Redundancy, description="Headroom.")
    replicas: int | None = Field(
        default=None, ge=0, description="Pin the replica count; autoscaling is off when set."
    )

    @model_validator(mode="after")
    def _bounds(self) -> Self:
        if self.min_replicas > self.max_replicas:
            raise ValueError(
                f"minReplicas={self.min_replicas} exceeds maxReplicas={self.max_replicas}"
            )
        return self
