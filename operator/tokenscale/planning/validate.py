"""PURE: every problem of a manifest in one run — the schema's, the catalog keys', and what only
the planner can judge (a GPU or model it does not know, a TP the model refuses) — for every
InferenceService in the text, not only the first."""

from collections.abc import Callable, Mapping
from typing import Any

from tokenscale.api.errors import SpecError, SpecIssue, did_you_mean
from tokenscale.api.inference_service import InferenceService
from tokenscale.api.manifest import parse_manifests
from tokenscale.api.yaml_loader import safe_load_all
from tokenscale.catalog import GPU_CATALOG, MODEL_CATALOG
from tokenscale.planning.mix import at_variant
from tokenscale.planning.resolve import resolve
from tokenscale.planning.variants import variant_spec


def _catalog_key_issues(doc: Mapping[str, Any], where: str) -> list[SpecIssue]:
    """Unknown ``hardware.gpu`` / ``model.catalog`` keys of a document the schema refused."""
    spec = doc.get("spec")
    if not isinstance(spec, Mapping):
        return []
    out = []
    hardware, model = spec.get("hardware"), spec.get("model")
    gpu = hardware.get("gpu") if isinstance(hardware, Mapping) else None
    if isinstance(gpu, str) and gpu.lower() not in {k.lower() for k in GPU_CATALOG}:
        out.append(
            SpecIssue(
                f"{where}spec.hardware.gpu",
                f"unknown GPU {gpu!r}{did_you_mean(gpu, list(GPU_CATALOG))}; use one of "
                f"{', '.join(GPU_CATALOG)} or give gpuSpec",
            )
        )
    key = model.get("catalog") if isinstance(model, Mapping) else None
    if isinstance(key, str) and key not in MODEL_CATALOG:
        out.append(
            SpecIssue(
                f"{where}spec.model.catalog",
                f"{key!r} is not in the model catalog{did_you_mean(key, list(MODEL_CATALOG))}; "
                f"use one of {', '.join(MODEL_CATALOG)}, or give architecture or hfConfig",
            )
        )
    return out


def validate_manifests(
    text: str, prepare: Callable[[InferenceService], InferenceService] | None = None
) -> list[InferenceService]:
    """The InferenceServices of ``text``, each one resolvable by the planner; otherwise a
    :class:`SpecError` with every issue of every document. ``prepare`` (the caller's I/O: a
    config.json read from a file or the Hub) runs on each service before it is judged."""
    try:
        services = parse_manifests(text)
    except SpecError as err:
        issues = list(err.issues)
        known = {i.path for i in issues}
        try:
            docs = [d for d in safe_load_all(text) if d is not None]
        except SpecError:
            raise err from None
        many = len(docs) > 1
        for index, doc in enumerate(docs):
            if isinstance(doc, Mapping):
                where = f"document {index + 1}: " if many else ""
                issues += [i for i in _catalog_key_issues(doc, where) if i.path not in known]
        raise SpecError(issues) from err
    issues = []
    prepared = []
    for s in services:
        try:
            ready = prepare(s) if prepare is not None else s
            _resolvable(ready)
            prepared.append(ready)
        except SpecError as err:
            prefix = f"{s.metadata.name}: " if len(services) > 1 else ""
            issues += [SpecIssue(prefix + i.path, i.message) for i in err.issues]
    if issues:
        raise SpecError(issues)
    return prepared


def _resolvable(service: InferenceService) -> None:
    """Resolve the spec the planner will plan: each GPU variant's own spec for a mix (its
    problems named at ``spec.hardware.variants[i]``), else the spec itself."""
    spec, name = service.spec, service.metadata.name
    if not spec.hardware.is_mix:
        resolve(spec, name).tp_sizes()
        return
    issues: list[SpecIssue] = []
    for index, variant in enumerate(spec.hardware.variants or []):
        try:
            resolve(variant_spec(spec, variant), name).tp_sizes()
        except SpecError as err:
            issues += at_variant(err, index).issues
    if issues:
        raise SpecError(issues)
