"""InferenceObjective calls (``llm-d.ai/v1alpha2``) over ``kube/custom.py``: read, apply, list
by label, delete. Without llm-d's CRD an apply raises
:class:`InferenceObjectiveNotInstalledError` (the InferenceService's status says what to
install).
"""

from typing import Any

from tokenscale.kube.custom import CustomResource, Raw, or_none
from tokenscale.render.inference_objective import GROUP, PLURAL, VERSION


class InferenceObjectiveNotInstalledError(RuntimeError):
    """The API server does not serve InferenceObjectives (llm-d's CRD is not installed)."""

    def __init__(self) -> None:
        super().__init__(
            "spec.workload.classes with spec.gateway.inferencePool renders one "
            f"InferenceObjective per class, but the API server does not serve {PLURAL}.{GROUP}/"
            f"{VERSION}: install llm-d's InferenceObjective CRD (llm-d-router, "
            "config/crd/bases), or remove spec.gateway.inferencePool"
        )


RESOURCE = CustomResource(GROUP, VERSION, PLURAL, InferenceObjectiveNotInstalledError)


def list_labelled(raw: Raw, namespace: str, selector: str) -> list[dict[str, Any]]:
    """The objectives in ``namespace`` matching the label ``selector`` (none without the CRD)."""
    got = or_none(lambda: raw("GET", RESOURCE.path(namespace), query=[("labelSelector", selector)]))
    return list((got or {}).get("items") or [])
