"""Tables that fit the terminal without cutting a key or a number.

A column is a key or a figure (shown whole or not at all: its header may wrap, its cells
never), or prose (wraps at words into the width the others leave). When the columns do not fit,
the least needed are left out, in the order the view gives, and the caption says which:
never a cell ending in "…".
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

Cell = str | Text

#: The narrowest a prose column gets while there are columns left to drop.
PROSE_MIN = 20


@dataclass(frozen=True)
class Column:
    header: str
    justify: Literal["left", "right"] = "left"
    #: 0: always shown; otherwise left out when the table does not fit, highest first.
    drop: int = 0
    #: Prose that wraps at words (a reason, a list of events), not a key or a figure.
    prose: bool = False


def _plain(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def _widest_line(cells: Sequence[Cell]) -> int:
    return max((cell_len(line) for c in cells for line in _plain(c).split("\n")), default=0)


def _widest_word(cells: Sequence[Cell]) -> int:
    return max((cell_len(word) for c in cells for word in _plain(c).split()), default=0)


def _border(columns: int) -> int:
    """A boxed table's width beyond its cells: one space each side of a cell, a rule between
    columns and at both edges."""
    return 3 * columns + 1


def _room(prose: list[int], low: list[int], high: list[int], spare: int) -> dict[int, int]:
    """Share ``spare`` columns between the prose columns: each its widest word, then the rest
    in proportion to what each still lacks for its widest line."""
    room = {i: low[i] for i in prose}
    left = spare - sum(room.values())
    lack = {i: max(high[i] - low[i], 0) for i in prose}
    total = sum(lack.values())
    if left > 0 and total > 0:
        for i in prose:
            room[i] += min(lack[i], left * lack[i] // total)
    return room


def fitted_table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[Cell]],
    width: int,
    title: str | None = None,
    notes: Sequence[str] = (),
) -> Table:
    """``rows`` under ``columns``, at most ``width`` wide; ``notes`` (and the columns left out)
    as the caption."""
    cells = [[row[i] for row in rows] for i in range(len(columns))]
    header_word = [_widest_word([c.header]) for c in columns]
    widest = [_widest_line(col_cells) for col_cells in cells]
    # the least a column takes: a key or a figure whole, prose its longest word
    low = [
        max(_widest_word(col_cells) if c.prose else widest[i], header_word[i], 1)
        for i, (c, col_cells) in enumerate(zip(columns, cells, strict=True))
    ]
    high = [max(widest[i], low[i]) for i in range(len(columns))]
    # while columns can go, prose keeps a readable width
    wanted = [
        max(low[i], min(PROSE_MIN, high[i])) if c.prose else low[i] for i, c in enumerate(columns)
    ]
    shown = list(range(len(columns)))
    while sum(wanted[i] for i in shown) + _border(len(shown)) > width:
        droppable = [i for i in shown if columns[i].drop > 0]
        if not droppable:
            break
        shown.remove(max(droppable, key=lambda i: (columns[i].drop, i)))
    # a column left out early may fit beside the ones kept once a wider one has gone
    for i in sorted(set(range(len(columns))) - set(shown), key=lambda i: columns[i].drop):
        if sum(wanted[j] for j in shown) + wanted[i] + _border(len(shown) + 1) <= width:
            shown = sorted([*shown, i])
    prose = [i for i in shown if columns[i].prose]
    spare = width - _border(len(shown)) - sum(low[i] for i in shown if i not in prose)
    room = _room(prose, low, high, spare)
    table = Table(title=title, title_justify="left", caption_justify="left")
    for i in shown:
        c = columns[i]
        if c.prose:
            table.add_column(c.header, overflow="fold", min_width=low[i], max_width=room[i])
        else:
            table.add_column(
                c.header, justify=c.justify, overflow="fold", min_width=low[i], max_width=low[i]
            )
    for row in rows:
        table.add_row(*(row[i] for i in shown))
    left_out = [columns[i].header for i in range(len(columns)) if i not in shown]
    caption = list(notes)
    if left_out:
        caption.append(f"left out to fit the width: {', '.join(left_out)}")
    if caption:
        table.caption = "\n".join(caption)
    return table


@dataclass(frozen=True)
class FittedTable:
    """A :func:`fitted_table` laid out for the width it is given where it is drawn (a panel's
    inside, an indented block): for tables inside other renderables."""

    columns: Sequence[Column]
    rows: Sequence[Sequence[Cell]]
    title: str | None = None
    notes: Sequence[str] = ()

    def _table(self, width: int) -> Table:
        return fitted_table(self.columns, self.rows, width, self.title, self.notes)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self._table(options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self._table(options.max_width))
