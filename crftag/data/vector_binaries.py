"""Pretrained word vectors in binary formats: word2vec's ``.bin`` and fastText's ``.bin``.

word2vec binary (Mikolov et al.'s C tool, gensim's ``binary=True``): a text header line
``count dimension``, then per word its UTF-8 bytes, a space, and ``dimension`` little-endian
float32 values (a newline may precede the next word).

fastText ``.bin`` (Bojanowski et al. 2017; versions 11 and 12 of the format, as fastText and
gensim write them): the training arguments, the dictionary, and the input matrix, whose first
``nwords`` rows are the words' own vectors and the next ``bucket`` rows those of character
n-grams hashed into buckets. A word's vector is the mean of its own row and its n-grams' rows;
a word not in the file gets the mean of its n-grams' rows, so a misspelling or a new name still
has a meaningful vector. Quantized files (``.ftz``) are refused.

Truncated, corrupt or malformed files are one error naming the file, the byte offset (in the
decompressed data) and what was being read. A header's sizes are never trusted with memory: a
plain file must be large enough to hold what its header promises, and a compressed one gets its
matrix in blocks as the data arrives, so a header that promises gigabytes the file does not hold
ends in that error, not in an allocation.
"""

from __future__ import annotations

import io
import lzma
import os
import struct
import zlib
from typing import BinaryIO

import numpy as np

from crftag.data.lines import compression_name
from crftag.errors import CrftagError

__all__ = [
    "FASTTEXT_MAGIC",
    "MAX_DIM",
    "FastTextModel",
    "compression",
    "read_fasttext",
    "read_fasttext_dim",
    "read_word2vec_binary",
    "read_word2vec_dim",
]

FASTTEXT_MAGIC = 793712314  # the int32 every fastText .bin of format 11 or later starts with
_FASTTEXT_VERSIONS = (11, 12)
_MAX_WORD_BYTES = 100_000  # longer than any word; a bound so a corrupt file is not read whole
_CHUNK = 1 << 20
# Far more than any published vectors (300 to 1024), and than a network's widest layer; a larger
# dimension is a corrupt header, refused before a row of it is allocated.
MAX_DIM = 1 << 16
_BLOCK_BYTES = 1 << 26  # a matrix's rows allocated at a time before its data is seen to exist


def compression(stream: BinaryIO) -> str:
    """What ``stream`` decompresses, for messages: gzip, bzip2, xz, or compressed."""
    name = compression_name(stream)
    return "compressed" if name == "plain" else name


class _Reader:
    """Exact reads from a (possibly decompressing) stream, each failure a one-line error
    naming the file and the byte offset."""

    def __init__(self, path: str, stream: BinaryIO) -> None:
        self.path = path
        self.stream = stream
        self.offset = 0  # bytes consumed by the caller
        self.buffer = b""
        self.start = 0  # the first byte of ``buffer`` not consumed: moved, never sliced off,
        # so a read costs its own size, not the buffer's

    def error(self, message: str) -> CrftagError:
        return CrftagError(f"{self.path}: byte {self.offset}: {message}")

    def _fill(self, size: int, what: str) -> None:
        """At least ``size`` unconsumed bytes in the buffer, unless the data ends first."""
        if len(self.buffer) - self.start >= size:
            return
        self.buffer, self.start = self.buffer[self.start :], 0
        chunks = [self.buffer]
        held = len(self.buffer)
        while held < size:
            try:
                chunk = self.stream.read(max(_CHUNK, size - held))
            except EOFError:
                raise self.error(
                    f"the {compression(self.stream)} file ends early (truncated), in {what}"
                ) from None
            except (OSError, zlib.error, lzma.LZMAError, ValueError) as error:
                raise self.error(
                    f"corrupt {compression(self.stream)} data ({error}), in {what}"
                ) from None
            if not chunk:
                break
            chunks.append(chunk)
            held += len(chunk)
        self.buffer = b"".join(chunks)

    def exact(self, size: int, what: str) -> bytes:
        self._fill(size, what)
        if len(self.buffer) - self.start < size:
            raise self.error(f"the file ends early (truncated), in {what}")
        data = self.buffer[self.start : self.start + size]
        self.start += size
        self.offset += size
        return data

    def until(self, delimiter: bytes, what: str) -> bytes:
        """Bytes up to ``delimiter`` (consumed, not returned)."""
        searched = self.start
        while True:
            found = self.buffer.find(delimiter, searched)
            if found >= 0:
                data = self.buffer[self.start : found]
                self.offset += found + 1 - self.start
                self.start = found + 1
                return data
            held = len(self.buffer) - self.start
            if held > _MAX_WORD_BYTES:
                raise self.error(f"no end of {what} within {_MAX_WORD_BYTES} bytes")
            self._fill(held + 1, what)
            if len(self.buffer) - self.start == held:
                raise self.error(f"the file ends early (truncated), in {what}")
            searched = self.start + held

    def remaining(self) -> int | None:
        """The bytes left in a plain (not compressed) file; None for a compressed one."""
        plain = compression_name(self.stream) == "plain"
        if not plain or not isinstance(self.stream, io.BufferedReader | io.FileIO):
            return None
        return os.fstat(self.stream.fileno()).st_size - self.offset

    def check_room(self, size: int, what: str) -> None:
        """An error if a plain file has fewer than ``size`` bytes left for ``what``."""
        remaining = self.remaining()
        if remaining is not None and size > remaining:
            raise self.error(
                f"{what} needs at least {size} bytes, but the file has {remaining} left "
                "(truncated, or a corrupt header)"
            )

    def unpack(self, layout: str, what: str) -> tuple:
        return struct.unpack(layout, self.exact(struct.calcsize(layout), what))

    def at_end_but_white_space(self) -> bool:
        self._fill(64, "the end of the file")
        return not self.buffer[self.start :].strip()

    def text(self, data: bytes, what: str) -> str:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise self.error(f"{what} is not valid UTF-8 ({error.reason})") from None


def _checked_count(reader: _Reader, count: int, max_words: int | None) -> None:
    if max_words is not None and count > max_words:
        raise reader.error(
            f"{count} vectors, more than vocab.max_size={max_words}; raise vocab.max_size or "
            "use a smaller file"
        )


def _word2vec_header(reader: _Reader) -> tuple[int, int]:
    """The vector count and dimension of a word2vec binary file's header line."""
    header = reader.until(b"\n", "the header line").split()
    if len(header) != 2 or not all(field.isdigit() for field in header):
        raise reader.error("expected a header line 'count dimension'")
    count, dim = int(header[0]), int(header[1])
    if count < 1 or not 1 <= dim <= MAX_DIM:
        raise reader.error(
            f"the header says {count} vectors of {dim} dimensions; expected 1 or more vectors "
            f"of 1 to {MAX_DIM}"
        )
    return count, dim


def read_word2vec_dim(path: str, stream: BinaryIO) -> int:
    """The vectors' dimension, from a word2vec binary file's header."""
    return _word2vec_header(_Reader(path, stream))[1]


def read_word2vec_binary(
    path: str, stream: BinaryIO, max_words: int | None
) -> tuple[list[str], np.ndarray]:
    """The words and vectors (N, D) float32 of a word2vec binary file."""
    reader = _Reader(path, stream)
    count, dim = _word2vec_header(reader)
    _checked_count(reader, count, max_words)
    # each vector is at least its D floats and the space after its word
    reader.check_room(count * (4 * dim + 1), f"{count} vectors of {dim} dimensions")
    words: list[str] = []
    vectors = _first_rows(reader, count, dim)
    for row in range(count):
        what = f"vector {row + 1} of {count}"
        words.append(reader.text(reader.until(b" ", f"the word of {what}").lstrip(b"\n"), what))
        vectors = _room(vectors, row + 1, count)
        vectors[row] = np.frombuffer(reader.exact(4 * dim, what), dtype="<f4")
    if not reader.at_end_but_white_space():
        raise reader.error(f"data after the {count} vectors the header announces")
    return words, vectors


def _first_rows(reader: _Reader, rows: int, dim: int) -> np.ndarray:
    """An empty (R, dim) float32 matrix for the first rows of ``rows``: all of them when the file
    is plain (its size was checked), else as many as :data:`_BLOCK_BYTES` hold."""
    first = rows if reader.remaining() is not None else max(1, _BLOCK_BYTES // (4 * dim))
    return np.empty((min(rows, first), dim), dtype=np.float32)


def _room(matrix: np.ndarray, needed: int, rows: int) -> np.ndarray:
    """``matrix`` (R, D), or a copy with room for ``needed`` of its ``rows`` rows (twice the
    rows, at most ``rows``): a compressed file's matrix grows only as its data arrives."""
    if needed <= len(matrix):
        return matrix
    larger = np.empty((min(rows, max(needed, 2 * len(matrix))), matrix.shape[1]), np.float32)
    larger[: len(matrix)] = matrix
    return larger


def _read_matrix(reader: _Reader, rows: int, dim: int, what: str) -> np.ndarray:
    """(rows, dim) float32 read as little-endian float32s, a block of rows at a time."""
    reader.check_room(4 * rows * dim, f"{what} of {rows} x {dim} values")
    matrix = _first_rows(reader, rows, dim)
    block = max(1, _BLOCK_BYTES // (4 * dim))
    for start in range(0, rows, block):
        end = min(rows, start + block)
        matrix = _room(matrix, end, rows)
        data = reader.exact(4 * (end - start) * dim, what)
        matrix[start:end] = np.frombuffer(data, dtype="<f4").reshape(end - start, dim)
    return matrix


class FastTextModel:
    """A fastText model's input vectors: every word's, and any string's from its n-grams."""

    def __init__(self, words: list[str], matrix: np.ndarray, arguments: dict, prune: dict) -> None:
        self.words = words
        self.index = {word: row for row, word in enumerate(words)}
        self.matrix = matrix  # (nwords + buckets, D) float32
        self.minn, self.maxn, self.buckets = (
            arguments["minn"],
            arguments["maxn"],
            arguments["bucket"],
        )
        self.prune = prune  # {} unpruned; else n-gram bucket -> its row past the words
        self.pruned = arguments["pruneidx_size"] >= 0

    @property
    def dim(self) -> int:
        return self.matrix.shape[1]

    def ngram_rows(self, word: str) -> list[int]:
        """Rows of the character n-grams of ``<word>``, as fastText's ``computeSubwords``
        makes them: ``minn`` to ``maxn`` UTF-8 characters, hashed by 32-bit FNV-1a over the
        bytes taken as signed chars."""
        if self.maxn <= 0 or self.buckets <= 0 or (self.pruned and not self.prune):
            return []
        data = f"<{word}>".encode()
        starts = [i for i, byte in enumerate(data) if byte & 0xC0 != 0x80] + [len(data)]
        rows = []
        for first, start in enumerate(starts[:-1]):
            for n in range(self.minn, self.maxn + 1):
                if first + n >= len(starts):
                    break
                end = starts[first + n]
                if n == 1 and (start == 0 or end == len(data)):
                    continue  # "<" and ">" alone
                bucket = _fnv1a_signed(data[start:end]) % self.buckets
                if self.pruned:
                    if bucket not in self.prune:
                        continue
                    bucket = self.prune[bucket]
                rows.append(len(self.words) + bucket)
        return rows

    def vector(self, word: str) -> np.ndarray | None:
        """(D,) float32: the mean of the word's own row (if it has one) and its n-grams' rows;
        None for a word outside the file with no n-gram."""
        own = self.index.get(word)
        rows = [] if word == _END_OF_SENTENCE else self.ngram_rows(word)
        if own is not None:
            rows.append(own)
        if not rows:
            return None
        return self.matrix[rows].mean(axis=0, dtype=np.float64).astype(np.float32)


def _fnv1a_signed(data: bytes) -> int:
    hashed = 2166136261
    for byte in data:
        hashed ^= byte | 0xFFFFFF00 if byte >= 0x80 else byte  # int8_t -> uint32_t
        hashed = (hashed * 16777619) & 0xFFFFFFFF
    return hashed


_END_OF_SENTENCE = "</s>"  # fastText's one word without n-grams
_ARGUMENT_NAMES = (
    "dim ws epoch minCount neg wordNgrams loss model bucket minn maxn lrUpdateRate"
).split()


def read_fasttext_dim(path: str, stream: BinaryIO) -> int:
    """The vectors' dimension, from a fastText ``.bin``'s arguments."""
    reader = _Reader(path, stream)
    _check_magic(reader)
    return _arguments(reader)["dim"]


def _arguments(reader: _Reader) -> dict:
    """The training arguments of a fastText ``.bin`` (after its magic number), checked."""
    values = reader.unpack("<12id", "the training arguments")
    arguments = dict(zip(_ARGUMENT_NAMES, values[:12], strict=True))
    if not 1 <= arguments["dim"] <= MAX_DIM:
        raise reader.error(f"the arguments say dim {arguments['dim']}, expected 1 to {MAX_DIM}")
    if arguments["bucket"] < 0 or (arguments["maxn"] > 0 and arguments["minn"] < 1):
        raise reader.error(
            f"the arguments say bucket {arguments['bucket']}, minn {arguments['minn']}, "
            f"maxn {arguments['maxn']}: expected bucket 0 or more and minn 1 or more"
        )
    return arguments


def _check_magic(reader: _Reader) -> None:
    magic, version = reader.unpack("<ii", "the magic number and version")
    if magic != FASTTEXT_MAGIC:
        raise reader.error("not a fastText .bin file (wrong magic number)")
    if version not in _FASTTEXT_VERSIONS:
        raise reader.error(f"fastText format version {version}, expected 11 or 12")


def read_fasttext(path: str, stream: BinaryIO, max_words: int | None) -> FastTextModel:
    """A fastText ``.bin`` model's dictionary and input matrix (the output layer is not read)."""
    reader = _Reader(path, stream)
    _check_magic(reader)
    arguments = _arguments(reader)
    size, nwords, _, _, pruneidx_size = reader.unpack("<iiiqq", "the dictionary sizes")
    if not 0 < nwords <= size:
        raise reader.error(f"the dictionary says {nwords} words of {size} entries")
    _checked_count(reader, nwords, max_words)
    words = []
    for entry in range(size):
        what = f"dictionary entry {entry + 1} of {size}"
        word = reader.text(reader.until(b"\0", what), what)
        reader.exact(9, what)  # the count (int64) and the entry type (int8: word or label)
        if entry < nwords:
            words.append(word)
    arguments["pruneidx_size"] = pruneidx_size
    prune = {}
    for _ in range(max(pruneidx_size, 0)):
        bucket, row = reader.unpack("<ii", "the pruned n-gram index")
        prune[bucket] = row
    (quantized,) = reader.unpack("<?", "the quantization flag")
    if quantized:
        raise reader.error("a quantized fastText model (.ftz); use its .bin or .vec file")
    rows, dim = reader.unpack("<qq", "the input matrix size")
    expected = nwords + (len(prune) if pruneidx_size >= 0 else arguments["bucket"])
    if dim != arguments["dim"] or rows != expected:
        raise reader.error(
            f"the input matrix is {rows} x {dim}; the arguments say {expected} x {arguments['dim']}"
        )
    matrix = _read_matrix(reader, rows, dim, "the input matrix")
    if not np.isfinite(matrix).all():
        raise reader.error("the input matrix holds NaN or infinite values")
    return FastTextModel(words, matrix, arguments, prune)
