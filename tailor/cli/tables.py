"""Print the CLI's rich tables whole, wherever they go.

A terminal wraps a table to its own width. Anywhere else (a pipe, a CI log, a
file written with `--output`) rich assumes 80 columns and cuts names to "inven…";
there the table gets the width it needs instead, so every cell reads in full.
"""

from __future__ import annotations

import io
from typing import TextIO

from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.table import Table

NARROWEST = 80  # a table never needs less; a title still centres on a normal line
UNBOUNDED = 100_000  # width to measure against, so no column is squeezed


def natural_width(table: RenderableType) -> int:
    """Columns the table takes when no cell is cut or wrapped."""
    wide = Console(width=UNBOUNDED)
    return max(NARROWEST, Measurement.get(wide, wide.options, table).maximum)


def print_table(table: RenderableType, file: TextIO | None = None) -> None:
    """Print to `file` (stdout by default): a terminal's width, else the table's own."""
    console = Console(file=file)
    if not console.is_terminal:
        console.file.write(text_of(table))
        return
    console.print(table)


def table_text(table: Table) -> str:
    """The table as plain text at its natural width (for files and `render`)."""
    return text_of(table)


def text_of(renderable: RenderableType, width: int | None = None) -> str:
    """Plain text of a table (or tables): at `width` columns, else at its natural width."""
    buffer = io.StringIO()
    chosen = natural_width(renderable) if width is None else width
    Console(file=buffer, width=chosen, no_color=True).print(renderable)
    # a table pads every line to its width: trailing blanks only lengthen files and diffs
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())
