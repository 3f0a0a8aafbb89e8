"""Operator settings, read once at start-up (CLI flags, each also ``TOKENSCALE_<NAME>``)."""

from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Settings(BaseModel):
    """Everything ``tokenscale run`` can be told; nothing is read from the environment later."""

    model_config = ConfigDict(frozen=True)

    namespaces: tuple[str, ...] = Field(default=(), description="Watch only these namespaces.")
    all_namespaces: bool = Field(default=False, description="Watch every namespace.")
    interval_seconds: float = Field(default=15.0, gt=0, description="Timer reconcile period.")
    prometheus_url: str | None = Field(default=None, description="vLLM metrics source.")
    kubeconfig: str | None = Field(default=None, description="Kubeconfig; else in-cluster.")
    standalone: bool = Field(default=True, description="No peering (single operator).")
    liveness_endpoint: str | None = Field(
        default=None, description="e.g. http://0.0.0.0:8080/healthz"
    )

    @model_validator(mode="after")
    def _scope(self) -> Self:
        if self.namespaces and self.all_namespaces:
            raise ValueError("give --namespace or --all-namespaces, not both")
        return self

    @property
    def clusterwide(self) -> bool:
        """Watch every namespace: asked for, or no namespace named."""
        return self.all_namespaces or not self.namespaces
