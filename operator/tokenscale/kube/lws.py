"""LeaderWorkerSet calls (``leaderworkerset.x-k8s.io/v1``): the typed client has no LWS model,
so these go through ``kube/custom.py``. Without the LWS CRD an apply raises
:class:`LwsNotInstalledError`; deletes propagate in the foreground (the groups' pods go first).
"""

from tokenscale.kube.custom import CustomResource

GROUP = "leaderworkerset.x-k8s.io"
VERSION = "v1"
PLURAL = "leaderworkersets"
KIND = "LeaderWorkerSet"


class LwsNotInstalledError(RuntimeError):
    """The API server does not serve LeaderWorkerSets (the LWS CRD/controller is missing)."""

    def __init__(self) -> None:
        super().__init__(
            "this replica spans nodes and needs a LeaderWorkerSet, but the API server does not "
            f"serve {PLURAL}.{GROUP}/{VERSION}: install LeaderWorkerSet (kubernetes-sigs/lws; "
            "tokenscale's renders are validated against its v0.10 CRD)"
        )


RESOURCE = CustomResource(
    GROUP,
    VERSION,
    PLURAL,
    LwsNotInstalledError,
    {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"},
)
