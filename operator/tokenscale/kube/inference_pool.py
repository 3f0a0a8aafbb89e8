"""InferencePool calls (``inference.networking.k8s.io/v1``): the typed client has no model for
it, so these go through ``kube/custom.py``. Without the Gateway API Inference Extension's CRD
an apply raises :class:`InferencePoolNotInstalledError` (the InferenceService's status says what
to install).
"""

from tokenscale.kube.custom import CustomResource
from tokenscale.render.inference_pool import GROUP, PLURAL, VERSION


class InferencePoolNotInstalledError(RuntimeError):
    """The API server does not serve InferencePools (the extension's CRDs are not installed)."""

    def __init__(self) -> None:
        super().__init__(
            "spec.gateway.inferencePool.endpointPicker is set, so tokenscale renders an "
            f"InferencePool, but the API server does not serve {PLURAL}.{GROUP}/{VERSION}: "
            "install the Gateway API Inference Extension's CRDs, or remove endpointPicker to "
            "use a pool someone else renders"
        )


RESOURCE = CustomResource(GROUP, VERSION, PLURAL, InferencePoolNotInstalledError)
