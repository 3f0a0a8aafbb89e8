"""KEDA ScaledObject calls (``keda.sh/v1alpha1``): the typed client has no model for it, so
these go through ``kube/custom.py``. Without KEDA's CRD an apply raises
:class:`KedaNotInstalledError` (the InferenceService's status says what to install).
"""

from tokenscale.kube.custom import CustomResource
from tokenscale.render.keda import GROUP, PLURAL, VERSION


class KedaNotInstalledError(RuntimeError):
    """The API server does not serve ScaledObjects (KEDA is not installed)."""

    def __init__(self) -> None:
        super().__init__(
            f"spec.scaling.actuation is keda, but the API server does not serve {PLURAL}."
            f"{GROUP}/{VERSION}: install KEDA (kedacore/keda), or set actuation direct or "
            "advisory"
        )


RESOURCE = CustomResource(GROUP, VERSION, PLURAL, KedaNotInstalledError)
