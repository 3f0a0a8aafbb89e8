"""List the functions longer than a limit, counted from ``def`` to the function's last line.

A decorator's lines are not counted; the docstring is. Usage::

    python scripts/long_functions.py [--max-lines 80] [DIR ...]

With no directory it reads the pure core's ``planning/``, ``scaling/`` and ``simulation/``.
It prints ``path:line name lines`` for each function over the limit, longest first, and exits 1
when there is one.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PURE_CORE_DIRS = tuple(
    ROOT / "operator" / "tokenscale" / package for package in ("planning", "scaling", "simulation")
)
MAX_LINES = 80


@dataclass(frozen=True)
class LongFunction:
    path: Path
    line: int
    name: str
    lines: int


def function_lengths(path: Path) -> list[LongFunction]:
    """Every function and method in one file with its length (nested ones included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            end = node.end_lineno if node.end_lineno is not None else node.lineno
            found.append(LongFunction(path, node.lineno, node.name, end - node.lineno + 1))
    return found


def long_functions(dirs: tuple[Path, ...], max_lines: int = MAX_LINES) -> list[LongFunction]:
    """The functions over ``max_lines`` under ``dirs``, longest first."""
    over = [
        function
        for directory in dirs
        for path in sorted(directory.rglob("*.py"))
        for function in function_lengths(path)
        if function.lines > max_lines
    ]
    return sorted(over, key=lambda function: (-function.lines, str(function.path), function.line))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "dirs", nargs="*", type=Path, help="directories to read (default: the pure core's)"
    )
    parser.add_argument("--max-lines", type=int, default=MAX_LINES)
    args = parser.parse_args(argv)
    dirs = tuple(args.dirs) or PURE_CORE_DIRS
    over = long_functions(dirs, args.max_lines)
    for function in over:
        shown = (
            function.path.relative_to(ROOT) if function.path.is_relative_to(ROOT) else function.path
        )
        print(f"{shown}:{function.line} {function.name} {function.lines}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
