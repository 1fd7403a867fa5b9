"""The one check every command that writes a file makes before it reads anything: none of
the files it would write is one of its inputs, as the file system sees them (through links,
symbolic or hard), so that ``crftag select -o pool.txt pool.txt`` cannot replace its pool."""

from __future__ import annotations

import os
from collections.abc import Iterable

from crftag.errors import CrftagError

__all__ = ["refuse_input_as_output"]


def refuse_input_as_output(outputs: Iterable[str | None], inputs: Iterable[str | None]) -> None:
    """A one-line error if a path of ``outputs`` is the same file (or folder) as one of
    ``inputs``. None and ``-`` (the standard streams) are passed over, and so is a path that
    does not exist yet: it cannot be an input."""
    existing_inputs = [path for path in inputs if _exists(path)]
    for output in outputs:
        if not _exists(output):
            continue
        for path in existing_inputs:
            if _same_file(output, path):
                what = (
                    "both an input and the output"
                    if os.path.abspath(path) == os.path.abspath(output)
                    else f"the output, and the same file as the input {path}"
                )
                raise CrftagError(
                    f"{output}: {what}; writing it would replace the input: give another output"
                )


def _exists(path: str | None) -> bool:
    return path is not None and path != "-" and os.path.exists(path)


def _same_file(first: str, second: str) -> bool:
    try:
        return os.path.samefile(first, second)
    except OSError:  # gone, or not ours to look at, since it was listed: not the same
        return False
