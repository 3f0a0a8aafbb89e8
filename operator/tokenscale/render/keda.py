"""The KEDA ``ScaledObject`` (keda.sh/v1alpha1) that makes KEDA write the replicas tokenscale
decides (``spec.scaling.actuation: keda``).

The trigger is a ``prometheus`` trigger on ``tokenscale_replicas_desired{constraint="total"}``
for this service (labels ``namespace`` and ``inferenceservice``, the pods' label value). With
``metricType: AverageValue`` and ``threshold: "1"`` the HPA KEDA manages asks for
``ceil(value / 1)`` replicas: the decided count itself. The HPA behaviour adds no second
stabilisation (windows 0) and no step limit of its own (a policy that allows every replica in
one 15 s period): the steps are tokenscale's. ``tolerance: 0`` (where the cluster supports
configurable tolerance) keeps the HPA's default 10 % dead band from ignoring a one-replica step
above 10 replicas. ``ignoreNullValues: "false"``: a query with no series is an error, so
KEDA keeps the current count instead of reading 0 (missing metrics never scale down).
With ``minReplicas: 0`` the ScaledObject's ``minReplicaCount`` is 0: KEDA deactivates the
workload when the decided count reads 0 (its default ``activationThreshold`` 0) and activates
it when it rises; ``cooldownPeriod: 0`` because tokenscale's idle window
(``spec.scaling.scaleToZero``) already decided when to go to zero.
"""

from typing import Any

from tokenscale.api.scaling import KedaTrigger, Scaling
from tokenscale.render.labels import common_labels
from tokenscale.render.names import child_name, label_value

API_VERSION = "keda.sh/v1alpha1"
KIND = "ScaledObject"
GROUP = "keda.sh"
VERSION = "v1alpha1"
PLURAL = "scaledobjects"
PERIOD_S = 15


def desired_query(namespace: str, name: str) -> str:
    """PromQL for the decided replica count of InferenceService ``name`` (max over operator
    replicas: only the leader reconciles, the others export nothing for it)."""
    return (
        "max(tokenscale_replicas_desired{"
        f'namespace="{namespace}",inferenceservice="{label_value(name)}",constraint="total"'
        "})"
    )


def _rules(scaling: Scaling) -> dict[str, Any]:
    return {
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "tolerance": 0,
        "policies": [{"type": "Pods", "value": scaling.max_replicas, "periodSeconds": PERIOD_S}],
    }


def scaled_object(
    name: str,
    namespace: str,
    target: dict[str, str],
    scaling: Scaling,
    trigger: KedaTrigger,
) -> dict[str, Any]:
    """The ScaledObject for InferenceService ``name`` scaling ``target`` (``apiVersion``,
    ``kind``, ``name`` of the workload) between the spec's bounds."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": child_name(name),
            "namespace": namespace,
            "labels": common_labels(name),
        },
        "spec": {
            "scaleTargetRef": dict(target),
            "minReplicaCount": scaling.min_replicas,
            "maxReplicaCount": scaling.max_replicas,
            "pollingInterval": trigger.polling_interval_seconds,
            **({"cooldownPeriod": 0} if scaling.min_replicas == 0 else {}),
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {"scaleUp": _rules(scaling), "scaleDown": _rules(scaling)}
                }
            },
            "triggers": [
                {
                    "type": "prometheus",
                    "metricType": "AverageValue",
                    "metadata": {
                        "serverAddress": trigger.server_address,
                        "query": desired_query(namespace, name),
                        "threshold": "1",
                        "ignoreNullValues": "false",
                    },
                }
            ],
        },
    }
