"""Labelled data in any supported format, read as tagged sentences.

Column files (CoNLL, CoNLL-U) hold tags already; span annotations (span JSONL and its variants,
Label Studio's JSON export, brat folders) hold character spans over documents, which
:mod:`crftag.data.align` puts on tokens as IOB2 tags. Every record of an annotation file is a
document of its own, so a model with document context pools over it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from crftag.data.align import align_document
from crftag.data.annotations import read_annotations
from crftag.data.conll import ColumnSpec, Sentence, detect_format, read_corpus
from crftag.data.paths import is_regular_file
from crftag.errors import CrftagError

__all__ = [
    "ANNOTATION_FORMATS",
    "COLUMN_FORMATS",
    "detect_annotation_format",
    "detect_labelled_format",
    "read_labelled",
]

COLUMN_FORMATS = ("conll", "conllu")
ANNOTATION_FORMATS = ("jsonl", "brat")
WARNINGS_SHOWN = 5  # per file: the rest are counted, not listed


def detect_labelled_format(path: str) -> str:
    """``brat`` for a folder, ``jsonl`` for a ``.jsonl`` or ``.json`` file or one whose first
    character is ``{`` or ``[``, else the column format :func:`detect_format` finds."""
    return detect_annotation_format(path) or detect_format(path)


def detect_annotation_format(path: str) -> str | None:
    """:func:`detect_labelled_format`'s ``brat`` or ``jsonl``, found without reading any line;
    None for anything else."""
    if os.path.isdir(path):
        return "brat"
    if path.endswith((".jsonl", ".json")):
        return "jsonl"
    if path != "-" and _first_character(path) in ("{", "["):
        return "jsonl"
    return None


def _first_character(path: str) -> str:
    if not is_regular_file(path):
        return ""  # a pipe's first bytes, once read, would be lost to the reader
    try:
        with open(path, "rb") as stream:
            head = stream.read(4096).decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    except OSError:
        return ""  # the reader reports the file's problem
    return head[:1]


def read_labelled(
    path: str,
    format: str = "auto",
    word_column: int | None = None,
    tag_column: int | None = None,
    misaligned: str = "error",
    warn: Callable[[str], None] | None = None,
) -> list[Sentence]:
    """All labelled sentences of ``path`` in ``format`` (``auto`` looks at it).

    ``word_column`` and ``tag_column`` place word and tag in a column file (None: the format's
    defaults, :meth:`ColumnSpec.for_format`);
    ``misaligned`` is the policy for spans off token boundaries (:mod:`crftag.data.align`);
    ``warn`` receives warnings (stderr by default). An empty file is an error."""
    if format == "auto":
        format = detect_labelled_format(path)
    if format in COLUMN_FORMATS:
        return read_corpus(path, ColumnSpec.for_format(format, word_column, tag_column))
    if format not in ANNOTATION_FORMATS:
        known = COLUMN_FORMATS + ANNOTATION_FORMATS
        raise ValueError(f"expected a format in {known}, got {format!r}")
    return _read_annotated(path, misaligned, warn or _to_stderr)


def _read_annotated(path: str, misaligned: str, warn: Callable[[str], None]) -> list[Sentence]:
    reported: list[str] = []
    sentences: list[Sentence] = []
    for number, document in enumerate(read_annotations(path), 1):
        aligned = align_document(document, misaligned, reported.append, number)
        sentences.extend(sentence for sentence in aligned.sentences if sentence.tokens)
    for message in reported[:WARNINGS_SHOWN]:
        warn(message)
    if reported:
        warn(
            f"{path}: {len(reported)} span(s) not on token boundaries "
            f"(data.misaligned: {misaligned}; the first {min(len(reported), WARNINGS_SHOWN)} "
            "listed above)"
        )
    if not sentences:
        raise CrftagError(f"{path}: no sentences found (no document with any text?)")
    return sentences


def _to_stderr(message: str) -> None:
    print(f"crftag: warning: {message}", file=sys.stderr)
