"""The console a command prints its views on: as wide as the terminal, and when standard output
is not a terminal (a pipe, a file) no line padded with spaces to ``COLUMNS``."""

import io
import sys
from typing import IO, TextIO, cast

from rich.console import Console


class _TrimmedLines(io.TextIOBase):
    """Writes through to ``out`` each whole line without its trailing spaces."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._pending = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        lines = (self._pending + text).split("\n")
        self._pending = lines.pop()
        if lines:
            self._out.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self._pending.strip(" "):  # a print that ended without a newline
            self._out.write(self._pending)
            self._pending = ""
        self._out.flush()

    def isatty(self) -> bool:
        return False


def stdout_console(width: int | None = None) -> Console:
    """A console on standard output (``width``: as if the terminal were that wide)."""
    if sys.stdout.isatty():
        return Console(width=width)
    return Console(file=cast(IO[str], _TrimmedLines(sys.stdout)), width=width)
