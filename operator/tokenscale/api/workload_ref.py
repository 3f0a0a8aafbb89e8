"""``spec.workloadRef``: an existing workload, in the InferenceService's namespace, that
tokenscale scales through its ``/scale`` subresource instead of rendering its own."""

from pydantic import Field

from tokenscale.api.base import ApiModel
from tokenscale.api.k8s_names import ObjectName


class WorkloadRef(ApiModel):
    """The object to scale: a Deployment, StatefulSet, LeaderWorkerSet, or any resource that
    serves ``/scale``."""

    api_version: str = Field(
        min_length=1,
        max_length=253,
        pattern=r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?v[0-9]+((alpha|beta)[0-9]+)?$",
        description="Its apiVersion, e.g. apps/v1.",
    )
    kind: str = Field(
        min_length=1,
        max_length=63,
        pattern=r"^[A-Z][A-Za-z0-9]*$",
        description="Its kind, e.g. Deployment.",
    )
    name: ObjectName = Field(description="Its name, in the InferenceService's namespace.")
