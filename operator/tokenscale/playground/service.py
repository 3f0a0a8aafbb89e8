"""The InferenceService a playground runs: its manifest, the engine its twins model, and the
manifest as applied (its time settings in modelled seconds: the operator's engine runs on the
playground's modelled clock).

A prefill/decode service (``spec.serving.disaggregation`` planned on) has an engine per role
(each role's layout, flags and KV pool: ``simulation.disaggregated.engines``) and the modelled KV
transfer between them (the plan's fabric: latency + KV bytes per token × tokens held ÷
bandwidth), which the decode twins wait before admitting a prompt's KV.
"""

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from tokenscale.api.errors import SpecError
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.manifest import parse_manifests
from tokenscale.api.yaml_loader import safe_load_all
from tokenscale.planning import Plan, plan_service
from tokenscale.playground.engine import TwinIdentity
from tokenscale.simulation.disaggregated import engines
from tokenscale.simulation.replica import ReplicaConfig, replica_config
from tokenscale.simulation.trace import MOONCAKE_BLOCK_TOKENS
from tokenscale.simulation.workloads import TokenMix

DEFAULT_SPEC = "llama-3.1-8b-l4.yaml"
PD_SPEC = "llama-3.1-8b-l4-pd.yaml"
"""``--pd``: the bundled prefill/decode example."""


def default_spec_path(name: str = DEFAULT_SPEC) -> Path:
    return Path(str(resources.files("tokenscale") / "data" / "playground" / name))


def spec_mix(service: "PlaygroundService") -> TokenMix:
    """The spec's prompt and answer lengths (lognormal from each mean and P99) for a synthetic
    load, capped at the model's context."""
    w = service.spec.workload
    return TokenMix(
        service.name,
        w.input_tokens.mean,
        max(w.input_tokens.p99_or_mean, w.input_tokens.mean),
        w.output_tokens.mean,
        max(w.output_tokens.p99_or_mean, w.output_tokens.mean),
        max_total=service.identity.max_model_len,
    )


@dataclass(frozen=True)
class PlaygroundService:
    name: str
    manifest: dict[str, Any]
    spec: InferenceServiceSpec
    """With the plan's tensor-parallel size filled in (what the Deployment runs)."""
    plan: Plan
    engine: ReplicaConfig
    identity: TwinIdentity
    roles: dict[str, ReplicaConfig] = field(default_factory=dict)
    """A prefill/decode service: each role's engine (``prefill``, ``decode``); empty for one
    pool."""
    role_gpus: dict[str, int] = field(default_factory=dict)
    """GPUs per replica of each role."""
    transfer_s: Callable[[int], float] | None = None
    """A prompt's modelled KV transfer from a prefill to a decode engine (modelled seconds)."""

    @property
    def disaggregated(self) -> bool:
        return self.plan.is_disaggregated

    def applied_manifest(self, namespace: str) -> dict[str, Any]:
        """The manifest for the API server, in this namespace. Its windows are left in modelled
        seconds: the operator's engine runs on the playground's modelled clock."""
        body = copy.deepcopy(self.manifest)
        body["metadata"] = {"name": self.name, "namespace": namespace}
        return body


class InfeasiblePlanError(SpecError):
    """The spec is valid but its plan cannot serve (exit 1, as for ``tokenscale plan``)."""


def load_service(text: str, source: str) -> PlaygroundService:
    """The first InferenceService in ``text``; SpecError when it is invalid,
    :class:`InfeasiblePlanError` when its plan is infeasible."""
    services = parse_manifests(text)  # judges the YAML first (bad YAML is a SpecError)
    docs = [d for d in safe_load_all(text) if d]
    if not services:
        raise SpecError.single("kind", f"{source}: no InferenceService")
    svc = services[0]
    manifest = next(d for d in docs if d.get("kind") == "InferenceService")
    plan = plan_service(svc.spec, svc.metadata.name)
    if not plan.feasible:
        raise InfeasiblePlanError.single(
            "spec", f"{source}: the plan is infeasible: " + "; ".join(plan.infeasible_reasons)
        )
    hw = svc.spec.hardware.model_copy(update={"tensor_parallel_size": plan.tensor_parallel_size})
    spec = svc.spec.model_copy(update={"hardware": hw})
    roles: dict[str, ReplicaConfig] = {}
    role_gpus: dict[str, int] = {}
    transfer: Callable[[int], float] | None = None
    if plan.is_disaggregated:
        pair = engines(spec, plan)
        roles = {"prefill": pair.prefill, "decode": pair.decode}
        role_gpus = {"prefill": pair.prefill_gpus, "decode": pair.decode_gpus}
        transfer = pair.transfer_s
    return PlaygroundService(
        name=svc.metadata.name,
        manifest=manifest,
        spec=spec,
        plan=plan,
        engine=replica_config(spec, plan, MOONCAKE_BLOCK_TOKENS),
        roles=roles,
        role_gpus=role_gpus,
        transfer_s=transfer,
        identity=TwinIdentity(
            model=spec.model.name,
            max_model_len=plan.max_model_len,
            gpu_memory_utilization=spec.hardware.gpu_memory_utilization,
        ),
    )


IDLE_BURST_IDLE_S = 120
"""``--load idle-burst``: the idle window a spec gets when it sets none (modelled seconds)."""


def scale_to_zero(service: PlaygroundService, source: str) -> tuple[PlaygroundService, str]:
    """The service able to sleep at zero replicas, for ``--load idle-burst``:
    ``minReplicas: 0``; ``scaleToZero.idleSeconds`` :data:`IDLE_BURST_IDLE_S` unless set; an
    InferencePool (the gateway twin's queue wakes it) unless the spec has one. Returns the
    service and what was changed, in words (empty: nothing)."""
    manifest = copy.deepcopy(service.manifest)
    spec = manifest.setdefault("spec", {})
    scaling = spec.setdefault("scaling", {})
    changed = []
    if scaling.get("minReplicas") != 0:
        scaling["minReplicas"] = 0
        changed.append("spec.scaling.minReplicas=0")
    if "scaleToZero" not in scaling:
        scaling["scaleToZero"] = {"idleSeconds": IDLE_BURST_IDLE_S}
        changed.append(f"spec.scaling.scaleToZero.idleSeconds={IDLE_BURST_IDLE_S}")
    gateway = spec.setdefault("gateway", {})
    if gateway.get("inferencePool") is None:
        gateway["inferencePool"] = {}
        changed.append("spec.gateway.inferencePool={} (the gateway twin's queue wakes it)")
    if not changed:
        return service, ""
    return load_service(yaml.safe_dump(manifest), source), ", ".join(changed)
