"""The InferenceService API (the CRD's spec) as frozen pydantic models."""

from tokenscale.api.errors import SpecError, SpecIssue
from tokenscale.api.inference_service import (
    API_GROUP,
    API_VERSION,
    KIND,
    InferenceService,
    InferenceServiceSpec,
    ObjectMeta,
)

__all__ = [
    "API_GROUP",
    "API_VERSION",
    "KIND",
    "InferenceService",
    "InferenceServiceSpec",
    "ObjectMeta",
    "SpecError",
    "SpecIssue",
]
