"""Progress of long work on stderr, on a terminal and in a log file alike.

On a terminal it is a tqdm bar redrawn in place. Elsewhere (``crftag train ... 2> log``, a
batch job) tqdm would turn itself off, and a log would show nothing until the work is done; so
off a terminal the same bar is written as plain lines, one at each tenth of the work and,
once the work has run :data:`LOG_SECONDS` seconds, one at least every :data:`LOG_SECONDS`
seconds, each with the count done, the rate and the time left::

    epoch 2: 41% 310/756 [00:20<00:29, 15.20batch/s, loss=0.412]
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TextIO

from tqdm import tqdm

__all__ = ["LOG_SECONDS", "progress_bar"]

LOG_SECONDS = 10.0  # between two lines in a log: often enough to see work go on, not a flood
_LOG_FORMAT = (
    "{desc}: {percentage:.0f}% {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]"
)
_LOG_FORMAT_UNSIZED = "{desc}: {n_fmt} [{elapsed}, {rate_fmt}{postfix}]"


class _Lines:
    """A text stream that takes what tqdm writes and passes each drawing on as a line of its
    own: tqdm starts each with a carriage return (to draw over the last) and pads it with
    spaces (to blank the rest), which a log file shows as one ever longer line."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        for drawing in text.split("\r"):
            line = drawing.strip()
            if line:
                self.stream.write(line + "\n")
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


class _LogBar(tqdm):
    """A bar whose drawings are log lines: one at each tenth of the total as well as every
    :data:`LOG_SECONDS`, so a short job's log shows it go too; a new postfix or description
    waits for the next line instead of drawing one (a loss set at every step would flood it)."""

    def update(self, n: float = 1) -> bool | None:
        before = self.n
        shown = super().update(n)
        if (
            not shown
            and self.total
            and int(10 * self.n / self.total) > int(10 * before / self.total)
        ):
            self.refresh()
            return True
        return shown

    def set_postfix(self, ordered_dict=None, refresh=True, **values) -> None:
        super().set_postfix(ordered_dict, refresh=False, **values)

    def set_description(self, desc=None, refresh=True) -> None:
        super().set_description(desc, refresh=False)


def progress_bar(
    iterable: Iterable | None = None, *, show: bool, desc: str = "", unit: str = "it", **options
) -> tqdm:
    """A tqdm bar on stderr: drawn in place on a terminal, lines (each tenth, and every
    :data:`LOG_SECONDS` seconds) elsewhere, nothing at all unless ``show``. ``options`` go to
    tqdm (``total``, ``initial``, ``unit_scale``, ``leave``...)."""
    stream = sys.stderr
    if not show:
        return tqdm(iterable, disable=True, **options)
    if getattr(stream, "isatty", lambda: False)():
        return tqdm(iterable, desc=desc, unit=unit, file=stream, disable=False, **options)
    sized = options.get("total") is not None or hasattr(iterable, "__len__")
    return _LogBar(
        iterable,
        desc=desc or "progress",
        unit=unit,
        file=_Lines(stream),
        disable=False,
        mininterval=LOG_SECONDS,
        delay=LOG_SECONDS,  # no line for work done sooner, nor before an error found at once
        ascii=True,
        bar_format=_LOG_FORMAT if sized else _LOG_FORMAT_UNSIZED,
        **options,
    )
