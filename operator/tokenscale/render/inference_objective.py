"""llm-d's ``InferenceObjective`` (``llm-d.ai/v1alpha2``): one per class of
``spec.workload.classes``, bound to the service's InferencePool, rendered when
``spec.gateway.inferencePool`` is set.

Each objective is named ``<service>-<class>`` and carries the class's integer priority (the
endpoint picker's flow control serves higher priorities first and holds or sheds lower ones
when the pool is saturated). A client names its class with the header
``x-gateway-inference-objective: <service>-<class>``. The pool is the one the spec names (or
the service's own name), whether tokenscale renders it (``endpointPicker`` set) or someone
else does. Labels: the service's common labels and :data:`CLASS_LABEL` (the class's name):
the operator finds the objectives it rendered by them and deletes a removed class's objective.
"""

from typing import Any

from tokenscale.api.gateway import InferencePoolRef
from tokenscale.api.workload import WorkloadClass
from tokenscale.render import inference_pool
from tokenscale.render.labels import common_labels

GROUP = "llm-d.ai"
VERSION = "v1alpha2"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "InferenceObjective"
PLURAL = "inferenceobjectives"
CLASS_LABEL = "tokenscale.io/class"
#: The request header that names a request's objective (the endpoint picker reads it).
HEADER = "x-gateway-inference-objective"


def objective_name(name: str, class_name: str) -> str:
    """``<service>-<class>``: the name a client sends in :data:`HEADER`."""
    return f"{name}-{class_name}"


def inference_objectives(
    name: str, namespace: str, ref: InferencePoolRef, classes: list[WorkloadClass]
) -> list[dict[str, Any]]:
    """One InferenceObjective per class, bound to the pool ``ref`` names."""
    pool = inference_pool.pool_name(name, ref)
    return [
        {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {
                "name": objective_name(name, c.name),
                "namespace": namespace,
                "labels": {**common_labels(name), CLASS_LABEL: c.name},
            },
            "spec": {
                "poolRef": {
                    "group": inference_pool.GROUP,
                    "kind": inference_pool.KIND,
                    "name": pool,
                },
                "priority": c.objective_priority,
            },
        }
        for c in classes
    ]
