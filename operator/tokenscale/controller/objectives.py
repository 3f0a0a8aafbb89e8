"""The InferenceObjectives of classes the spec no longer has: found by the service's label and
the class label (``render/inference_objective.py``), deleted when this InferenceService
controls them and no class renders them any more: a class the spec dropped, or every class
once ``spec.gateway.inferencePool`` is removed. An objective of another owner, even with our
labels, is never touched.

They are looked for (one LIST) only where some may remain: while the gateway is set, or while
the last status written still carried classes (``status.plan.classes``, written after the
objects in the same reconcile), so a service that never had classes costs no call."""

from tokenscale.api.status import InferenceServiceStatus
from tokenscale.controller.api import KubeApi
from tokenscale.controller.ownership import delete_unkept
from tokenscale.render.inference_objective import CLASS_LABEL
from tokenscale.render.labels import INFERENCE_SERVICE_LABEL
from tokenscale.render.names import label_value


def objectives_may_remain(gateway_set: bool, last: InferenceServiceStatus) -> bool:
    """Whether objectives of this service may exist to be removed (module docstring)."""
    return gateway_set or bool(last.plan is not None and last.plan.classes)


def remove_dropped_objectives(
    kube: KubeApi, namespace: str, name: str, uid: str, kept: set[str]
) -> list[str]:
    """Delete our objectives not in ``kept`` (their names); return the names deleted."""
    selector = f"{INFERENCE_SERVICE_LABEL}={label_value(name)},{CLASS_LABEL}"
    listed = kube.list_inference_objectives(namespace, selector)
    return delete_unkept(
        listed, kept, uid, lambda child: kube.delete_inference_objective(namespace, child)
    )
