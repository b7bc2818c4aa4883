"""Terminal tables as plain text, laid out by `rich.table` (the summary, ``atom history``).

Columns two spaces apart, no border and no colour, so the lines read the same in a terminal,
a CI log and a test's output. Cells are text, never rich markup (``calc[case-1]`` stays).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from rich.console import Console
from rich.table import Table
from rich.text import Text

#: Wide enough that no row wraps: a table's width is its widest row.
_WIDTH = 100_000
#: Stands in for a cell's trailing blanks while rich lays it out (rich measures a cell
#: without them; the summary pads a figure so that it lines up with ``4570 recalled``).
_BLANK = "\ue000"


def _cell(text: str) -> Text:
    kept = text.rstrip(" ")
    return Text(kept + _BLANK * (len(text) - len(kept)))


def table_lines(
    header: Sequence[str],
    rows: Iterable[Sequence[str]],
    right: Iterable[int] = (),
) -> list[str]:
    """`header` and `rows` as aligned lines; columns at the indexes in `right` to the right."""
    figures = set(right)
    table = Table(box=None, pad_edge=False, padding=(0, 1), header_style="", show_edge=False)
    for i, name in enumerate(header):
        justify: Literal["left", "right"] = "right" if i in figures else "left"
        table.add_column(_cell(name), justify=justify, no_wrap=True)
    for row in rows:
        table.add_row(*(_cell(cell) for cell in row))
    console = Console(width=_WIDTH, color_system=None, highlight=False, emoji=False)
    with console.capture() as captured:
        console.print(table)
    return [line.replace(_BLANK, " ").rstrip() for line in captured.get().splitlines()]
