"""``spec.deployment``: what platform teams always need to set on the vLLM pods."""

from typing import Any

from pydantic import Field

from tokenscale.api.base import ApiModel


class DeploymentOverrides(ApiModel):
    """Pod-level settings merged into the rendered Deployment (GPU requests stay = TP)."""

    node_selector: dict[str, str] = Field(
        default_factory=dict, description="Merged over the GPU product selector."
    )
    tolerations: list[dict[str, Any]] = Field(
        default_factory=list, description="Added to the nvidia.com/gpu toleration."
    )
    affinity: dict[str, Any] | None = Field(default=None, description="Pod affinity rules.")
    env: list[dict[str, Any]] = Field(default_factory=list, description="Extra env vars.")
    image_pull_secrets: list[str] = Field(default_factory=list, description="Secret names.")
    service_account_name: str | None = Field(default=None, description="Pod service account.")
    priority_class_name: str | None = Field(default=None, description="Pod priority class.")
    runtime_class_name: str | None = Field(default=None, description="e.g. nvidia.")
    resources: dict[str, Any] | None = Field(
        default=None, description="CPU/memory requests and limits (GPU count is always TP)."
    )
    labels: dict[str, str] = Field(default_factory=dict, description="Extra pod labels.")
    annotations: dict[str, str] = Field(default_factory=dict, description="Extra pod annotations.")
    hf_token_secret: str | None = Field(
        default=None, description="Secret whose key HF_TOKEN is passed to vLLM (gated models)."
    )
    model_cache_claim: str | None = Field(
        default=None, description="PersistentVolumeClaim mounted as the HF cache (/models)."
    )
    shm_size_gib: float = Field(
        default=16.0, gt=0, description="Memory-backed /dev/shm size when TP > 1."
    )
    model_load_seconds: int | None = Field(
        default=None, gt=0, description="Startup-probe budget; absent = estimated from size."
    )
