"""The one exception type for user mistakes.

A :class:`CrftagError` is something the user can fix (a bad file, config or option). The CLI prints
it as one line ``crftag: error: ...`` and exits non-zero; anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

import json
import sys


class CrftagError(Exception):
    """A user mistake, reported as one line without a traceback."""

    exit_code = 2


def located(source: str, line: int | None, message: str) -> CrftagError:
    """An error about ``source`` (a file name, or ``<stdin>``) at a 1-based ``line``."""
    where = f"{source}:{line}" if line is not None else source
    return CrftagError(f"{where}: {message}")


class TrainingInterrupted(Exception):
    """Training stopped on a signal after writing a resumable checkpoint; exits 128 + signal."""

    def __init__(self, signal_number: int, message: str) -> None:
        super().__init__(message)
        self.exit_code = 128 + signal_number


def json_mistake(error: ValueError) -> str:
    """What is wrong with JSON text that :func:`json.loads` refused, for a one-line message:
    the parser's reason, or the one other ``ValueError`` it raises, Python's limit on the
    digits of an integer (which it would otherwise spell as a suggestion to raise the limit)."""
    if isinstance(error, json.JSONDecodeError):
        return error.msg
    return f"an integer of more than {sys.get_int_max_str_digits()} digits"
