"""Reading the CLI's input files, the table/JSON choice, and how a bad input ends a command
(exit 2, the message on stderr).

Light on purpose: every command imports this module to build ``--help``, so YAML, rich and the
API models are imported by the functions that use them, when they run.
"""

from __future__ import annotations

import enum
import json
import math
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, NoReturn

import typer

if TYPE_CHECKING:
    from pathlib import Path

    from tokenscale.api.errors import SpecError


def _dump(doc: Mapping[str, object], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(doc, indent=2)
    import yaml  # noqa: PLC0415

    return yaml.safe_dump(doc, sort_keys=False)


def fail_invalid(err: SpecError, file: Path, fmt: str | None = None) -> NoReturn:
    """Print every field path and fix of an invalid InferenceService, then exit 2: on stderr
    for people, or (``fmt`` json/yaml) as a document on stdout for programs."""
    if fmt in ("json", "yaml"):
        doc = {
            "error": "invalid",
            "file": str(file),
            "issues": [{"path": i.path, "message": i.message} for i in err.issues],
        }
        typer.echo(_dump(doc, fmt))
        raise typer.Exit(2)
    from rich.console import Console  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415

    console = Console(stderr=True)
    options_only = all(i.path.startswith("--") for i in err.issues)
    console.print(
        Text.assemble(
            ("error:", "red"),
            f" invalid options for {file}:"
            if options_only
            else f" {file} is not a valid InferenceService:",
        ),
        highlight=False,
        soft_wrap=True,
    )
    for issue in err.issues:
        path = str(file) if issue.path == "(yaml)" else issue.path  # the file's own text
        console.print(f"  {path}: {issue.message}", highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit(2)


def read_input(file: Path, fmt: str | None = None) -> str:
    """A file's text, or standard input for ``-``; an unreadable or non-UTF-8 file exits 2
    (``fmt`` json/yaml: the error as a document on stdout)."""
    try:
        if str(file) == "-":
            data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
        else:
            data = file.read_bytes()
        return data.decode("utf-8") if isinstance(data, bytes) else data
    except OSError as exc:
        raise bad_input(f"cannot read {file}: {exc.strerror or exc}", fmt) from exc
    except UnicodeDecodeError as exc:
        raise bad_input(
            f"{file}: byte {exc.start} is not UTF-8; save the file as UTF-8 text", fmt
        ) from exc


class TableOrJson(enum.StrEnum):
    table = "table"
    json = "json"


def bad_input(message: str, fmt: str | None = None) -> typer.Exit:
    """Print ``error: message`` to stderr (the message verbatim, never read as markup), or with
    ``fmt`` json/yaml ``{"error": "invalid", "message": …}`` to stdout; raise the returned Exit
    (code 2)."""
    if fmt in ("json", "yaml"):
        doc = {"error": "invalid", "message": message}
        typer.echo(_dump(doc, fmt))
        return typer.Exit(2)
    from rich.console import Console  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415

    Console(stderr=True).print(
        Text.assemble(("error:", "red"), " ", message), highlight=False, soft_wrap=True
    )
    return typer.Exit(2)


def warn(message: str) -> None:
    """Print ``warning: message`` to stderr (verbatim)."""
    from rich.console import Console  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415

    Console(stderr=True).print(
        Text.assemble(("warning:", "yellow"), " ", message), highlight=False, soft_wrap=True
    )


def check_number(
    flag: str,
    value: float,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
) -> None:
    """Exit 2 naming ``flag`` unless ``value`` is finite and within the bounds given."""
    wrong = None
    if not math.isfinite(value):
        wrong = "is not a finite number"
    elif minimum is not None and value < minimum:
        wrong = f"is below {minimum:g}"
    elif above is not None and value <= above:
        wrong = f"must be greater than {above:g}"
    elif maximum is not None and value > maximum:
        wrong = f"is above {maximum:g}"
    if wrong is not None:
        low = (
            f"> {above:g}"
            if above is not None
            else f">= {minimum:g}"
            if minimum is not None
            else ""
        )
        high = f"<= {maximum:g}" if maximum is not None else ""
        allowed = " and ".join(x for x in (low, high) if x)
        raise bad_input(
            f"{flag}: {value!r} {wrong}" + (f"; use a value {allowed}" if allowed else "")
        )
