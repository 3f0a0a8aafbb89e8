"""Parse InferenceService manifests (YAML text, possibly several documents). No file I/O."""

import difflib
from typing import Any

from pydantic import ValidationError

from tokenscale.api.errors import SpecError, SpecIssue, from_validation_error
from tokenscale.api.inference_service import API_GROUP, API_VERSION, KIND, InferenceService
from tokenscale.api.yaml_loader import safe_load_all


def _is_inference_service(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and doc.get("kind") == KIND
        and str(doc.get("apiVersion", "")).startswith(f"{API_GROUP}/")
    )


def _misspelt(doc: Any) -> str | None:
    """Why a document that is not an InferenceService looks like a mistaken one, or None.

    Other kinds (a Namespace, a ConfigMap) are skipped; a document of our API group with another
    kind, or a kind close to ``InferenceService``, is an error rather than silently skipped.
    """
    if not isinstance(doc, dict):
        items = f"{len(doc)} item{'' if len(doc) == 1 else 's'}" if isinstance(doc, list) else ""
        shape = f"a list of {items}" if isinstance(doc, list) else repr(doc)[:40]
        return (
            f"is {shape}, not a mapping; a manifest is a mapping of apiVersion, kind, "
            "metadata and spec"
        )
    kind, api_version = doc.get("kind"), str(doc.get("apiVersion", ""))
    if kind == KIND:
        if not api_version.startswith(f"{API_GROUP}/"):
            return (
                f"apiVersion {api_version!r} is not {API_GROUP}/{API_VERSION}; use "
                f"apiVersion: {API_GROUP}/{API_VERSION}"
            )
        return None
    ours = api_version.startswith(f"{API_GROUP}/")
    close = isinstance(kind, str) and difflib.get_close_matches(
        kind.lower(), [KIND.lower()], 1, 0.8
    )
    if ours or close:
        return f"kind {kind!r} is not a kind tokenscale knows; use kind: {KIND}"
    return None


def parse_inference_service(doc: dict[str, Any], where: str = "") -> InferenceService:
    """Validate one manifest; errors name ``spec.…`` paths (prefixed by ``where``)."""
    try:
        return InferenceService.model_validate(doc)
    except ValidationError as exc:
        err = from_validation_error(exc, root=InferenceService)
        if where:
            err = SpecError([SpecIssue(f"{where}{i.path}", i.message) for i in err.issues])
        raise err from exc


def parse_manifests(text: str) -> list[InferenceService]:
    """Every InferenceService in a multi-document YAML text; other kinds are skipped.

    Raises :class:`SpecError` listing the problems of every invalid document: bad YAML,
    duplicate keys, a misspelt kind, two services with one name and namespace, invalid fields.
    """
    docs = [d for d in safe_load_all(text) if d is not None]
    services: list[InferenceService] = []
    issues: list[SpecIssue] = []
    many = len(docs) > 1
    seen: dict[tuple[str | None, str], int] = {}
    for index, doc in enumerate(docs):
        where = f"document {index + 1}: " if many else ""
        problem = _misspelt(doc)
        if problem is not None:
            path = "kind" if isinstance(doc, dict) else "(document)"
            issues.append(SpecIssue(f"{where}{path}", problem))
            continue
        if not _is_inference_service(doc):
            continue
        try:
            service = parse_inference_service(doc, where)
        except SpecError as exc:
            issues.extend(exc.issues)
            continue
        key = (service.metadata.namespace, service.metadata.name)
        if key in seen:
            issues.append(
                SpecIssue(
                    f"{where}metadata.name",
                    f"{service.metadata.name!r} is also the name of document {seen[key]}; "
                    "each InferenceService needs its own name (they would render one Deployment)",
                )
            )
            continue
        seen[key] = index + 1
        services.append(service)
    if issues:
        raise SpecError(issues)
    return services
