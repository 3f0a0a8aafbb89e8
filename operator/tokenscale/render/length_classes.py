"""Length classes in the cluster: one child InferenceService per class.

A service with ``spec.serving.lengthClasses`` renders no workload of its own. Each class
becomes an InferenceService named ``<service>-<class>`` (derived when that is not a valid
Service name, ``render/names.py``), owned by the service (garbage-collected with it) and
labelled with it and the class: the parent's spec without ``lengthClasses``, the workload the
class's (its share of the rates, its token statistics: ``planning/length_split.py``), and,
with ``spec.gateway.inferencePool.name`` set, the pool name suffixed with the class (one
InferencePool per class). Each child is then one pool as any other InferenceService: its own
Deployment, Service and budget, planned, scaled on its own series by the shared stepper, and
reported in its own status. Requests reach a class through its child's Service (or its
InferencePool): the router in front sends each to its class by prompt length
(docs/length-classes.md).
"""

from typing import Any

from tokenscale.api.inference_service import API_GROUP, API_VERSION, KIND, InferenceServiceSpec
from tokenscale.api.k8s_names import is_dns1035_label
from tokenscale.planning.length_classes import class_specs
from tokenscale.render.bundle import Owner
from tokenscale.render.labels import MANAGED_BY
from tokenscale.render.names import child_name, label_value

LENGTH_PARENT_LABEL = "tokenscale.io/length-classes-of"
"""On each child: the parent InferenceService (as a label value)."""
LENGTH_CLASS_LABEL = "tokenscale.io/length-class"
"""On each child: its class's name."""


def class_service_name(name: str, class_name: str) -> str:
    """``<service>-<class>``, or derived from it when that is not a valid Service name."""
    joined = f"{name}-{class_name}"
    return joined if is_dns1035_label(joined) else child_name(joined)


def _child_spec(spec: InferenceServiceSpec, class_name: str) -> dict[str, Any]:
    doc = spec.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude_none=True)
    pool = spec.gateway.inference_pool
    if pool is not None and pool.name is not None:
        doc["gateway"]["inferencePool"]["name"] = f"{pool.name}-{class_name}"
    return doc


def class_services(
    name: str, namespace: str, spec: InferenceServiceSpec, owner: Owner | None
) -> list[dict[str, Any]]:
    """One child InferenceService per length class of ``spec``, in class order (owned by
    ``owner``; None: no owner reference, as ``tokenscale render`` prints without a UID)."""
    out = []
    for part, class_spec in class_specs(spec)[:-1]:
        meta: dict[str, Any] = {
            "name": class_service_name(name, part.name),
            "namespace": namespace,
            "labels": {
                LENGTH_PARENT_LABEL: label_value(name),
                LENGTH_CLASS_LABEL: part.name,
                "app.kubernetes.io/managed-by": MANAGED_BY,
            },
        }
        if owner is not None:
            meta["ownerReferences"] = [owner.reference()]
        out.append(
            {
                "apiVersion": f"{API_GROUP}/{API_VERSION}",
                "kind": KIND,
                "metadata": meta,
                "spec": _child_spec(class_spec, part.name),
            }
        )
    return out


def as_services(
    name: str, namespace: str, spec: InferenceServiceSpec
) -> list[tuple[str, InferenceServiceSpec]]:
    """What the operator reconciles for service ``name``: itself, or with length classes each
    child (its name and its spec as the API server will hold it)."""
    if not spec.serving.splits_by_length:
        return [(name, spec)]
    return [
        (doc["metadata"]["name"], InferenceServiceSpec.model_validate(doc["spec"]))
        for doc in class_services(name, namespace, spec, None)
    ]
