"""The objects of a service with ``spec.hardware.variants``: one Deployment per variant, one
Service and one PodDisruptionBudget over all of them.

- Each variant's Deployment is named ``<service>-<variant>`` and runs its own plan (the
  variant's TP, vLLM flags, GPU resource, node selector and tolerations); its pods carry the
  service's labels plus ``tokenscale.io/variant: <variant>``, which its selector adds.
- The Service selects the service's labels, so it spreads requests over every variant's pods
  (a plain Service: round-robin; an InferencePool in front routes by load instead).
- The PDB keeps ``ceil(needed)`` of all the service's pods (``render/service.py``).
- The replica count per variant: the plan's mix at the plan's total; another total is reached
  from the mix in the scale order (``scaling/variant_order.py``: cheapest capacity up, dearest
  down).

A variant whose replica spans nodes (a LeaderWorkerSet) is not rendered here: the spec is
refused at ``spec.hardware.variants[i]``.
"""

from collections.abc import Mapping
from typing import Any

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning.inputs import resolve_gpu
from tokenscale.planning.result import Plan
from tokenscale.planning.variants import variant_spec
from tokenscale.render.deployment import deployment, pod_template
from tokenscale.render.labels import selector_labels
from tokenscale.render.names import child_name
from tokenscale.render.service import pdb_min_available, pod_disruption_budget, service
from tokenscale.scaling.variant_order import mix_counts

VARIANT_LABEL = "tokenscale.io/variant"
_NAME_MAX = 63


def variant_workload_name(name: str, variant: str) -> str:
    """``<child name>-<variant>``, the child name cut so the whole stays a 63-character label."""
    base = child_name(name)[: _NAME_MAX - len(variant) - 1].rstrip("-")
    return f"{base}-{variant}"


def variant_objects(
    name: str,
    namespace: str,
    spec: InferenceServiceSpec,
    plan: Plan,
    total: int,
    config_hash: Any,
    counts: Mapping[str, int] | None = None,
) -> list[dict[str, Any]]:
    """Deployments per variant (one node per replica: the mix planner refuses a variant
    whose layout spans nodes), then the Service and the PDB. ``config_hash`` maps a pod
    template to its hash (``render/bundle.py``); ``counts`` (replicas per variant, e.g. within
    a quota) overrides the split of ``total``."""
    variants = spec.hardware.variants
    if variants is None or len(plan.variant_plans) != len(variants):
        raise ValueError("variant_objects needs a mix plan of a spec with variants")
    if counts is None:
        counts = mix_counts(plan, total).counts
    objs: list[dict[str, Any]] = []
    for v, own in zip(variants, plan.variant_plans, strict=True):
        vname = v.resolved_name
        vspec = variant_spec(spec, v)
        template = pod_template(name, vspec, own, resolve_gpu(vspec))
        template["metadata"]["labels"][VARIANT_LABEL] = vname
        obj = deployment(name, namespace, counts.get(vname, 0), template, config_hash(template))
        obj["metadata"]["name"] = variant_workload_name(name, vname)
        obj["metadata"]["labels"] = {**obj["metadata"]["labels"], VARIANT_LABEL: vname}
        obj["spec"]["selector"] = {"matchLabels": {**selector_labels(name), VARIANT_LABEL: vname}}
        objs.append(obj)
    needed = plan.sized.needed
    running = sum(counts.values())
    objs.append(service(name, namespace))
    objs.append(pod_disruption_budget(name, namespace, pdb_min_available(running, needed)))
    return objs
