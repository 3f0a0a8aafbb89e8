"""The ``InferenceService`` resource: ``apiVersion: tokenscale.io/v1alpha1``."""

from typing import Literal, Self

from pydantic import Field, model_validator

from tokenscale.api.assumptions import Assumptions
from tokenscale.api.base import ApiModel
from tokenscale.api.cost import Cost
from tokenscale.api.deployment import DeploymentOverrides
from tokenscale.api.gateway import Gateway
from tokenscale.api.hardware import HardwareSpec
from tokenscale.api.k8s_names import Namespace, ObjectName
from tokenscale.api.lora import Lora
from tokenscale.api.model import ModelSpec
from tokenscale.api.profile import BenchProfile, ProfileRef
from tokenscale.api.scaling import Scaling
from tokenscale.api.serving import Serving
from tokenscale.api.shape_conflicts import shape_conflicts
from tokenscale.api.slo import Slo
from tokenscale.api.workload import Workload
from tokenscale.api.workload_ref import WorkloadRef

API_GROUP = "tokenscale.io"
API_VERSION = "v1alpha1"
KIND = "InferenceService"


class InferenceServiceSpec(ApiModel):
    """What to serve, on what, for which traffic and objectives."""

    model: ModelSpec = Field(description="The served model.")
    hardware: HardwareSpec = Field(description="GPU type and parallelism.")
    workload: Workload = Field(description="Forecast traffic.")
    slo: Slo = Field(default_factory=Slo, description="Latency objectives.")
    scaling: Scaling = Field(default_factory=Scaling, description="Replica bounds and policy.")
    workload_ref: WorkloadRef | None = Field(
        default=None,
        description="Scale this existing workload through its /scale subresource (replicas "
        "only) instead of rendering one; absent: tokenscale renders and owns the workload. "
        "Refused with spec.hardware.variants or spec.serving.disaggregation on or auto (they "
        "plan several workloads).",
    )
    serving: Serving = Field(default_factory=Serving, description="vLLM engine settings.")
    lora: Lora | None = Field(
        default=None,
        description="LoRA adapters served on the model (--enable-lora); absent = LoRA off.",
    )
    cost: Cost = Field(default_factory=Cost, description="Prices.")
    assumptions: Assumptions = Field(
        default_factory=Assumptions, description="Planner efficiencies and overheads."
    )
    deployment: DeploymentOverrides = Field(
        default_factory=DeploymentOverrides, description="Pod-level overrides."
    )
    gateway: Gateway = Field(
        default_factory=Gateway,
        description="What routes requests: a plain Service (round-robin) or a load-aware "
        "InferencePool; decides what a GPU mix is worth.",
    )
    profile: BenchProfile | None = Field(
        default=None,
        description="A `tokenscale bench` profile of this model on this GPU: the planner takes "
        "per-replica throughput, safe concurrency and latencies from it.",
    )
    profile_ref: ProfileRef | None = Field(
        default=None, description="The profile kept in a ConfigMap (the operator inlines it)."
    )

    @model_validator(mode="after")
    def _one_profile(self) -> Self:
        if self.profile is not None and self.profile_ref is not None:
            raise ValueError("set spec.profile or spec.profileRef, not both")
        return self

    @model_validator(mode="after")
    def _adapters_fit_the_model(self) -> Self:
        if self.lora is None:
            return self
        wrong = [
            f"spec.lora.adapters[{i}] ({a.name}): its adapter_config.json's "
            f"base_model_name_or_path is {a.base_model!r}, not spec.model.name "
            f"{self.model.name!r}"
            for i, a in enumerate(self.lora.adapters)
            if a.base_model is not None and a.base_model.rstrip("/") != self.model.name.rstrip("/")
        ]
        if wrong:
            raise ValueError(
                "; ".join(wrong) + ": an adapter trained on another base model gives wrong "
                "answers (or does not load); serve it with its own base model, or correct the "
                "config if the names differ only in where the base was read from"
            )
        return self

    @model_validator(mode="after")
    def _wakeable(self) -> Self:
        if self.scaling.may_reach_zero and not self.activation_sources:
            raise ValueError(
                "spec.scaling.minReplicas=0 (or a schedule window's) needs an activation "
                "source: at zero replicas no engine reports, so nothing could ever wake the "
                "service. Set spec.scaling.activation.query (a PromQL query of requests "
                "waiting in front of the engines) or spec.gateway.inferencePool (the endpoint "
                "picker's queue), or raise minReplicas to 1"
            )
        return self

    @model_validator(mode="after")
    def _sheddable_cap(self) -> Self:
        if self.scaling.max_replicas_for_sheddable is None:
            return self
        if not self.workload.sheddable_classes or self.gateway.inference_pool is None:
            raise ValueError(
                "spec.scaling.maxReplicasForSheddable caps the replicas a sheddable backlog "
                "adds, read from the endpoint picker's queue: it needs a sheddable class in "
                "spec.workload.classes and spec.gateway.inferencePool; remove it, or add them"
            )
        return self

    @model_validator(mode="after")
    def _length_bounds_fit(self) -> Self:
        """A length class's bound must leave the later classes prompts vLLM accepts, and a
        class's stated prompts must fit its bound."""
        classes = self.serving.length_classes or []
        ctx = self.workload.max_context_tokens
        for i, c in enumerate(classes):
            where = f"spec.serving.lengthClasses[{i}]"
            bound = c.max_input_tokens
            if bound is not None and ctx is not None and bound >= ctx and i < len(classes) - 1:
                raise ValueError(
                    f"{where}.maxInputTokens={bound} is not below spec.workload."
                    f"maxContextTokens={ctx}: the classes after it could only get prompts vLLM "
                    f"refuses; lower it below {ctx}, or drop the classes after it"
                )
            stated = c.input_tokens
            if bound is not None and stated is not None and stated.p99_or_mean > bound:
                raise ValueError(
                    f"{where}.inputTokens (P99 {stated.p99_or_mean:g}) exceeds its "
                    f"maxInputTokens={bound}: a class's prompts are at most its bound; correct "
                    "the statistics or the bound"
                )
        return self

    @model_validator(mode="after")
    def _one_shape(self) -> Self:
        conflicts = shape_conflicts(self.hardware, self.serving, self.scaling, self.workload_ref)
        if self.serving.splits_by_length and self.workload.classes:
            conflicts.append(
                "spec.serving.lengthClasses with spec.workload.classes: the tenants' classes "
                "share one pool and the length classes split it by prompt length; no rule yet "
                "places a tenant's class in the length pools. Remove one of the two"
            )
        if conflicts:
            raise ValueError("; ".join(conflicts))
        return self

    @property
    def activation_sources(self) -> list[str]:
        """What can wake this service at zero replicas, in words (empty: nothing)."""
        out = []
        if self.gateway.inference_pool is not None:
            out.append("the endpoint picker's queue (spec.gateway.inferencePool)")
        if self.scaling.activation is not None and self.scaling.activation.query:
            out.append("spec.scaling.activation.query")
        return out


class ObjectMeta(ApiModel):
    """The part of Kubernetes metadata the planner reads; other keys are kept, not checked."""

    model_config = ApiModel.model_config | {"extra": "allow"}

    name: ObjectName = Field(default="unnamed", description="Object name.")
    namespace: Namespace | None = Field(default=None, description="Namespace.")


class InferenceService(ApiModel):
    """A whole manifest as a user writes it for ``kubectl apply``."""

    model_config = ApiModel.model_config | {"extra": "ignore"}

    api_version: Literal["tokenscale.io/v1alpha1"] = Field(
        default="tokenscale.io/v1alpha1", alias="apiVersion"
    )
    kind: Literal["InferenceService"] = "InferenceService"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: InferenceServiceSpec
