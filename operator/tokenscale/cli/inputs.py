"""Reading the CLI's input files, the table/JSON choice, and how a bad input ends a command
(exit 2, the message on stderr)."""

import enum
import sys
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console

from tokenscale.api.errors import SpecError


def fail_invalid(err: SpecError, file: Path) -> NoReturn:
    """Print every field path and fix of an invalid InferenceService, then exit 2."""
    console = Console(stderr=True)
    console.print(f"[red]error:[/] {file} is not a valid InferenceService:", highlight=False)
    for issue in err.issues:
        console.print(f"  {issue.path}: {issue.message}", highlight=False, markup=False)
    raise typer.Exit(2)


def read_input(file: Path) -> str:
    """A file's text, or standard input for ``-``; an unreadable file exits 2."""
    try:
        return sys.stdin.read() if str(file) == "-" else file.read_text()
    except OSError as exc:
        Console(stderr=True).print(f"[red]error:[/] cannot read {file}: {exc.strerror}")
        raise typer.Exit(2) from exc


class TableOrJson(enum.StrEnum):
    table = "table"
    json = "json"


def bad_input(message: str) -> typer.Exit:
    """Print ``error: message`` to stderr; raise the returned Exit (code 2)."""
    Console(stderr=True).print(f"[red]error:[/] {message}", highlight=False, markup=False)
    return typer.Exit(2)
