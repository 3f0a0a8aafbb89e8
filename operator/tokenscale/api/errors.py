"""Errors that name the field path, the value and what is allowed."""

import difflib
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails


@dataclass(frozen=True)
class SpecIssue:
    """One problem with one field: ``spec.workload.rps.mean: -1 is negative; use a value >= 0``."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class SpecError(ValueError):
    """The spec cannot be planned as written. Carries every issue found, each with its field."""

    def __init__(self, issues: Sequence[SpecIssue]) -> None:
        self.issues = tuple(issues)
        super().__init__("; ".join(str(i) for i in self.issues))

    @classmethod
    def single(cls, path: str, message: str) -> "SpecError":
        return cls([SpecIssue(path, message)])

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(i.path for i in self.issues)


def _loc_to_path(prefix: str, loc: Sequence[int | str]) -> str:
    parts: list[str] = [prefix] if prefix else []
    for item in loc:
        if isinstance(item, int):
            if parts:
                parts[-1] = f"{parts[-1]}[{item}]"
            else:
                parts.append(f"[{item}]")
        elif item.startswith(("function-", "union[", "tagged-union[")):
            continue
        else:
            parts.append(item)
    return ".".join(parts)


#: The most names a "did you mean" lists for a family name (``H100``: its three variants).
MAX_FAMILY = 3


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    """`` (did you mean 'X'?)`` for the closest of ``choices`` (case-insensitive), or ``""``.
    A family name that is the head of some choices (``H100`` of ``H100-SXM-80GB``,
    ``H100-PCIE-80GB``, …; ``L4`` of ``L4-24GB``) names them, as many as :data:`MAX_FAMILY`."""
    lowered = {c.lower(): c for c in choices}
    head = word.lower().rstrip("-") + "-"
    family = [c for low, c in lowered.items() if low.startswith(head)] if word else []
    if family and len(family) <= MAX_FAMILY:
        names = [repr(c) for c in family]
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
        return f" (did you mean {listed}?)"
    close = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return f" (did you mean {lowered[close[0]]!r}?)" if close else ""


def _models_in(annotation: object) -> list[type[BaseModel]]:
    """The pydantic models an annotation can hold (through Optional, unions, lists, dicts)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _models_in(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType, list, tuple, dict):
        return [m for a in typing.get_args(annotation) for m in _models_in(a)]
    return []


def _fields_at(root: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    """The YAML names of the fields a mapping at ``loc`` (under ``root``) may hold."""
    models = [root]
    for item in loc:
        if isinstance(item, int) or item.startswith(("function-", "union[", "tagged-union[")):
            continue
        found: list[type[BaseModel]] = []
        for model in models:
            for name, info in model.model_fields.items():
                if item in (name, info.alias):
                    found += _models_in(info.annotation)
        if not found:
            return []
        models = found
    return [info.alias or name for m in models for name, info in m.model_fields.items()]


def _describe(err: ErrorDetails, root: type[BaseModel] | None = None) -> str:
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if err["type"] == "extra_forbidden":
        loc = err["loc"]
        known = _fields_at(root, loc[:-1]) if root is not None else []
        hint = did_you_mean(str(loc[-1]), known) if loc else ""
        return f"is not a known field{hint}; remove it or check the spelling (fields are camelCase)"
    if err["type"] == "missing":
        return "is required"
    value = err.get("input")
    if isinstance(value, dict):
        if err["type"] in ("value_error", "assertion_error"):
            return msg  # a rule across the fields of the object the path names: no value to show
        keys = ", ".join(str(k) for k in list(value)[:5]) + (", …" if len(value) > 5 else "")
        return f"{msg} (got a mapping with keys {keys})" if value else f"{msg} (got {{}})"
    if isinstance(value, list):
        return f"{msg} (got a list of {len(value)} item{'s' if len(value) != 1 else ''})"
    return f"{msg} (got {value!r})"


def from_validation_error(
    exc: ValidationError, prefix: str = "", root: type[BaseModel] | None = None
) -> SpecError:
    """Turn pydantic's error list into field-path issues using the YAML (camelCase) names; with
    ``root`` (the validated model), a misspelt field gets the closest known one."""
    issues = [SpecIssue(_loc_to_path(prefix, e["loc"]), _describe(e, root)) for e in exc.errors()]
    return SpecError(issues)
