"""``spec.gateway``: what routes requests to the replicas, which decides what a GPU mix is worth.

Absent, or without ``inferencePool``: a plain Kubernetes Service spreads connections round-robin,
so every replica gets the same share of the load. With ``inferencePool``: a load-aware gateway
(a Gateway API Inference Extension InferencePool and its endpoint picker) sends each request to
the least-loaded replica, so replicas of different speeds each carry what they can. The
operator then reads the endpoint picker's flow-control queue and pool saturation for the pool
(``metrics/demand.py``); with ``endpointPicker`` set it also renders the InferencePool itself
(``render/inference_pool.py``).
"""

from typing import Literal

from pydantic import Field

from tokenscale.api.base import ApiModel
from tokenscale.api.k8s_names import ObjectName


class InferencePoolRef(ApiModel):
    """The InferencePool in front of this service (its presence means load-aware routing)."""

    name: ObjectName | None = Field(
        default=None, description="InferencePool name; absent = the service's name."
    )
    endpoint_picker: ObjectName | None = Field(
        default=None,
        description="The endpoint-picker Service the pool calls. Set: tokenscale renders the "
        "InferencePool (inference.networking.k8s.io/v1) for the service's pods. Absent: the "
        "pool is someone else's (e.g. an llm-d or inferencepool chart's); tokenscale only "
        "reads its endpoint picker's metrics.",
    )
    endpoint_picker_port: int = Field(
        default=9002,
        ge=1,
        le=65535,
        description="The endpoint-picker Service's port (its ext-proc gRPC port; 9002 in the "
        "extension's charts).",
    )
    failure_mode: Literal["FailOpen", "FailClose"] = Field(
        default="FailClose",
        description="What the gateway does when the endpoint picker does not answer: refuse "
        "(FailClose) or route without it (FailOpen).",
    )


class Gateway(ApiModel):
    """How requests reach the replicas."""

    inference_pool: InferencePoolRef | None = Field(
        default=None,
        description="Present: a load-aware gateway routes requests (capacities of a GPU mix "
        "add). Absent: a plain Service round-robins (every replica gets the same share).",
    )

    @property
    def load_aware(self) -> bool:
        return self.inference_pool is not None
