"""The Gateway API Inference Extension's ``InferencePool`` (``inference.networking.k8s.io/v1``)
for one InferenceService's vLLM pods, rendered when ``spec.gateway.inferencePool.endpointPicker``
names the endpoint picker that serves it.

The pool selects the pods by the service's immutable selector labels (the Deployment's, every
variant's; a LeaderWorkerSet's leaders only, which serve the API), on vLLM's port; its
``endpointPickerRef`` is the named Service and port. The pool is named
``spec.gateway.inferencePool.name`` or, absent, after the service — the name the endpoint
picker's metrics carry as ``inference_pool``, which the operator reads
(``metrics/demand.py``).
"""

from typing import Any

from tokenscale.api.gateway import InferencePoolRef
from tokenscale.render.engine_args import VLLM_PORT
from tokenscale.render.labels import ROLE_LABEL, common_labels, selector_labels

GROUP = "inference.networking.k8s.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "InferencePool"
PLURAL = "inferencepools"


def pool_name(name: str, ref: InferencePoolRef) -> str:
    """The pool's name: the spec's, or the InferenceService's."""
    return ref.name or name


def inference_pool(
    name: str, namespace: str, ref: InferencePoolRef, leaders_only: bool = False
) -> dict[str, Any]:
    """The InferencePool for InferenceService ``name`` (``ref.endpoint_picker`` must be set)."""
    assert ref.endpoint_picker is not None
    match = selector_labels(name)
    if leaders_only:
        match = {**match, ROLE_LABEL: "leader"}
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": pool_name(name, ref),
            "namespace": namespace,
            "labels": common_labels(name),
        },
        "spec": {
            "selector": {"matchLabels": match},
            "targetPorts": [{"number": VLLM_PORT}],
            "endpointPickerRef": {
                "name": ref.endpoint_picker,
                "port": {"number": ref.endpoint_picker_port},
                "failureMode": ref.failure_mode,
            },
        },
    }
