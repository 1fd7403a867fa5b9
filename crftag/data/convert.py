"""Labelled data from one format to another, a sentence or a document at a time.

Column files (CoNLL in IOB1, IOB2 or BIOES, CoNLL-U) and span annotations (span JSONL, brat)
meet in two shapes: a column sentence has a tag per token, an annotated document has character
spans over its text. Column data becomes a document per CoNLL document (the sentences after a
``-DOCSTART-`` line, or after a CoNLL-U ``# newdoc``), its text the tokens joined by single spaces
and its sentences by line breaks, with the tokens listed, so it comes back as the same tokens
and sentences. A sentence before any document marker is a document of its own, and is marked
``"docstart": false`` so that writing it back as CoNLL adds no marker the original did not have.

Chunks are read by conlleval's rules whatever the input scheme, so IOB1, IOB2 and BIOES all read
the same; tags that are not spans (part of speech) are kept as they are, as ``tags`` in JSONL.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO

from crftag.data.align import align_document
from crftag.data.annotations import (
    CharSpan,
    Document,
    format_span_jsonl,
    read_annotations,
    write_brat,
)
from crftag.data.atomic import atomic_folder
from crftag.data.conll import ColumnSpec, Sentence, open_binary, read_columns
from crftag.data.labelled import COLUMN_FORMATS
from crftag.data.labels import check_conllu_form
from crftag.data.partial import has_unknown, in_scheme
from crftag.data.schemes import from_spans, is_span_tagset, to_spans
from crftag.errors import CrftagError, located

__all__ = [
    "CONVERT_FORMATS",
    "read_documents_of",
    "output_format_of",
    "sentences_to_documents",
    "write_brat_folder",
    "write_columns",
    "write_documents",
    "write_span_jsonl",
]

CONVERT_FORMATS = ("conll", "conllu", "jsonl", "brat")
DOCSTART_KEY = "docstart"


def read_column_sentences(path: str, spec: ColumnSpec) -> Iterator[Sentence]:
    """The sentences of a column file with document markers as empty sentences, lazily."""
    with open_binary(path) as stream:
        source = "<stdin>" if path == "-" else path
        yield from read_columns(stream, source, spec, keep_raw=True, keep_markup=True)


def sentences_to_documents(sentences: Iterable[Sentence], source: str) -> Iterator[Document]:
    """Column sentences grouped into documents by their document number (the markers before
    them), each document holding its tokens and its spans or tags."""
    kind = _TagKind(source)
    pending: list[Sentence] = []
    for sentence in sentences:
        if not sentence.tokens:
            continue  # a marker block: the document numbers say where documents start
        if pending and sentence.document != pending[-1].document:
            yield _document(pending, kind, source, marked=True)
            pending = []
        if sentence.document == 0:
            yield _document([sentence], kind, source, marked=False)
        else:
            pending.append(sentence)
    if pending:
        yield _document(pending, kind, source, marked=True)


class _TagKind:
    """Whether a file's tags are spans, decided by the first sentence with a tag other than O,
    then held to: a file is one or the other."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.spans: bool | None = None

    def check(self, sentence: Sentence) -> bool:
        tags = sentence.tags or ()
        span_tags = is_span_tagset(tags)
        if self.spans is None and any(tag != "O" for tag in tags):
            self.spans = span_tags
        if self.spans and not span_tags:
            bad = next(tag for tag in tags if not is_span_tagset([tag]))
            raise located(
                self.source, sentence.line, f"tag {bad!r} is not a span tag, as earlier tags were"
            )
        return self.spans is not False


def _document(sentences: list[Sentence], kind: _TagKind, source: str, marked: bool) -> Document:
    lines, spans, tags, tokens = [], [], [], []
    position = 0
    for sentence in sentences:
        starts = []
        for token in sentence.tokens:
            starts.append(position)
            position += len(token) + 1  # the space after it, or the line break after the last
        lines.append(" ".join(sentence.tokens))
        tokens.extend(sentence.tokens)
        if kind.check(sentence):
            spans.extend(
                CharSpan(
                    starts[s.start], starts[s.end - 1] + len(sentence.tokens[s.end - 1]), s.label
                )
                for s in to_spans(sentence.tags)
            )
        else:
            tags.extend(sentence.tags)
    return Document(
        text="\n".join(lines),
        spans=tuple(spans),
        tokens=tuple(tokens),
        tags=tuple(tags) if kind.spans is False else None,
        source=source,
        line=sentences[0].line,
        extra={} if marked else {DOCSTART_KEY: False},
    )


def read_documents_of(path: str, input_format: str, spec: ColumnSpec) -> Iterator[Document]:
    """The documents of ``path`` (``-``: stdin) in ``input_format``, lazily."""
    if input_format in COLUMN_FORMATS:
        return sentences_to_documents(read_column_sentences(path, spec), path)
    return read_annotations(path)


def write_columns(
    documents: Iterable[Document],
    output: TextIO,
    output_format: str,
    scheme: str,
    *,
    tag_column: int = 3,
    misaligned: str = "error",
    warn: Callable[[str], None] | None = None,
) -> None:
    """Documents as CoNLL (``word tag`` lines, a ``-DOCSTART- O`` line before each document that
    is one) or CoNLL-U (the tag in column ``tag_column``, ``# newdoc`` before each document),
    span tags written in ``scheme``; spans are put on tokens as training does
    (:func:`crftag.data.align.align_document`, with ``misaligned`` and ``warn``)."""
    for document in documents:
        sentences = align_document(document, misaligned, warn).sentences
        if document.extra.get(DOCSTART_KEY, True):
            output.write("-DOCSTART- O\n\n" if output_format == "conll" else "# newdoc\n")
        for sentence in sentences:
            tags = _tags_in(sentence, document, scheme)
            if output_format == "conll":
                _check_tokens(sentence, document)
                output.write(
                    "".join(f"{w} {t}\n" for w, t in zip(sentence.tokens, tags, strict=True))
                )
            else:
                for token in sentence.tokens:
                    check_conllu_form(token, document.where())
                output.write(_conllu_block(sentence.tokens, tags, tag_column))
            output.write("\n")


def _tags_in(sentence: Sentence, document: Document, scheme: str) -> list[str]:
    if document.tags is not None:
        return list(sentence.tags)
    if has_unknown(sentence.tags):  # a region left undecided: docs/partial-labels.md
        return in_scheme(sentence.tags, scheme)
    return from_spans(to_spans(sentence.tags), len(sentence.tokens), scheme)


def _check_tokens(sentence: Sentence, document: Document) -> None:
    for token in sentence.tokens:
        if any(character.isspace() for character in token):
            raise CrftagError(
                f"{document.where()}: token {token!r} holds white space, which a CoNLL line "
                "cannot; write CoNLL-U or JSONL instead"
            )


def _conllu_block(tokens: tuple[str, ...], tags: list[str], tag_column: int) -> str:
    rows = []
    for number, (token, tag) in enumerate(zip(tokens, tags, strict=True), 1):
        fields = [str(number), token] + ["_"] * 8
        fields[tag_column] = tag
        rows.append("\t".join(fields) + "\n")
    return "".join(rows)


def write_span_jsonl(documents: Iterable[Document], output: TextIO) -> None:
    """Documents as span JSONL, one per line."""
    for document in documents:
        output.write(format_span_jsonl(document))


def write_brat_folder(documents: Iterable[Document], folder: str) -> int:
    """Documents as ``NAME.txt`` and ``NAME.ann`` pairs in ``folder`` (made if missing), named by
    each document's id where it has a usable one, else by its number; return the count. The
    files are moved into place once every document is written (:func:`atomic_folder`), so a
    bad document leaves nothing behind."""
    count = 0
    used: set[str] = set()
    with atomic_folder(folder) as partial:
        for count, document in enumerate(documents, 1):
            name = _file_name(document.id) or f"{count:06d}"
            if name in used:
                name = f"{name}-{count:06d}"
            used.add(name)
            write_brat(partial, name, document)
    return count


def _file_name(identifier: str | None) -> str | None:
    """A document id as a file name: letters, digits, ``-``, ``_`` and ``.`` kept."""
    if not identifier:
        return None
    name = re.sub(r"[^\w.-]", "_", identifier).strip(".")
    return name[:100] or None


def output_format_of(path: str) -> str:
    """The format an output path asks for: ``jsonl`` for ``.jsonl``/``.json``, ``conllu`` for
    ``.conllu``, ``brat`` for an existing folder or a path ending in ``/``, else ``conll``."""
    if path.endswith((".jsonl", ".json")):
        return "jsonl"
    if path.endswith(".conllu"):
        return "conllu"
    if path != "-" and (os.path.isdir(path) or path.endswith(os.sep)):
        return "brat"
    return "conll"


def write_documents(
    documents: Iterable[Document],
    output: TextIO,
    output_format: str,
    scheme: str,
    misaligned: str = "error",
    warn: Callable[[str], None] | None = None,
) -> None:
    """Documents to a text stream in a line format (``conll``, ``conllu`` or ``jsonl``)."""
    if output_format == "jsonl":
        write_span_jsonl(documents, output)
    else:
        write_columns(documents, output, output_format, scheme, misaligned=misaligned, warn=warn)
