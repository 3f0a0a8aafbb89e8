"""``spec.deployment``: what platform teams always need to set on the vLLM pods.

Names and labels are checked against Kubernetes' own rules here, so nothing rendered from them
is refused by the API server; ``resources`` must be quantities with requests within limits.
"""

from typing import Any, Self

from pydantic import Field, field_validator, model_validator

from tokenscale.api.base import MAX_GIB, MAX_SECONDS, ApiModel
from tokenscale.api.k8s_names import LabelValue, ObjectName, QualifiedName, is_qualified_name
from tokenscale.api.quantity import parse_quantity

_RESOURCE_SECTIONS = ("requests", "limits")
_TOLERATION_KEYS = {"key", "operator", "value", "effect", "tolerationSeconds"}
_TOLERATION_OPERATORS = ("Exists", "Equal")
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_ENV_KEYS = {"name", "value", "valueFrom"}


class DeploymentOverrides(ApiModel):
    """Pod-level settings merged into the rendered Deployment (GPU requests stay = TP)."""

    node_selector: dict[QualifiedName, LabelValue] = Field(
        default_factory=dict, description="Merged over the GPU product selector."
    )
    tolerations: list[dict[str, Any]] = Field(
        default_factory=list, description="Added to the nvidia.com/gpu toleration."
    )
    affinity: dict[str, Any] | None = Field(default=None, description="Pod affinity rules.")
    env: list[dict[str, Any]] = Field(default_factory=list, description="Extra env vars.")
    image_pull_secrets: list[ObjectName] = Field(default_factory=list, description="Secret names.")
    service_account_name: ObjectName | None = Field(
        default=None, description="Pod service account."
    )
    priority_class_name: ObjectName | None = Field(default=None, description="Pod priority class.")
    runtime_class_name: ObjectName | None = Field(default=None, description="e.g. nvidia.")
    resources: dict[str, Any] | None = Field(
        default=None,
        description="CPU/memory requests and limits (GPU count is always TP); a limit without "
        "a request lowers the rendered default request to the limit.",
    )
    labels: dict[QualifiedName, LabelValue] = Field(
        default_factory=dict, description="Extra pod labels."
    )
    annotations: dict[QualifiedName, str] = Field(
        default_factory=dict, description="Extra pod annotations."
    )
    hf_token_secret: ObjectName | None = Field(
        default=None, description="Secret whose key HF_TOKEN is passed to vLLM (gated models)."
    )
    model_cache_claim: ObjectName | None = Field(
        default=None, description="PersistentVolumeClaim mounted as the HF cache (/models)."
    )
    shm_size_gib: float = Field(
        default=16.0, gt=0, le=MAX_GIB, description="Memory-backed /dev/shm size when TP > 1."
    )
    model_load_seconds: int | None = Field(
        default=None,
        gt=0,
        le=int(MAX_SECONDS),
        description="Startup-probe budget; absent = estimated from size.",
    )

    @field_validator("tolerations")
    @classmethod
    def _tolerations(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for index, tol in enumerate(value):
            unknown = set(tol) - _TOLERATION_KEYS
            if unknown:
                raise ValueError(
                    f"[{index}]: {', '.join(sorted(unknown))} is not a toleration field; use "
                    + ", ".join(sorted(_TOLERATION_KEYS))
                )
            op, effect = tol.get("operator", "Equal"), tol.get("effect")
            if op not in _TOLERATION_OPERATORS:
                raise ValueError(f"[{index}].operator: {op!r}; use Exists or Equal")
            if effect is not None and effect not in _TAINT_EFFECTS:
                raise ValueError(f"[{index}].effect: {effect!r}; use {', '.join(_TAINT_EFFECTS)}")
            for key in ("key", "value"):
                if key in tol and not isinstance(tol[key], str):
                    raise ValueError(f"[{index}].{key}: {tol[key]!r} is not a string")
            seconds = tol.get("tolerationSeconds")
            if seconds is not None and (
                isinstance(seconds, bool)
                or not isinstance(seconds, int)
                or abs(seconds) > 2**63 - 1
            ):
                raise ValueError(f"[{index}].tolerationSeconds: {seconds!r} is not an integer")
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for index, var in enumerate(value):
            name = var.get("name")
            if not isinstance(name, str) or not name or "=" in name:
                raise ValueError(f"[{index}].name: {name!r}; give the variable a name without '='")
            unknown = set(var) - _ENV_KEYS
            if unknown:
                raise ValueError(
                    f"[{index}]: {', '.join(sorted(unknown))} is not an env field; use name "
                    "with value or valueFrom"
                )
            if "value" in var and not isinstance(var["value"], str):
                raise ValueError(
                    f"[{index}].value: {var['value']!r} is not a string; quote it "
                    f'("{var["value"]}")'
                )
            if "value" in var and "valueFrom" in var:
                raise ValueError(f"[{index}]: give value or valueFrom, not both")
        return value

    @field_validator("resources")
    @classmethod
    def _quantities(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        for section, entries in value.items():
            if section not in _RESOURCE_SECTIONS:
                raise ValueError(f"{section!r} is not a resource section; use requests or limits")
            if not isinstance(entries, dict):
                raise ValueError(f"{section} must map resource names to quantities")
            for name, quantity in entries.items():
                if not isinstance(name, str) or not is_qualified_name(name):
                    raise ValueError(f"{section}: {name!r} is not a resource name")
                if isinstance(quantity, bool) or not isinstance(quantity, str | int | float):
                    raise ValueError(
                        f"{section}.{name}: {quantity!r} is not a quantity; use e.g. 4 or 16Gi"
                    )
                try:
                    parse_quantity(str(quantity))
                except ValueError as exc:
                    raise ValueError(f"{section}.{name}: {exc}") from exc
        return value

    @model_validator(mode="after")
    def _requests_within_limits(self) -> Self:
        res = self.resources or {}
        requests, limits = res.get("requests") or {}, res.get("limits") or {}
        for name, limit in limits.items():
            if name in requests and parse_quantity(str(requests[name])) > parse_quantity(
                str(limit)
            ):
                raise ValueError(
                    f"resources.requests.{name}={requests[name]} exceeds "
                    f"resources.limits.{name}={limit}; a request must be <= its limit"
                )
        return self
