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
    prometheus_bearer_token_file: str | None = Field(default=None, description="Bearer token.")
    prometheus_ca_file: str | None = Field(default=None, description="CA bundle for TLS.")
    prometheus_verify_tls: bool = Field(default=True, description="Verify Prometheus' TLS.")
    prometheus_timeout_seconds: float = Field(default=5.0, gt=0, description="Per query.")
    metrics_namespace_label: str = Field(default="namespace", description="Namespace label.")
    metrics_service_label: str = Field(
        default="inferenceservice", description="Label naming the InferenceService."
    )
    metrics_gauge_window: str = Field(default="1m", description="Window for gauges.")
    metrics_rate_window: str = Field(default="2m", description="Window for rates, quantiles.")
    metrics_query_concurrency: int = Field(default=8, ge=1, description="Parallel queries.")
    kubeconfig: str | None = Field(default=None, description="Kubeconfig; else in-cluster.")
    metrics_port: int | None = Field(
        default=None, ge=1, le=65535, description="Serve the operator's /metrics here."
    )
    standalone: bool = Field(default=True, description="No peering (single operator).")
    peering_name: str = Field(default="tokenscale", description="Kopf peering object (HA).")
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
