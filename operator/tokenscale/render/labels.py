"""Labels and selectors (Kubernetes recommended labels plus our own).

Each takes the InferenceService name and writes it as a valid label value (``names.py``).
"""

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


def selector_string(name: str) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(selector_labels(name).items()))
