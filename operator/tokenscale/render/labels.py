"""Labels and selectors (Kubernetes recommended labels plus our own).

Each takes the InferenceService name and writes it as a valid label value (``names.py``).
"""

from collections.abc import Mapping

from tokenscale.render.names import label_value

INFERENCE_SERVICE_LABEL = "tokenscale.io/inferenceservice"
MANAGED_BY = "tokenscale"
CONFIG_HASH_ANNOTATION = "tokenscale.io/config-hash"
ROLE_LABEL = "tokenscale.io/role"
"""On LeaderWorkerSet pods: ``leader`` (serves the API and /metrics) or ``worker``."""


def selector_labels(name: str) -> dict[str, str]:
    """The immutable Deployment selector: stable for the life of the InferenceService."""
    value = label_value(name)
    return {"app.kubernetes.io/instance": value, INFERENCE_SERVICE_LABEL: value}


def common_labels(name: str) -> dict[str, str]:
    value = label_value(name)
    return {
        "app.kubernetes.io/name": "vllm",
        "app.kubernetes.io/instance": value,
        "app.kubernetes.io/managed-by": MANAGED_BY,
        "app.kubernetes.io/component": "inference-server",
        INFERENCE_SERVICE_LABEL: value,
    }


KUEUE_LABELS = ("kueue.x-k8s.io/queue-name", "kueue.x-k8s.io/priority-class")
"""Kueue reads these on the workload object itself (its Deployment and LeaderWorkerSet
integrations), not only on the pods: set in ``spec.deployment.labels``, they go on both."""


def workload_labels(name: str, pod_labels: Mapping[str, str]) -> dict[str, str]:
    """A workload's own labels: the common ones, and the Kueue keys of its pod labels."""
    kueue = {k: v for k, v in pod_labels.items() if k in KUEUE_LABELS}
    return {**kueue, **common_labels(name)}


def selector_string(name: str) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(selector_labels(name).items()))
