"""Tables for people: a rich table on a terminal, fixed-width text when piped or logged.

Cells arrive as strings, already formatted by the caller, so both renderings show the same
figures. ``rich`` is imported only when a table is drawn on a terminal, so commands start fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

__all__ = ["fixed_width", "is_terminal", "print_table"]


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is an interactive terminal (not a pipe, a file or a test's capture)."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def fixed_width(
    headers: Sequence[str], rows: Sequence[Sequence[str]], widths: Sequence[int] | None = None
) -> str:
    """The header line and one line per row, without a final newline: the first column
    left-aligned and the others right-aligned, each ``widths[i]`` characters wide (by default
    two more than its longest cell, so neighbours stay apart)."""
    if widths is None:
        widths = [
            2 + max(len(str(line[column])) for line in [headers, *rows])
            for column in range(len(headers))
        ]
    return "\n".join(
        f"{line[0]:<{widths[0]}}"
        + "".join(f"{cell:>{width}}" for cell, width in zip(line[1:], widths[1:], strict=True))
        for line in [headers, *rows]
    )


def print_table(
    title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], stream: TextIO
) -> None:
    """Write a table of ``rows`` (each a list of cells, as many as ``headers``) under ``title``
    to ``stream``: drawn with rich when ``stream`` is a terminal, else the title on a line of
    its own and then :func:`fixed_width` text."""
    if not is_terminal(stream):
        stream.write(f"{title}\n{fixed_width(headers, rows)}\n")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table()
    for column, header in enumerate(headers):
        table.add_column(header, justify="left" if column == 0 else "right")
    for row in rows:
        table.add_row(*row)
    # Cells are data, not rich markup: a label such as "[0.5, 0.6)" is printed as it is.
    console = Console(file=stream, markup=False, emoji=False, highlight=False)
    console.print(title, style="bold")  # above the table, not in it: a title as wide as the
    console.print(table)  # terminal is not wrapped to the narrower table
