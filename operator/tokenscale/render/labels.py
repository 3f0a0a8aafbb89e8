"""Labels and selectors (Kubernetes recommended labels plus our own)."""

INFERENCE_SERVICE_LABEL = "tokenscale.io/inferenceservice"
MANAGED_BY = "tokenscale"
CONFIG_HASH_ANNOTATION = "tokenscale.io/config-hash"
ROLE_LABEL = "tokenscale.io/role"
"""On LeaderWorkerSet pods: ``leader`` (serves the API and /metrics) or ``worker``."""


def selector_labels(name: str) -> dict[str, str]:
    """The immutable Deployment selector: stable for the life of the InferenceService."""
    return {"app.kubernetes.io/instance": name, INFERENCE_SERVICE_LABEL: name}


def common_labels(name: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "vllm",
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/managed-by": MANAGED_BY,
        "app.kubernetes.io/component": "inference-server",
        INFERENCE_SERVICE_LABEL: name,
    }


def selector_string(name: str) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(selector_labels(name).items()))
