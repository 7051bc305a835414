"""How every check of the canonical tables reports a bad cell: source, 1-based row, column.

Kept apart from `schema` so that the modules it relies on (timestamp parsing) can
raise the same error without importing it in a circle.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


class DataFormatError(ValueError):
    """Input that does not follow the canonical format, located by source, row and column."""

    def __init__(
        self,
        source: str,
        problem: str,
        row: int | None = None,
        column: str | None = None,
        line: int | None = None,
    ) -> None:
        self.source = source
        self.row = row
        self.column = column
        self.problem = problem
        self.line = line  # of a text file: where an editor finds the row
        where = ", ".join(
            part
            for part in (
                f"row {row}" if row is not None else "",
                f"column '{column}'" if column is not None else "",
            )
            if part
        )
        text = f"{source}: {where}: {problem}" if where else f"{source}: {problem}"
        super().__init__(text if line is None else f"{text} (file line {line})")

    def at_line(self, line: int) -> DataFormatError:
        """The same error, also naming the file line its data row starts on."""
        return DataFormatError(self.source, self.problem, self.row, self.column, line)

    def __reduce__(
        self,
    ) -> tuple[type[DataFormatError], tuple[str, str, int | None, str | None, int | None]]:
        """Survive pickling (errors raised in worker processes cross back to the parent)."""
        return (type(self), (self.source, self.problem, self.row, self.column, self.line))


def fail_at(source: str, column: str, bad: np.ndarray, problem: str | Callable[[int], str]) -> None:
    """Raise for the first True in `bad` (rows are 1-based data rows); a callable
    `problem` words the message from that first bad position."""
    hits = np.flatnonzero(bad)
    if hits.size:
        first = int(hits[0])
        text = problem if isinstance(problem, str) else problem(first)
        raise DataFormatError(source, text, row=first + 1, column=column)
