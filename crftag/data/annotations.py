"""Character-span annotations: span JSONL (and the doccano, spaCy and Prodigy variants), Label
Studio's JSON export and brat folders, read into :class:`Document` objects and written back.

Offsets are Python string indices (Unicode code points), end exclusive, as all these tools count
them. Nothing here tokenizes or tags: :mod:`crftag.data.align` puts spans on tokens.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from crftag.data.conll import open_binary, read_lines, shown, source_name
from crftag.data.jsonl import json_line
from crftag.data.label_studio import label_studio_records
from crftag.data.labels import check_label
from crftag.data.paths import check_regular_file
from crftag.errors import CrftagError, json_mistake, located

__all__ = [
    "CharSpan",
    "Document",
    "brat_names",
    "check_overlaps",
    "format_span_jsonl",
    "read_annotations",
    "read_brat",
    "read_document_text",
    "read_label_studio",
    "read_span_jsonl",
    "write_brat",
]

# The most one document may hold, a line of span JSONL or a whole text file (a bound on memory:
# a file without line breaks, such as /dev/zero, is refused after it); and the most a Label
# Studio export, one JSON array of documents read whole, may hold.
MAX_DOCUMENT_BYTES = 64 << 20
MAX_EXPORT_BYTES = 256 << 20

_SPAN_KEYS = ("spans", "entities", "label")


@dataclass(frozen=True, order=True)
class CharSpan:
    """Characters ``start`` to ``end`` (exclusive) of a document's text, labelled ``label``."""

    start: int
    end: int
    label: str


@dataclass(frozen=True)
class Document:
    """One annotated document.

    text           the text, exactly as in the file
    spans          the annotated spans, sorted by (start, end)
    tokens         the record's own tokens, when it gave them; else None (the text is tokenized)
    token_offsets  the tokens' [start, end) offsets, when the record gave them
    tags           per-token tags (part of speech) given with ``tokens`` instead of spans
    source, line   where the record is: file name and 1-based line (None for brat, Label Studio)
    id             the document's id where it has one (brat file stem, Label Studio task id)
    extra          the record's other keys, written back as they were
    """

    text: str
    spans: tuple[CharSpan, ...]
    tokens: tuple[str, ...] | None = None
    token_offsets: tuple[tuple[int, int], ...] | None = None
    tags: tuple[str, ...] | None = None
    source: str = ""
    line: int | None = None
    id: str | None = None
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def where(self) -> str:
        """``file:line``, or ``file (document ID)``, for messages."""
        if self.line is not None:
            return f"{self.source}:{self.line}"
        return f"{self.source} (document {self.id})" if self.id is not None else self.source


def read_annotations(path: str) -> Iterator[Document]:
    """The documents of ``path``: a brat folder, a Label Studio export (a ``.json`` file that
    holds an array), or span JSONL (``-`` is stdin)."""
    if path != "-" and os.path.isdir(path):
        yield from read_brat(path)
        return
    with open_binary(path) as stream:
        if path.endswith(".json") and stream.peek(4096).lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"[":
            yield from read_label_studio(stream, source_name(path))
        else:
            yield from read_span_jsonl(stream, source_name(path))


def read_span_jsonl(stream: BinaryIO, source: str) -> Iterator[Document]:
    """One document per non-blank line of a JSON lines stream."""
    for number, line in read_lines(stream, source, max_bytes=MAX_DOCUMENT_BYTES):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as error:  # a JSONDecodeError, or an integer too long to convert
            raise located(source, number, f"not valid JSON ({json_mistake(error)})") from None
        yield _record_document(record, source, number)


def _record_document(record, source: str, line: int | None, id=None) -> Document:
    where = f"{source}:{line}" if line is not None else f"{source} (document {id})"
    if not isinstance(record, dict):
        raise CrftagError(f"{where}: expected a JSON object, got {type(record).__name__}")
    given = [key for key in _SPAN_KEYS if key in record]
    if len(given) > 1:
        raise CrftagError(f"{where}: give the spans once, not as {' and '.join(given)}")
    tokens, offsets = _tokens(record.get("tokens"), where)
    text = record.get("text")
    if text is None and tokens is not None and offsets is None:
        text = " ".join(tokens)
    if not isinstance(text, str):
        raise CrftagError(
            f'{where}: expected "text" to be a string'
            + (', or "tokens" a list of strings' if "tokens" not in record else "")
        )
    if offsets is not None:
        _check_token_offsets(tokens, offsets, text, where)
    spans = tuple(sorted(_spans(record.get(given[0]) if given else [], text, offsets, where)))
    tags = _tags(record.get("tags"), tokens, where)
    used = {"text", "tokens", "tags", *given}
    extra = {key: value for key, value in record.items() if key not in used}
    identifier = record.get("id", id)
    return Document(
        text,
        spans,
        tokens,
        offsets,
        tags,
        source,
        line,
        None if identifier is None else str(identifier),
        extra,
    )


def _tokens(value, where: str):
    if value is None:
        return None, None
    if not isinstance(value, list):
        raise CrftagError(f'{where}: expected "tokens" to be a list')
    if all(isinstance(token, str) for token in value):
        return tuple(value), None
    if not all(isinstance(token, dict) for token in value):
        raise CrftagError(f'{where}: expected "tokens" to be strings or objects with "text"')
    tokens, offsets = [], []
    for number, token in enumerate(value):
        text, start, end = token.get("text"), token.get("start"), token.get("end")
        if not isinstance(text, str) or not _is_int(start) or not _is_int(end):
            raise CrftagError(f'{where}: token {number} needs "text", "start" and "end"')
        tokens.append(text)
        offsets.append((start, end))
    return tuple(tokens), tuple(offsets)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_token_offsets(tokens, offsets, text: str, where: str) -> None:
    """Each token's text is the text at its offsets, and the tokens are in text order."""
    previous_end = 0
    for number, (token, (start, end)) in enumerate(zip(tokens, offsets, strict=True)):
        if not previous_end <= start < end <= len(text):
            raise CrftagError(
                f"{where}: token {number} [{start}, {end}) is not within the text after the "
                f"token before it (0 <= start < end <= {len(text)}, in text order)"
            )
        _check_covered(token, text, start, end, f"{where}: token {number}")
        previous_end = end


def _check_covered(given, text: str, start: int, end: int, where: str) -> None:
    """A one-line error if a record's own copy of ``text[start:end]`` differs from it."""
    if given is not None and given != text[start:end]:
        raise CrftagError(
            f"{where}: the text {shown(given) if isinstance(given, str) else repr(given)} is not "
            f"the text's [{start}, {end}) {shown(text[start:end])}"
        )


def _spans(value, text: str, offsets, where: str) -> Iterator[CharSpan]:
    if not isinstance(value, list):
        raise CrftagError(f"{where}: expected the spans to be a list")
    for item in value:
        if isinstance(item, list | tuple) and len(item) == 3:
            start, end, label = item
        elif isinstance(item, dict):
            start = item.get("start", item.get("start_offset"))
            end = item.get("end", item.get("end_offset"))
            label = item.get("label")
        else:
            raise CrftagError(f"{where}: a span {item!r} is not [start, end, label] or an object")
        if not (_is_int(start) and _is_int(end)) or not 0 <= start < end <= len(text):
            raise CrftagError(
                f"{where}: span [{start!r}, {end!r}) is not 0 <= start < end <= {len(text)} "
                "(the text's length)"
            )
        if not isinstance(label, str) or not label:
            raise CrftagError(f"{where}: span [{start}, {end}) has no label")
        if isinstance(item, dict):
            _check_covered(item.get("text"), text, start, end, f"{where}: span [{start}, {end})")
            _check_token_indices(item, start, end, offsets, where)
        yield CharSpan(start, end, label)


def _check_token_indices(span: dict, start: int, end: int, offsets, where: str) -> None:
    """A Prodigy span's ``token_start`` and ``token_end`` (inclusive) name the tokens whose
    offsets are the span's own, where the record's tokens have offsets."""
    first, last = span.get("token_start"), span.get("token_end")
    if offsets is None or (first is None and last is None):
        return
    if not (_is_int(first) and _is_int(last)):
        raise CrftagError(
            f'{where}: span [{start}, {end}): expected "token_start" and "token_end" to be '
            f"token numbers, got {first!r} and {last!r}"
        )
    if not (0 <= first <= last < len(offsets)) or (offsets[first][0], offsets[last][1]) != (
        start,
        end,
    ):
        raise CrftagError(
            f"{where}: span [{start}, {end}) is not tokens {first} to {last} of the record "
            f"({len(offsets)} tokens)"
        )


def _tags(value, tokens, where: str):
    if value is None:
        return None
    if tokens is None or not isinstance(value, list) or len(value) != len(tokens):
        raise CrftagError(f'{where}: "tags" needs "tokens" and one tag per token')
    if not all(isinstance(tag, str) and tag for tag in value):
        raise CrftagError(f"{where}: every tag must be a non-empty string")
    return tuple(value)


def read_label_studio(stream: BinaryIO, source: str) -> Iterator[Document]:
    """The tasks of a Label Studio JSON export (:mod:`crftag.data.label_studio`), each named
    by the line it starts on."""
    data = _read_bounded(stream, source, MAX_EXPORT_BYTES, "a Label Studio export")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise located(source, data[: error.start].count(b"\n") + 1, "not valid UTF-8") from None
    for record, identifier, line in label_studio_records(text, source):
        yield _record_document(record, source, line, identifier)


def check_overlaps(document: Document) -> None:
    """An error naming both spans if any two spans overlap or nest."""
    for before, after in zip(document.spans, document.spans[1:], strict=False):
        if after.start < before.end:
            raise CrftagError(
                f"{document.where()}: spans {_described(before, document)} and "
                f"{_described(after, document)} overlap; a linear-chain CRF gives each token one "
                "tag, so it cannot represent overlapping or nested spans"
            )


def _described(span: CharSpan, document: Document) -> str:
    return f"[{span.start}, {span.end}) {span.label} {shown(document.text[span.start : span.end])}"


def format_span_jsonl(document: Document) -> str:
    """One span JSONL line: ``text``, ``spans``, ``tokens`` and ``tags`` if any, other keys."""
    record: dict = {"text": document.text}
    record["spans"] = [{"start": s.start, "end": s.end, "label": s.label} for s in document.spans]
    if document.tokens is not None:
        record["tokens"] = list(document.tokens)
    if document.tags is not None:
        record["tags"] = list(document.tags)
    record.update(document.extra)
    return json_line(record)


def read_brat(folder: str) -> Iterator[Document]:
    """Every ``NAME.txt`` of a brat folder with the ``T`` spans of its ``NAME.ann``, sorted by
    name. brat writes an ``.ann`` for every document (empty when it has no spans), so a missing
    one is an error, as is a folder without any. Relations, events, attributes and notes are not
    spans and are passed over; a discontinuous span is an error."""
    for name in brat_names(folder):
        path = os.path.join(folder, name + ".txt")
        with open(path, "rb") as stream:
            text = read_document_text(stream, path)
        annotation = os.path.join(folder, name + ".ann")
        yield Document(
            text, tuple(sorted(_brat_spans(annotation, text))), source=annotation, id=name
        )


def brat_names(folder: str) -> list[str]:
    """The NAME of each ``NAME.txt`` and ``NAME.ann`` pair of a brat folder, sorted; an error
    for a folder without any, a file without its pair, or one that is not a regular file."""
    try:
        entries = os.listdir(folder)
    except OSError as error:
        raise CrftagError(f"{folder}: cannot list the folder ({error.strerror})") from None
    names = sorted(n[:-4] for n in entries if n.endswith(".txt"))
    annotated = sorted(n[:-4] for n in entries if n.endswith(".ann"))
    if not annotated:
        raise CrftagError(f"{folder}: is a directory, and holds no brat .ann files")
    for name in sorted(set(names) ^ set(annotated)):
        have, lacking = ("ann", "txt") if name in annotated else ("txt", "ann")
        raise CrftagError(
            f"{os.path.join(folder, name)}.{have}: no {name}.{lacking} beside it (brat keeps "
            "a .txt and an .ann, empty if need be, for every document)"
        )
    for name in names:
        check_regular_file(os.path.join(folder, name + ".txt"))
        check_regular_file(os.path.join(folder, name + ".ann"))
    return names


def read_document_text(stream: BinaryIO, source: str) -> str:
    """The whole of ``stream`` as one document's text: UTF-8, exactly as in the file (line ends
    and a byte-order mark included), at most ``MAX_DOCUMENT_BYTES``."""
    data = _read_bounded(stream, source, MAX_DOCUMENT_BYTES, "a document")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise located(source, line, "not valid UTF-8") from None


def _read_bounded(stream: BinaryIO, source: str, limit: int, what: str) -> bytes:
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise CrftagError(f"{source}: longer than {limit} bytes, the most {what} may hold")
    return data


def _brat_spans(path: str, text: str) -> list[CharSpan]:
    spans = []
    with open(path, "rb") as stream:
        for number, line in read_lines(stream, path, allow_nul=True):
            if not line.startswith("T"):
                continue
            fields = line.split("\t", 2)
            kind = fields[1].split(" ") if len(fields) == 3 else []
            if len(kind) != 3 or ";" in fields[1]:
                problem = (
                    "a discontinuous span, which no tag sequence can say"
                    if ";" in line
                    else f"expected 'ID<TAB>LABEL START END<TAB>TEXT', got {shown(line)}"
                )
                raise located(path, number, problem)
            label, start, end = kind[0], kind[1], kind[2]
            check_label(label, f"{path}:{number}")
            # ASCII digits: str.isdigit also takes superscripts, which int() refuses.
            digits = all(value.isascii() and value.isdigit() for value in (start, end))
            if not digits or not 0 <= int(start) < int(end) <= len(text):
                offsets = shown(f"{start} {end}")
                raise located(path, number, f"offsets {offsets} are not within the text")
            if _one_line(text[int(start) : int(end)]) != _one_line(fields[2]):
                raise located(
                    path,
                    number,
                    f"the text {shown(fields[2])} is not the text's [{start}, {end}) "
                    f"{shown(text[int(start) : int(end)])}",
                )
            spans.append(CharSpan(int(start), int(end), label))
    return spans


def write_brat(folder: str, name: str, document: Document) -> None:
    """``NAME.txt`` (the text exactly) and ``NAME.ann`` (a ``T`` line per span) in ``folder``;
    a label that a brat type cannot hold is an error, before anything is written."""
    for label in {span.label for span in document.spans}:
        check_label(label, document.where())
    with open(os.path.join(folder, name + ".txt"), "w", encoding="utf-8", newline="") as stream:
        stream.write(document.text)
    with open(os.path.join(folder, name + ".ann"), "w", encoding="utf-8", newline="") as stream:
        for number, span in enumerate(document.spans, 1):
            covered = _one_line(document.text[span.start : span.end])
            stream.write(f"T{number}\t{span.label} {span.start} {span.end}\t{covered}\n")


def _one_line(text: str) -> str:
    """A span's text as an ``.ann`` line can hold it: line breaks and tabs as spaces."""
    return "".join(
        " " if character in "\t\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029" else character
        for character in text
    )
