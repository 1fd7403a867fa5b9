"""Unlabelled text for ``crftag pretrain``: one sentence or document a line, in plain, gzip,
bzip2 or xz files (the compression is read from the file's first bytes)."""

from __future__ import annotations

from crftag.data.vectors import numbered_lines, open_compressed
from crftag.errors import CrftagError, located

__all__ = ["read_text_lines"]


def read_text_lines(paths: list[str]) -> list[str]:
    """The lines of every file in ``paths``, in order, line ends and surrounding white space
    removed and blank lines skipped. A missing file, one with no text, and a line that is not
    UTF-8 are one-line errors naming the file (and the line)."""
    lines: list[str] = []
    for path in paths:
        before = len(lines)
        stream, handle = open_compressed(path, "text file")
        with handle, stream:
            for number, raw in numbered_lines(path, stream):
                try:
                    text = raw.decode("utf-8").strip()
                except UnicodeDecodeError as error:
                    raise located(path, number, f"not valid UTF-8 ({error.reason})") from None
                if text:
                    lines.append(text)
        if len(lines) == before:
            raise CrftagError(f"{path}: no text (the file is empty or blank)")
    return lines
