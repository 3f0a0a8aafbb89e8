"""``spec.hardware.variants``: each variant as a one-GPU spec the planner already knows.

A variant's spec is the service's spec with ``hardware`` narrowed to the variant's GPU and
tensor-parallel size on one node per replica (a mix renders a Deployment per variant, so a
variant is planned within one node: one that does not fit there cannot serve, and the mix
does without it), ``scaling.maxReplicas`` to ``min(variant.maxReplicas, maxReplicas)``
(``minReplicas`` no higher) and the price to the variant's own: ``variant.gpuHourPrice``, else
``cost.gpuHourPrices[gpu]``, else none (never another GPU's price, never ``cost.gpuHourPrice``,
which names no GPU when there are several).
"""

from tokenscale.api.hardware import HardwareVariant
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning.planner import MORE_NODES_FIX
from tokenscale.planning.result import Plan

#: What a variant too large for one node is told instead of :data:`MORE_NODES_FIX`.
ONE_NODE_FIX = (
    "a mix's variants run one node per replica, whatever spec.hardware.maxNodesPerReplica "
    "says: a GPU with more memory, or quantize"
)


def variant_price(spec: InferenceServiceSpec, v: HardwareVariant) -> float | None:
    """The GPU-hour price of ``v`` (module docstring)."""
    if v.gpu_hour_price is not None:
        return v.gpu_hour_price
    return spec.cost.gpu_hour_prices.get(v.gpu_key)


def variant_spec(spec: InferenceServiceSpec, v: HardwareVariant) -> InferenceServiceSpec:
    """The one-GPU spec of variant ``v`` of ``spec``."""
    hw = spec.hardware.model_copy(
        update={
            "gpu": v.gpu,
            "gpu_spec": v.gpu_spec,
            "tensor_parallel_size": v.tensor_parallel_size,
            "max_nodes_per_replica": 1,
            "variants": None,
        }
    )
    bound = min(v.max_replicas, spec.scaling.max_replicas)
    scaling = spec.scaling.model_copy(
        update={
            "max_replicas": max(bound, 1),
            "min_replicas": min(spec.scaling.min_replicas, bound),
        }
    )
    cost = spec.cost.model_copy(update={"gpu_hour_price": variant_price(spec, v)})
    return spec.model_copy(update={"hardware": hw, "scaling": scaling, "cost": cost})


def on_one_node(plan: Plan) -> Plan:
    """A variant's plan with the fix its reasons name being the one a variant has (it cannot
    take more nodes per replica)."""
    if plan.feasible:
        return plan
    reasons = [r.replace(MORE_NODES_FIX, ONE_NODE_FIX) for r in plan.infeasible_reasons]
    return plan.model_copy(update={"infeasible_reasons": reasons})
