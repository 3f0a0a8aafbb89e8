"""Operator settings, read once at start-up (CLI flags, each also ``TOKENSCALE_<NAME>``)."""

from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tokenscale.controller.leadership import ElectionConfig
from tokenscale.kube.throttle import ClientLimits

UNWATCHED_RESYNC_INTERVALS = 4
"""Default bound on re-reading unwatched inputs, in intervals: a ConfigMap edit reaches a
plan-only service's plan within four ticks, at a quarter of the reads of one per tick."""


class Settings(BaseModel):
    """Everything ``tokenscale run`` can be told; nothing is read from the environment later."""

    model_config = ConfigDict(frozen=True)

    namespaces: tuple[str, ...] = Field(default=(), description="Watch only these namespaces.")
    all_namespaces: bool = Field(default=False, description="Watch every namespace.")
    interval_seconds: float = Field(default=15.0, gt=0, description="Timer reconcile period.")
    time_scale: float = Field(
        default=1.0,
        gt=0,
        description="Engine seconds per wall second (a compressed-time playground; 1 otherwise).",
    )
    time_origin: float | None = Field(
        default=None,
        description="Wall time (epoch seconds) at which the engine's clock equals the wall "
        "clock when time_scale is not 1 (None: the operator's start).",
    )
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
    leader_elect: bool = Field(
        default=False, description="Compete for a Lease; only the leader works (HA)."
    )
    leader_election_namespace: str | None = Field(
        default=None, description="Namespace of the Lease (the operator's own)."
    )
    leader_election_name: str = Field(default="tokenscale-leader", description="Lease name.")
    leader_election_identity: str | None = Field(
        default=None, description="This candidate's name (the pod name)."
    )
    lease_duration_seconds: float = Field(default=15.0, gt=0, description="A claim lasts.")
    renew_deadline_seconds: float = Field(default=10.0, gt=0, description="Leader gives up.")
    retry_period_seconds: float = Field(default=2.0, gt=0, description="Between attempts.")
    liveness_endpoint: str | None = Field(
        default=None, description="e.g. http://0.0.0.0:8080/healthz"
    )
    api_qps: float = Field(
        default=300.0, ge=0, description="Requests per second to the API server (0: no limit)."
    )
    api_burst: int = Field(default=600, ge=1, description="Requests allowed above the QPS.")
    unwatched_resync_seconds: float | None = Field(
        default=None,
        gt=0,
        description="Longest time a plan-only service whose spec reads an unwatched input (a "
        "ConfigMap, a workloadRef's workload, a GPU mix's pods) goes without a full "
        "reconcile (None: UNWATCHED_RESYNC_INTERVALS intervals).",
    )

    @model_validator(mode="after")
    def _scope(self) -> Self:
        if self.namespaces and self.all_namespaces:
            raise ValueError("give --namespace or --all-namespaces, not both")
        if self.leader_elect and not (
            self.leader_election_namespace and self.leader_election_identity
        ):
            raise ValueError(
                "--leader-elect needs --leader-election-namespace (POD_NAMESPACE) and "
                "--leader-election-identity (POD_NAME)"
            )
        self.election()  # the three durations must be ordered
        return self

    def election(self) -> ElectionConfig | None:
        """The leader election to run, or None (a single operator)."""
        if not self.leader_elect:
            return None
        return ElectionConfig(
            identity=self.leader_election_identity or "",
            namespace=self.leader_election_namespace or "",
            name=self.leader_election_name,
            lease_duration_s=self.lease_duration_seconds,
            renew_deadline_s=self.renew_deadline_seconds,
            retry_period_s=self.retry_period_seconds,
        )

    def limits(self) -> ClientLimits:
        """The client-side rate limit of the operator's own API requests."""
        return ClientLimits(qps=self.api_qps, burst=self.api_burst)

    @property
    def unwatched_resync_s(self) -> float:
        """``unwatched_resync_seconds``, else that many intervals (60 s at the default 15 s)."""
        if self.unwatched_resync_seconds is not None:
            return self.unwatched_resync_seconds
        return UNWATCHED_RESYNC_INTERVALS * self.interval_seconds

    @property
    def clusterwide(self) -> bool:
        """Watch every namespace: asked for, or no namespace named."""
        return self.all_namespaces or not self.namespaces
