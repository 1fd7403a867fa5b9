"""Pretrained word vectors: GloVe or word2vec text, fastText ``.vec``, word2vec binary and
fastText ``.bin``; plain or compressed with gzip, bzip2 or xz; one file or several side by side.

GloVe: ``word v1 ... vD`` per line. word2vec text and fastText ``.vec``: the same after a
``count dimension`` header line, which is detected, not read as a word. Words may contain spaces
(the last D fields are the vector). The binary formats are read by
:mod:`crftag.data.vector_binaries`. The format and the compression are detected from the bytes,
never from the file name; text files are read by :mod:`crftag.data.lines` (UTF-8 with or without
a BOM, NUL and line-length checks, a truncated or corrupt compressed file a located error).
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np
import torch

from crftag.data.lines import DECOMPRESSION_ERRORS, MAX_LINE_BYTES, open_file, read_lines
from crftag.data.progress import progress_bar
from crftag.data.vector_binaries import (
    FASTTEXT_MAGIC,
    FastTextModel,
    compression,
    read_fasttext,
    read_fasttext_dim,
    read_word2vec_binary,
    read_word2vec_dim,
)
from crftag.errors import CrftagError, located

__all__ = [
    "ConcatenatedEmbeddings",
    "Embeddings",
    "SubwordEmbeddings",
    "embeddings_dims",
    "read_embeddings",
    "vector_format",
]


class Embeddings:
    """Vectors by word. ``vectors`` (N, D) float32; ``index`` maps each word to its row."""

    def __init__(self, words: list[str], vectors: torch.Tensor) -> None:
        self.words = words
        self.vectors = vectors
        self.index = {word: row for row, word in enumerate(words)}

    @property
    def dim(self) -> int:
        return self.vectors.size(1)

    def vectors_of(self, rows: list[int]) -> torch.Tensor:
        """(len(rows), D): the vectors of the words at ``rows`` of :attr:`words`."""
        return self.vectors[torch.tensor(rows, dtype=torch.long)]

    def lookup(self, word: str) -> torch.Tensor | None:
        """The vector of ``word`` by exact form, then lower-cased (GloVe is lower-case)."""
        row = self.index.get(word)
        if row is None:
            row = self.index.get(word.lower())
        return None if row is None else self.vectors_of([row])[0]

    def subword_vector(self, word: str) -> torch.Tensor | None:
        """(D,): a vector for any word made from its pieces; None where the file has no
        pieces (every format but fastText's ``.bin``)."""
        return None


class SubwordEmbeddings(Embeddings):
    """A fastText ``.bin`` model: its words' vectors, and a vector from character n-grams for
    any other word."""

    def __init__(self, model: FastTextModel) -> None:
        self.model = model
        self.words = model.words
        self.index = model.index

    @property
    def dim(self) -> int:
        return self.model.dim

    def vectors_of(self, rows: list[int]) -> torch.Tensor:
        found = [self.model.vector(self.words[row]) for row in rows]
        return torch.from_numpy(np.stack(found)) if found else torch.empty(0, self.dim)

    def subword_vector(self, word: str) -> torch.Tensor | None:
        found = self.model.vector(word)
        return None if found is None else torch.from_numpy(found)


class ConcatenatedEmbeddings(Embeddings):
    """Several files side by side: each word's vectors concatenated in the order of ``parts``,
    with zeros for a file that has no vector for it (nor, for fastText ``.bin``, n-grams).
    :attr:`words` are every file's words, the first file's first."""

    def __init__(self, parts: list[Embeddings]) -> None:
        self.parts = parts
        self.words = list(dict.fromkeys(word for part in parts for word in part.words))
        self.index = {word: row for row, word in enumerate(self.words)}

    @property
    def dim(self) -> int:
        return sum(part.dim for part in self.parts)

    def vectors_of(self, rows: list[int]) -> torch.Tensor:
        return torch.stack([self._joined(self.words[row], exact=True) for row in rows])

    def subword_vector(self, word: str) -> torch.Tensor | None:
        if all(type(part).subword_vector is Embeddings.subword_vector for part in self.parts):
            return None
        return self._joined(word, exact=False)

    def _joined(self, word: str, *, exact: bool) -> torch.Tensor:
        pieces = []
        for part in self.parts:
            found = part.lookup(word) if exact else None
            if found is None:
                found = part.subword_vector(word)
            pieces.append(found if found is not None else torch.zeros(part.dim))
        return torch.cat(pieces)


def vector_format(path: str) -> str:
    """``text``, ``word2vec-binary`` or ``fasttext-bin``, from the file's first bytes."""
    start = _first_lines(path, 4, 0)[0]
    if len(start) == 4 and int.from_bytes(start, "little") == FASTTEXT_MAGIC:
        return "fasttext-bin"
    header, first = _first_lines(path, 64, MAX_LINE_BYTES)
    fields = header.split()
    if len(fields) != 2 or not all(field.isdigit() for field in fields):
        return "text"
    # A text vector is digits, signs, points, exponents and spaces after its word; binary
    # float32s are almost never only those bytes.
    numbers = first.partition(b" ")[2][: 4 * int(fields[1])]
    if numbers and not numbers.strip(b"0123456789.-+eEinfaINFA \r\n"):
        return "text"
    return "word2vec-binary"


def _first_lines(path: str, header_bytes: int, line_bytes: int) -> tuple[bytes, bytes]:
    """Up to ``header_bytes`` of the first line and ``line_bytes`` of the second, decompressed."""
    stream, handle = open_file(path, "embeddings file")
    with handle, stream:
        try:
            header = stream.readline(header_bytes)
            return header, stream.readline(line_bytes) if line_bytes else b""
        except EOFError:
            raise CrftagError(
                f"{path}: the {compression(stream)} file ends early (truncated)"
            ) from None
        except DECOMPRESSION_ERRORS as error:
            raise CrftagError(f"{path}: corrupt {compression(stream)} data ({error})") from None


def _records(path: str, stream: BinaryIO) -> Iterator[tuple[int, str, list[str]]]:
    """(line number, word, vector fields), the word2vec header skipped."""
    dim: int | None = None
    for number, text in read_lines(stream, path):
        fields = text.rstrip().split(" ")
        if number == 1 and len(fields) == 2 and all(f.isdigit() for f in fields):
            continue  # word2vec header: count and dimension
        if fields == [""]:
            continue
        if dim is None:
            dim = len(fields) - 1
            if dim < 1:
                raise located(path, number, "expected a word and its vector")
        if len(fields) < dim + 1:
            raise located(
                path, number, f"expected a word and {dim} numbers, got {len(fields) - 1} fields"
            )
        yield number, " ".join(fields[:-dim]), fields[-dim:]


def embeddings_dims(paths: list[str]) -> list[int]:
    """Each file's dimension, from its header or its first vector only: read before any
    training work, so a wrong file fails at once."""
    return [_dim(path) for path in paths]


def _dim(path: str) -> int:
    file_format = vector_format(path)
    stream, handle = open_file(path, "embeddings file")
    with handle, stream:
        if file_format == "fasttext-bin":
            return read_fasttext_dim(path, stream)
        if file_format == "word2vec-binary":
            return read_word2vec_dim(path, stream)
        for _, _, vector in _records(path, stream):
            return len(vector)
    raise CrftagError(f"{path}: no vectors in the embeddings file")


def read_embeddings(
    paths: str | list[str], *, show_progress: bool = True, max_words: int | None = None
) -> Embeddings:
    """Read every vector of one file, or of several side by side (:class:`ConcatenatedEmbeddings`).

    A file of more than ``max_words`` vectors is refused as soon as the count is passed (or
    read in a binary header), before its matrix is made.
    """
    if isinstance(paths, str):
        return _read_one(paths, show_progress, max_words)
    parts = [_read_one(path, show_progress, max_words) for path in paths]
    return parts[0] if len(parts) == 1 else ConcatenatedEmbeddings(parts)


def _read_one(path: str, show_progress: bool, max_words: int | None) -> Embeddings:
    file_format = vector_format(path)
    if file_format == "text":
        return _read_text(path, show_progress, max_words)
    stream, handle = open_file(path, "embeddings file")
    with handle, stream:
        if file_format == "fasttext-bin":
            return SubwordEmbeddings(read_fasttext(path, stream, max_words))
        words, matrix = read_word2vec_binary(path, stream, max_words)
    vectors = torch.from_numpy(matrix)
    if not bool(torch.isfinite(vectors).all()):
        row = int((~torch.isfinite(vectors).all(dim=1)).nonzero()[0, 0])
        raise CrftagError(
            f"{path}: vector {row + 1} ({words[row][:40]!r}) holds NaN or infinite values"
        )
    return Embeddings(words, vectors)


def _read_text(path: str, show_progress: bool, max_words: int | None) -> Embeddings:
    """Every vector of a GloVe, word2vec text or fastText ``.vec`` file (its progress on
    stderr: :mod:`crftag.data.progress`)."""
    words: list[str] = []
    values = array("f")
    lines = array("q")  # each vector's line, to name the line of a value that is not finite
    dim = None
    stream, handle = open_file(path, "embeddings file")
    with (
        handle,
        stream,
        progress_bar(
            show=show_progress,
            total=os.path.getsize(path),
            unit="B",
            unit_scale=True,
            desc="embeddings",
            leave=False,
        ) as bar,
    ):
        last = 0
        for number, word, vector in _records(path, stream):
            if dim is None:
                dim = len(vector)
            elif len(vector) != dim:
                raise located(path, number, f"expected {dim} numbers, got {len(vector)}")
            try:
                values.extend(map(float, vector))
            except ValueError:
                raise located(
                    path, number, "the vector holds something that is not a number"
                ) from None
            words.append(word)
            lines.append(number)
            if max_words is not None and len(words) > max_words:
                raise located(
                    path,
                    number,
                    f"more than vocab.max_size={max_words} vectors; raise vocab.max_size or use "
                    "a smaller file",
                )
            if number % 4096 == 0:
                position = handle.tell()
                bar.update(position - last)
                last = position
    if not words:
        raise CrftagError(f"{path}: no vectors in the embeddings file")
    vectors = torch.frombuffer(values, dtype=torch.float32).view(len(words), dim).clone()
    _check_finite(path, words, lines, vectors)
    return Embeddings(words, vectors)


def _check_finite(path: str, words: list[str], lines: array, vectors: torch.Tensor) -> None:
    """Every value is a finite float32: ``nan``, ``inf`` or a number beyond float32's range
    (which reads as inf) would turn the training loss into NaN. One check over the matrix; the
    first bad vector is named by its line."""
    finite = torch.isfinite(vectors).all(dim=1)  # (N,)
    if bool(finite.all()):
        return
    row = int((~finite).nonzero()[0, 0])
    value = float(vectors[row][~torch.isfinite(vectors[row])][0])
    raise located(
        path,
        lines[row],
        f"the vector of {words[row][:40]!r} holds {value} (NaN, infinite, or beyond float32's "
        "range); every value must be a finite number",
    )
