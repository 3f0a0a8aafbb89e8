"""Parse InferenceService manifests (YAML text, possibly several documents). No file I/O."""

from typing import Any

import yaml
from pydantic import ValidationError

from tokenscale.api.errors import SpecError, SpecIssue, from_validation_error
from tokenscale.api.inference_service import API_GROUP, KIND, InferenceService


def _is_inference_service(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and doc.get("kind") == KIND
        and str(doc.get("apiVersion", "")).startswith(f"{API_GROUP}/")
    )


def parse_inference_service(doc: dict[str, Any], where: str = "") -> InferenceService:
    """Validate one manifest; errors name ``spec.…`` paths (prefixed by ``where``)."""
    try:
        return InferenceService.model_validate(doc)
    except ValidationError as exc:
        err = from_validation_error(exc)
        if where:
            err = SpecError([SpecIssue(f"{where}{i.path}", i.message) for i in err.issues])
        raise err from exc


def parse_manifests(text: str) -> list[InferenceService]:
    """Every InferenceService in a multi-document YAML text; other kinds are skipped.

    Raises :class:`SpecError` listing the problems of every invalid document.
    """
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise SpecError.single("(yaml)", f"not valid YAML: {exc}") from exc
    services: list[InferenceService] = []
    issues: list[SpecIssue] = []
    many = len(docs) > 1
    for index, doc in enumerate(docs):
        if not _is_inference_service(doc):
            continue
        where = f"document {index + 1}: " if many else ""
        try:
            services.append(parse_inference_service(doc, where))
        except SpecError as exc:
            issues.extend(exc.issues)
    if issues:
        raise SpecError(issues)
    return services
