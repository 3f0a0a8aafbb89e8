"""Errors that name the field path, the value and what is allowed."""

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import ValidationError
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


def _describe(err: ErrorDetails) -> str:
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if err["type"] == "extra_forbidden":
        return "is not a known field; remove it or check the spelling (fields are camelCase)"
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


def from_validation_error(exc: ValidationError, prefix: str = "") -> SpecError:
    """Turn pydantic's error list into field-path issues using the YAML (camelCase) names."""
    issues = [SpecIssue(_loc_to_path(prefix, e["loc"]), _describe(e)) for e in exc.errors()]
    return SpecError(issues)
