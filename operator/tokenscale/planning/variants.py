"""``spec.hardware.variants``: each variant as a one-GPU spec the planner already knows.

A variant's spec is the service's spec with ``hardware`` narrowed to the variant's GPU and
tensor-parallel size, ``scaling.maxReplicas`` to ``min(variant.maxReplicas, maxReplicas)``
(``minReplicas`` no higher) and the price to the variant's own: ``variant.gpuHourPrice``, else
``cost.gpuHourPrices[gpu]``, else none (never another GPU's price, never ``cost.gpuHourPrice``,
which names no GPU when there are several).
"""

from tokenscale.api.hardware import HardwareVariant
from tokenscale.api.inference_service import InferenceServiceSpec


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
