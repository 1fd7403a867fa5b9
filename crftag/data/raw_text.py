"""Unlabelled text for ``crftag pretrain``: one sentence or document a line, in plain, gzip,
bzip2 or xz files, read by :mod:`crftag.data.lines` (the compression is told from the file's
first bytes). The text is raw, as ``crftag predict`` reads it: a NUL byte is a character."""

from __future__ import annotations

import os

from crftag.data.lines import open_binary, read_lines
from crftag.data.paths import check_regular_file
from crftag.errors import CrftagError

__all__ = ["read_text_lines"]


def read_text_lines(paths: list[str]) -> list[str]:
    """The lines of every file in ``paths``, in order, line ends and surrounding white space
    removed and blank lines skipped. A missing file, one with no text, and a line that is not
    UTF-8 are one-line errors naming the file (and the line); so is a path that is no regular
    file (a FIFO or a device would block the reading, deaf to Ctrl-C and SIGTERM)."""
    lines: list[str] = []
    for path in paths:
        if os.path.lexists(path):
            check_regular_file(path)
        before = len(lines)
        with open_binary(path, "text file") as stream:
            for _, text in read_lines(stream, path, allow_nul=True):
                text = text.strip()
                if text:
                    lines.append(text)
        if len(lines) == before:
            raise CrftagError(f"{path}: no text (the file is empty or blank)")
    return lines
