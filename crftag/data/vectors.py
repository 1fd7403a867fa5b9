"""Pretrained word vectors in the GloVe or word2vec text formats, plain or gzip-compressed.

GloVe: ``word v1 ... vD`` per line. word2vec text: the same after a ``count dimension`` header line,
which is detected, not read as a word. Words may contain spaces (the last D fields are the vector).
"""

from __future__ import annotations

import gzip
import os
import sys
import zlib
from array import array
from collections.abc import Iterator
from typing import BinaryIO

import torch
from tqdm import tqdm

from crftag.data.conll import MAX_LINE_BYTES
from crftag.errors import CrftagError, located

__all__ = ["Embeddings", "check_embeddings", "read_embeddings"]


class Embeddings:
    """Vectors by word. ``vectors`` (N, D) float32; ``index`` maps each word to its row."""

    def __init__(self, words: list[str], vectors: torch.Tensor) -> None:
        self.words = words
        self.vectors = vectors
        self.index = {word: row for row, word in enumerate(words)}

    @property
    def dim(self) -> int:
        return self.vectors.size(1)

    def lookup(self, word: str) -> torch.Tensor | None:
        """The vector of ``word`` by exact form, then lower-cased (GloVe is lower-case)."""
        row = self.index.get(word)
        if row is None:
            row = self.index.get(word.lower())
        return None if row is None else self.vectors[row]


def _open(path: str) -> BinaryIO:
    if os.path.isdir(path):
        raise CrftagError(f"{path}: is a directory, expected an embeddings file")
    try:
        handle = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    except FileNotFoundError:
        raise CrftagError(f"{path}: no such embeddings file") from None
    if handle.read(2) == b"\x1f\x8b":
        handle.seek(0)
        return gzip.GzipFile(fileobj=handle)  # type: ignore[return-value]
    handle.seek(0)
    return handle


def _lines(path: str, stream: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of a plain or gzip stream; a truncated or corrupt gzip member is a
    located error (EOFError would otherwise reach the command line as an interruption)."""
    number = 0
    while True:
        try:
            raw = stream.readline(MAX_LINE_BYTES + 2)
        except EOFError:
            raise located(path, number + 1, "the gzip file ends early (truncated)") from None
        except (OSError, zlib.error) as error:
            raise located(path, number + 1, f"corrupt gzip data ({error})") from None
        if not raw:
            return
        number += 1
        # A line is read in pieces of the bound: one that fills it without ending is too long.
        if len(raw.rstrip(b"\r\n")) > MAX_LINE_BYTES or (
            len(raw) == MAX_LINE_BYTES + 2 and not raw.endswith(b"\n")
        ):
            raise located(path, number, f"line longer than {MAX_LINE_BYTES} bytes")
        yield number, raw


def _records(path: str, stream: BinaryIO) -> Iterator[tuple[int, str, list[str]]]:
    """(line number, word, vector fields), the word2vec header skipped."""
    dim: int | None = None
    for number, raw in _lines(path, stream):
        try:
            fields = raw.decode("utf-8").rstrip().split(" ")
        except UnicodeDecodeError as error:
            raise located(path, number, f"not valid UTF-8 ({error.reason})") from None
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


def check_embeddings(path: str, expected_dim: int) -> None:
    """Read only the first vector and fail now, before any training work, if its size is off."""
    with _open(path) as stream:
        for number, _, vector in _records(path, stream):
            if len(vector) != expected_dim:
                raise located(
                    path,
                    number,
                    f"vectors have {len(vector)} dimensions but model.word_dim is {expected_dim}; "
                    f"set model.word_dim: {len(vector)}",
                )
            return
    raise CrftagError(f"{path}: no vectors in the embeddings file")


def read_embeddings(
    path: str, *, show_progress: bool = True, max_words: int | None = None
) -> Embeddings:
    """Read every vector of a GloVe or word2vec text file (a progress bar on terminals).

    A file of more than ``max_words`` vectors is refused as soon as the count is passed, before
    the embedding matrix is made.
    """
    words: list[str] = []
    values = array("f")
    lines = array("q")  # each vector's line, to name the line of a value that is not finite
    dim = None
    size = os.path.getsize(path)
    with (
        _open(path) as stream,
        tqdm(
            total=size,
            unit="B",
            unit_scale=True,
            desc="embeddings",
            leave=False,
            file=sys.stderr,
            disable=None if show_progress else True,
        ) as bar,
    ):
        raw_stream = getattr(stream, "fileobj", stream)
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
                position = raw_stream.tell()
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
