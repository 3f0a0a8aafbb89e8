"""Everything one InferenceService renders to, with owner references and a config hash."""

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tokenscale.api.inference_service import API_GROUP, API_VERSION, KIND, InferenceServiceSpec
from tokenscale.planning.inputs import resolve_gpu
from tokenscale.planning.result import Plan
from tokenscale.render.deployment import deployment, pod_template
from tokenscale.render.disaggregated import ROLES, decode_service, role_objects, stamp
from tokenscale.render.inference_objective import inference_objectives
from tokenscale.render.inference_pool import inference_pool
from tokenscale.render.lws import group_pdb_max_unavailable, leader_worker_set, lws_templates
from tokenscale.render.names import derived_names
from tokenscale.render.service import pdb_min_available, pod_disruption_budget, service
from tokenscale.render.variants import variant_objects


@dataclass(frozen=True)
class Owner:
    """The InferenceService that owns the rendered objects (garbage collection)."""

    name: str
    uid: str

    def reference(self) -> dict[str, Any]:
        return {
            "apiVersion": f"{API_GROUP}/{API_VERSION}",
            "kind": KIND,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }


@dataclass(frozen=True)
class RenderedBundle:
    workload: dict[str, Any]
    """The Deployment (a replica on one node) or the LeaderWorkerSet (a replica spans nodes)."""
    service: dict[str, Any]
    pdb: dict[str, Any]
    config_hash: str
    objects: list[dict[str, Any]] = field(default_factory=list)
    #: What was derived because the service's name is not a valid Service name or label value.
    derived_names: tuple[str, ...] = ()
    #: spec.hardware.variants: one Deployment per variant (``workload`` is the first).
    workloads: tuple[dict[str, Any], ...] = ()


def config_hash(template: dict[str, Any] | list[dict[str, Any]]) -> str:
    """sha256 of the pod template(s) (canonical JSON): changes roll pods, replica changes do
    not."""
    canonical = json.dumps(template, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def render_bundle(
    name: str,
    namespace: str,
    spec: InferenceServiceSpec,
    plan: Plan,
    replicas: int,
    owner: Owner | None = None,
    counts: Mapping[str, int] | None = None,
) -> RenderedBundle:
    """Deployment (or LeaderWorkerSet when a replica spans nodes), Service and PDB for
    ``replicas`` replicas of ``plan``; for a mix plan one Deployment per variant
    (``render/variants.py``; ``counts``: replicas per variant instead of the split of
    ``replicas``); for a disaggregated plan one workload per role (``counts``: replicas per
    role, ``prefill``/``decode``; a role not named runs the plan's count); and, when
    ``spec.gateway.inferencePool.endpointPicker`` is set, the
    InferencePool for the pods (``render/inference_pool.py``; not for a prefill/decode pair,
    whose two roles one pool cannot tell apart); with ``spec.gateway.inferencePool`` and
    ``spec.workload.classes``, one InferenceObjective per class
    (``render/inference_objective.py``)."""
    bundle = _render(name, namespace, spec, plan, replicas, owner, counts)
    ref = spec.gateway.inference_pool
    extra: list[dict[str, Any]] = []
    if ref is not None and ref.endpoint_picker is not None and not plan.is_disaggregated:
        extra.append(inference_pool(name, namespace, ref, leaders_only=plan.nodes_per_replica > 1))
    if ref is not None and spec.workload.classes:
        extra += inference_objectives(name, namespace, ref, spec.workload.classes)
    if not extra:
        return bundle
    if owner is not None:
        for obj in extra:
            obj["metadata"]["ownerReferences"] = [owner.reference()]
    return replace(bundle, objects=[*bundle.objects, *extra])


def _render(
    name: str,
    namespace: str,
    spec: InferenceServiceSpec,
    plan: Plan,
    replicas: int,
    owner: Owner | None,
    counts: Mapping[str, int] | None,
) -> RenderedBundle:
    if plan.is_mix:
        return _render_variants(name, namespace, spec, plan, replicas, owner, counts)
    pair = plan.role_pools
    if pair is not None:
        prefill, decode = pair
        planned = {"prefill": prefill.replicas, "decode": decode.replicas}
        roles = {role: (counts or {}).get(role, n) for role, n in planned.items()}
        leaders = decode.nodes_per_replica > 1
        return _render_disaggregated(name, namespace, spec, plan, roles, leaders, owner)
    template = pod_template(name, spec, plan, resolve_gpu(spec))
    if plan.nodes_per_replica > 1:
        templates = lws_templates(template, plan)
        digest = config_hash(templates)
        max_unavailable = group_pdb_max_unavailable(replicas, plan.sized.needed)
        objs = [
            leader_worker_set(name, namespace, replicas, plan, templates, digest),
            service(name, namespace, leader_only=True),
            pod_disruption_budget(name, namespace, 0, max_unavailable=max_unavailable),
        ]
    else:
        digest = config_hash(template)
        objs = [
            deployment(name, namespace, replicas, template, digest),
            service(name, namespace),
            pod_disruption_budget(name, namespace, pdb_min_available(replicas, plan.sized.needed)),
        ]
    if owner is not None:
        for obj in objs:
            obj["metadata"]["ownerReferences"] = [owner.reference()]
    return RenderedBundle(
        workload=objs[0],
        service=objs[1],
        pdb=objs[2],
        config_hash=digest,
        objects=objs,
        derived_names=tuple(derived_names(name)),
    )


def _render_variants(
    name: str,
    namespace: str,
    spec: InferenceServiceSpec,
    plan: Plan,
    replicas: int,
    owner: Owner | None,
    counts: Mapping[str, int] | None,
) -> RenderedBundle:
    objs = variant_objects(name, namespace, spec, plan, replicas, config_hash, counts)
    workloads = tuple(o for o in objs if o["kind"] == "Deployment")
    digest = config_hash([w["spec"]["template"] for w in workloads])
    if owner is not None:
        for obj in objs:
            obj["metadata"]["ownerReferences"] = [owner.reference()]
    return RenderedBundle(
        workload=workloads[0],
        service=objs[-2],
        pdb=objs[-1],
        config_hash=digest,
        objects=objs,
        derived_names=tuple(derived_names(name)),
        workloads=workloads,
    )


def _render_disaggregated(
    name: str,
    namespace: str,
    spec: InferenceServiceSpec,
    plan: Plan,
    counts: dict[str, int],
    leaders_only: bool,
    owner: Owner | None,
) -> RenderedBundle:
    parts = {role: role_objects(name, namespace, spec, plan, role, counts[role]) for role in ROLES}
    digest = config_hash({role: hashed for role, (_, _, hashed) in parts.items()})
    for workload, _, _ in parts.values():
        stamp(workload, digest)
    svc = decode_service(name, namespace, leader_only=leaders_only)
    objs = [
        parts["decode"][0],
        svc,
        parts["decode"][1],
        parts["prefill"][0],
        parts["prefill"][1],
    ]
    if owner is not None:
        for obj in objs:
            obj["metadata"]["ownerReferences"] = [owner.reference()]
    return RenderedBundle(
        workload=objs[0],
        service=svc,
        pdb=objs[2],
        config_hash=digest,
        objects=objs,
        derived_names=tuple(derived_names(name)),
        workloads=(parts["decode"][0], parts["prefill"][0]),
    )
