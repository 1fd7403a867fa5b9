"""Reading and writing column files: CoNLL-2003, two-column ``word tag`` files and CoNLL-U.

Everything streams: readers are generators over the lines of a binary file, so a corpus of any size
or an endless stdin is read one sentence at a time. The lines are read by :mod:`crftag.data.lines`
(UTF-8 with or without a BOM, gzip, bzip2 or xz told from the bytes, NUL and line-length checks);
a line with the wrong number of columns is also an error naming the file and line.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

from crftag.data.labels import label_problem
from crftag.data.lines import decoded_lines, open_binary, read_lines
from crftag.data.paths import is_regular_file
from crftag.errors import CrftagError, located

__all__ = [
    "ColumnSpec",
    "Sentence",
    "detect_format",
    "document_key",
    "document_keys",
    "format_conll_block",
    "open_binary",  # crftag.data.lines's, where readers of column files find it
    "read_columns",
    "read_corpus",
    "read_lines",  # crftag.data.lines's
    "shown",
    "source_name",
]

DOCSTART = "-DOCSTART-"
CONLLU_COLUMNS = 10
# CoNLL-U IDs in ASCII digits (str.isdigit also takes superscripts and other scripts' digits): a
# word, or a multiword-token range (3-4) or an empty node (5.1), which are not words.
_CONLLU_WORD_ID = re.compile(r"[0-9]+")
_CONLLU_OTHER_ID = re.compile(r"[0-9]+-[0-9]+|[0-9]+\.[0-9]+")
SHOWN_CHARACTERS = 60  # of a line quoted in an error
SHOWN_CODE_POINTS = 5  # invisible characters of a quoted line named by code point


@dataclass(frozen=True)
class ColumnSpec:
    """Which columns hold the word and the tag, and how the file is laid out.

    ``format`` is ``conll`` (whitespace- or tab-separated columns, ``-DOCSTART-`` lines skipped) or
    ``conllu`` (10 tab-separated columns, ``#`` comments; multiword-token ranges and empty nodes are
    not words). Column indices are 0-based and may be negative (``-1`` is the last column).
    """

    format: str = "conll"
    word_column: int = 0
    tag_column: int | None = -1

    @classmethod
    def for_format(
        cls, format: str, word_column: int | None = None, tag_column: int | None = None
    ) -> ColumnSpec:
        """Defaults per format: first and last column for CoNLL, FORM and UPOS for CoNLL-U."""
        if format == "conllu":
            word = 1 if word_column is None else word_column
            tag = 3 if tag_column is None else tag_column
        else:
            word = 0 if word_column is None else word_column
            tag = -1 if tag_column is None else tag_column
        return cls(format=format, word_column=word, tag_column=tag)


@dataclass(frozen=True)
class Sentence:
    """One sentence of a column file.

    tokens      the words, exactly as in the file
    tags        the tags when a tag column was read, else None
    line        1-based line number of the sentence's first line
    raw         the sentence's original lines, without line ends (comments, ``-DOCSTART-`` and
                CoNLL-U range lines included) so that predict can write them back unchanged
    token_rows  for each token, the index in ``raw`` of its line
    document    which document of the file the sentence is in: the number of document markers
                (CoNLL ``-DOCSTART-`` lines, CoNLL-U ``# newdoc`` comments) before it
    """

    tokens: tuple[str, ...]
    tags: tuple[str, ...] | None
    line: int
    raw: tuple[str, ...] = ()
    token_rows: tuple[int, ...] = ()
    document: int = 0


def document_key(sentence: Sentence, source: Hashable, own: Hashable) -> Hashable:
    """The key of a sentence's document: a file's ``-DOCSTART-`` (or ``# newdoc``) markers start
    documents, and a sentence before the first marker, as in a file with none, is a document of
    its own, told apart by ``own`` (unique within the file). ``source`` tells files apart."""
    return (source, sentence.document) if sentence.document else (source, "own", own)


def document_keys(sentences: Sequence[Sentence], source: Hashable = None) -> list[Hashable]:
    """One key per sentence (:func:`document_key`), equal for the sentences of one document."""
    return [document_key(sentence, source, index) for index, sentence in enumerate(sentences)]


def source_name(path: str) -> str:
    return "<stdin>" if path == "-" else path


def shown(text: str) -> str:
    """A line's content as an error quotes it: ``repr`` (which escapes tabs and the characters
    that print as nothing), cut at ``SHOWN_CHARACTERS``, then the code points of invisible
    characters, so a line holding only U+FEFF reads ``'\\ufeff' (U+FEFF)``."""
    quoted = repr(text[:SHOWN_CHARACTERS]) + ("..." if len(text) > SHOWN_CHARACTERS else "")
    invisible = sorted({c for c in text if c not in " \t" and (c.isspace() or not c.isprintable())})
    if invisible:
        named = [f"U+{ord(c):04X}" for c in invisible[:SHOWN_CODE_POINTS]]
        quoted += f" ({', '.join(named)}{', ...' if len(invisible) > SHOWN_CODE_POINTS else ''})"
    return quoted


def detect_format(path: str) -> str:
    """``conllu`` for a ``.conllu`` file or one whose first word line has 10 tab-separated columns
    starting with a numeric ID; ``conll`` otherwise."""
    if path.endswith(".conllu"):
        return "conllu"
    if path == "-" or not is_regular_file(path):  # a pipe is read once, by the reader
        return "conll"
    with open_binary(path) as stream:
        for _, text in read_lines(stream, path):
            if text is None:
                continue
            if text.startswith("#"):
                return "conllu"
            if text.strip():
                fields = text.split("\t")
                word_line = _CONLLU_WORD_ID.fullmatch(fields[0]) is not None
                return "conllu" if len(fields) == CONLLU_COLUMNS and word_line else "conll"
    return "conll"


def read_corpus(path: str, spec: ColumnSpec) -> list[Sentence]:
    """All labelled sentences of a file; an empty file is an error."""
    with open_binary(path) as stream:
        sentences = list(read_columns(stream, path, spec))
    if not sentences:
        raise CrftagError(f"{path}: no sentences found (empty file, or only -DOCSTART- lines?)")
    return sentences


def read_columns(
    stream: BinaryIO,
    source: str,
    spec: ColumnSpec,
    *,
    keep_raw: bool = False,
    keep_markup: bool = False,
    on_error: str = "stop",
) -> Iterator[Sentence]:
    """Sentences of a column file, one at a time.

    ``keep_raw`` keeps each sentence's original lines (for writing them back). ``keep_markup``
    also yields blocks that hold no word at all (a ``-DOCSTART-`` line, comments before the end of
    the file) as sentences with no tokens, so that predict loses no line of its input.
    ``on_error`` as in :func:`read_lines`; a line skipped under ``"skip"`` is no word, but stays
    among the sentence's original lines (its bytes that are not UTF-8 as U+FFFD).
    """
    expected_columns: int | None = None
    expected_from = 0
    tokens: list[str] = []
    tags: list[str] = []
    raw: list[str] = []
    rows: list[int] = []
    first_line = 0
    document = 0
    for number, text, readable in decoded_lines(stream, source, on_error):
        if not readable:  # reported already; kept in its place, but no word
            first_line = first_line if raw else number
            raw.append(text)
            continue
        if not text.strip():
            if tokens or (keep_markup and raw):
                yield _sentence(tokens, tags, spec, first_line, raw, rows, keep_raw, document)
            tokens, tags, raw, rows = [], [], [], []
            continue
        if not raw:
            first_line = number
        if spec.format == "conllu":
            if text.startswith("#"):
                if text.startswith("# newdoc") and not tokens:
                    document += 1
                raw.append(text)
                continue
            fields = text.split("\t")
            _check_count(
                fields, CONLLU_COLUMNS, text, source, number, "CoNLL-U has 10, tab-separated"
            )
            if not _is_conllu_word(fields[0], text, source, number):
                raw.append(text)
                continue
        else:
            fields = text.split("\t") if "\t" in text else text.split()
            if fields[0] == DOCSTART:
                # A document marker is no sentence: it ends the current one and is kept apart.
                if tokens or (keep_markup and raw):
                    yield _sentence(tokens, tags, spec, first_line, raw, rows, keep_raw, document)
                    tokens, tags, raw, rows = [], [], [], []
                document += 1
                if keep_markup:
                    yield _sentence([], [], spec, number, [text], [], keep_raw, document)
                raw = []
                continue
            if expected_columns is None:
                expected_columns, expected_from = len(fields), number
            why = f"line {expected_from} has {expected_columns}"
            _check_count(fields, expected_columns, text, source, number, why)
        word, tag = _pick(fields, spec, text, source, number)
        rows.append(len(raw))
        raw.append(text)
        tokens.append(word)
        if tag is not None:
            tags.append(tag)
    if tokens or (keep_markup and raw):
        yield _sentence(tokens, tags, spec, first_line, raw, rows, keep_raw, document)


def _check_count(
    fields: list[str], expected: int, text: str, source: str, number: int, why: str
) -> None:
    if len(fields) != expected:
        raise located(
            source, number, f"expected {expected} columns ({why}), got {_columns(fields, text)}"
        )


def _columns(fields: list[str], text: str) -> str:
    """``3 columns: 'the line'`` for messages."""
    return f"{len(fields)} column{'s' if len(fields) != 1 else ''}: {shown(text)}"


def _is_conllu_word(identifier: str, text: str, source: str, number: int) -> bool:
    """Whether a CoNLL-U line with this ID is a word: a range (3-4) or an empty node (5.1) is
    not, and any other ID is an error rather than a word silently passed over."""
    if _CONLLU_WORD_ID.fullmatch(identifier):
        return True
    if _CONLLU_OTHER_ID.fullmatch(identifier):
        return False
    raise located(
        source,
        number,
        f"CoNLL-U ID {identifier!r} is not a word number, a range (3-4) or an empty node (5.1): "
        f"{shown(text)}",
    )


def _pick(
    fields: list[str], spec: ColumnSpec, text: str, source: str, number: int
) -> tuple[str, str | None]:
    columns = len(fields)
    wanted = [spec.word_column] + ([spec.tag_column] if spec.tag_column is not None else [])
    for column in wanted:
        if not -columns <= column < columns:
            raise located(
                source, number, f"no column {column} in a line of {_columns(fields, text)}"
            )
    if spec.tag_column is not None and columns < 2:
        raise located(
            source, number, f"expected a word and a tag column, got {_columns(fields, text)}"
        )
    word = fields[spec.word_column]
    tag = fields[spec.tag_column] if spec.tag_column is not None else None
    if tag is not None and (problem := label_problem(tag)) is not None:
        raise located(source, number, f"tag {tag!r} {problem}")
    return word, tag


def _sentence(tokens, tags, spec, line, raw, rows, keep_raw, document) -> Sentence:
    return Sentence(
        tokens=tuple(tokens),
        tags=tuple(tags) if spec.tag_column is not None else None,
        line=line,
        raw=tuple(raw) if keep_raw else (),
        token_rows=tuple(rows) if keep_raw else (),
        document=document,
    )


def format_conll_block(sentence: Sentence, predicted: list[str]) -> str:
    """A sentence's original lines with the predicted tag appended to each word line, then a blank
    line. Document markers get the tag ``O`` so every line keeps one column count (as conlleval
    requires); comment and CoNLL-U range lines are written back unchanged."""
    rows = dict(zip(sentence.token_rows, predicted, strict=True))
    lines = []
    for index, text in enumerate(sentence.raw):
        separator = "\t" if "\t" in text else " "
        if index in rows:
            lines.append(f"{text}{separator}{rows[index]}")
        elif text.split(maxsplit=1)[0] == DOCSTART:
            lines.append(f"{text}{separator}O")
        else:
            lines.append(text)
    return "\n".join(lines) + "\n\n"
