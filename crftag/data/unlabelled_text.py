"""Unlabelled text for distillation: one sentence or document a line, in plain, gzip, bzip2 or
xz files read by :mod:`crftag.data.lines`, each line split into sentences and tokens as
``crftag predict --input-format doc`` splits a document
(:func:`crftag.data.sentences.split_sentences`, then :func:`crftag.data.tokenize.tokenize`).

Unlike pretraining's raw text, a NUL byte is refused (a binary file given by mistake), as are a
line that is not UTF-8 and a line over the reader's limit, each in one line naming the file and
line. Sentences whose tokens equal an excluded sentence (the corpus's dev and test sentences)
are removed and counted, so a student never learns its evaluation text from its teacher.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from crftag.data.lines import open_binary, read_lines
from crftag.data.paths import check_regular_file
from crftag.data.sentences import split_sentences
from crftag.data.tokenize import tokenize
from crftag.errors import CrftagError

__all__ = [
    "UnlabelledText",
    "exclusion_digest",
    "read_unlabelled_text",
    "sentences_digest",
    "text_digest",
]

Tokens = tuple[str, ...]
_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class UnlabelledText:
    """The sentences of the text, in order, once the excluded ones are removed.

    sentences  each sentence's tokens
    documents  for each sentence, the number (from 0, over all files) of the line it comes
               from: the sentences of one line are one document
    removed    how many sentences were removed as equal to an excluded one
    """

    sentences: list[Tokens]
    documents: list[int]
    removed: int


def read_unlabelled_text(paths: Sequence[str], exclude: set[Tokens]) -> UnlabelledText:
    """The sentences of every file in ``paths``, in order, without those in ``exclude``.

    A file that is not a regular file (it is read twice: for its digest, then its text), one
    with no text, and a line that is not UTF-8, holds a NUL byte or is over the line limit are
    one-line errors naming the file (and line); so is text of which nothing is left once the
    excluded sentences are removed."""
    sentences: list[Tokens] = []
    documents: list[int] = []
    removed = 0
    line_count = 0
    for path in paths:
        check_regular_file(path)
        found = 0
        with open_binary(path, "text file") as stream:
            for _, line in read_lines(stream, path):
                for tokens in _line_sentences(line):
                    found += 1
                    if tokens in exclude:
                        removed += 1
                        continue
                    sentences.append(tokens)
                    documents.append(line_count)
                line_count += 1
        if not found:
            raise CrftagError(f"{path}: no text (the file is empty or blank)")
    if not sentences:
        raise CrftagError(
            f"{', '.join(paths)}: no text is left: all {removed} sentences equal a dev or test "
            "sentence of the corpus"
        )
    return UnlabelledText(sentences, documents, removed)


def _line_sentences(line: str) -> list[Tokens]:
    """One line's sentences as tokens, as a document's text is split; none for a blank line."""
    found = []
    for start, end in split_sentences(line):
        tokens = tuple(tokenize(line[start:end]))
        if tokens:
            found.append(tokens)
    return found


def text_digest(paths: Sequence[str]) -> str:
    """SHA-256 (hex) of the files' bytes as they are on disk (compressed or not), in order: the
    digest of their digests, so that where one file ends and the next begins counts too."""
    whole = hashlib.sha256()
    for path in paths:
        check_regular_file(path)
        whole.update(file_digest(path, "text file").encode("ascii"))
    return whole.hexdigest()


def file_digest(path: str, what: str = "file") -> str:
    """SHA-256 (hex) of one file's bytes; a file that cannot be read is a one-line error."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(_CHUNK_BYTES):
                digest.update(chunk)
    except FileNotFoundError:
        raise CrftagError(f"{path}: no such {what}") from None
    except OSError as error:
        raise CrftagError(f"{path}: cannot read ({error.strerror})") from None
    return digest.hexdigest()


def sentences_digest(sentences: Iterable[Sequence[str]]) -> str:
    """SHA-256 (hex) of token lists, in order: equal exactly when the lists are."""
    digest = hashlib.sha256()
    for tokens in sentences:
        digest.update(json.dumps(list(tokens), ensure_ascii=False).encode("utf-8") + b"\n")
    return digest.hexdigest()


def exclusion_digest(exclude: set[Tokens]) -> str:
    """SHA-256 (hex) of a set of sentences, whatever order it is given in."""
    return sentences_digest(sorted(exclude))
