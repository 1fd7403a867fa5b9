"""The lines of a text file, read by one set of rules for every file crftag reads: labelled
corpora, dictionaries (``model.lexicons``), text vector files and ``crftag pretrain``'s text.

- A file compressed with gzip, bzip2 or xz is decompressed; the compression is told from its
  first bytes, never from its name. Compressed data that is truncated or corrupt is an error
  naming the line it stops in.
- Several compressed streams one after the other (``cat a.gz b.gz``) are read as one file, as
  gzip, bzip2 and xz read them; zero bytes after them are padding, but other bytes that start
  no stream (trailing garbage, or a damaged last stream) are an error, never ignored with the
  lines they may hold. An empty file (a zero-byte ``.gz`` too) has no lines, whatever its name.
- Text is UTF-8, with or without a byte-order mark (removed from the first line); CRLF line
  ends are accepted. A carriage return that ends no line (CR-only or mixed line ends) is an
  error: the lines cannot be told apart then. Text that starts with a UTF-16 or UTF-32
  byte-order mark is an error that says so (convert it to UTF-8).
- A NUL byte, or a byte-order mark at the start of a line after the first (files joined with
  ``cat``: it would cling to the line's first word), is an error, unless the caller reads raw
  text, where each is just a character and kept.
- No line longer than :data:`MAX_LINE_BYTES` is held in memory: a file with no line breaks
  (``/dev/zero``, a binary file) is refused after that many bytes instead of filling memory.

Every error is one line ``FILE:LINE: what is wrong`` (:func:`crftag.errors.located`).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import sys
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import BinaryIO

from crftag.errors import CrftagError, located

__all__ = [
    "DECOMPRESSION_ERRORS",
    "MAX_LINE_BYTES",
    "compression_name",
    "decoded_lines",
    "open_binary",
    "open_file",
    "read_lines",
]

# The longest line read, without its line end.
MAX_LINE_BYTES = 4 << 20
# Each compression's name, the bytes its data starts with, and its decompressing reader.
_COMPRESSIONS: tuple[tuple[str, bytes, Callable[[BinaryIO], BinaryIO]], ...] = (
    ("gzip", b"\x1f\x8b", lambda handle: gzip.GzipFile(fileobj=handle, mode="rb")),
    ("bzip2", b"BZh", lambda handle: _Decompressed(handle, "bzip2", bz2.BZ2Decompressor)),
    ("xz", b"\xfd7zXZ\x00", lambda handle: _Decompressed(handle, "xz", lzma.LZMADecompressor)),
)
_CHUNK = 1 << 16  # compressed bytes read at a time
_UTF8_BOM = b"\xef\xbb\xbf"
_WIDE_MARKS = (  # longest first
    ("UTF-32", (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")),
    ("UTF-16", (b"\xff\xfe", b"\xfe\xff")),
)
_MAGIC_BYTES = max(len(magic) for _, magic, _ in _COMPRESSIONS)
# What a decompressing reader raises on bad data (gzip.BadGzipFile is an OSError).
DECOMPRESSION_ERRORS = (OSError, zlib.error, lzma.LZMAError, ValueError)


class TrailingGarbage(OSError):
    """Bytes after the last bzip2 or xz stream that start no stream (bz2.BZ2File and
    lzma.LZMAFile would ignore them, and with them a damaged last stream's lines)."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"bytes after the {kind} data that are not {kind} (trailing garbage)")


class _Streams(io.RawIOBase):
    """The decompressed bytes of one or more bzip2 or xz streams, one after the other; zero
    bytes between and after them are padding (as gzip and xz allow), anything else is
    :class:`TrailingGarbage`, and data that stops inside a stream raises EOFError."""

    def __init__(self, handle: BinaryIO, new_decompressor: Callable) -> None:
        super().__init__()
        self.handle = handle
        self.new_decompressor = new_decompressor
        self.decompressor = new_decompressor()
        self.kind = ""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while True:
            if self.decompressor.eof:
                rest = self._after_stream()
                if not rest:
                    return 0
                self.decompressor = self.new_decompressor()
                try:
                    data = self.decompressor.decompress(rest, len(buffer))
                except (OSError, lzma.LZMAError):
                    raise TrailingGarbage(self.kind) from None
            elif self.decompressor.needs_input:
                chunk = self.handle.read(_CHUNK)
                if not chunk:
                    raise EOFError("the data ends inside a compressed stream")
                data = self.decompressor.decompress(chunk, len(buffer))
            else:  # output held back by the last call's limit
                data = self.decompressor.decompress(b"", len(buffer))
            if data:
                buffer[: len(data)] = data
                return len(data)

    def _after_stream(self) -> bytes:
        """The bytes after the stream that ended, padding skipped; empty at the file's end."""
        rest = self.decompressor.unused_data.lstrip(b"\x00")
        while not rest:
            chunk = self.handle.read(_CHUNK)
            if not chunk:
                return b""
            rest = chunk.lstrip(b"\x00")
        return rest


class _Decompressed(io.BufferedReader):
    """A bzip2 or xz file's decompressed bytes; ``kind`` names the compression."""

    def __init__(self, handle: BinaryIO, kind: str, new_decompressor: Callable) -> None:
        streams = _Streams(handle, new_decompressor)
        streams.kind = kind
        super().__init__(streams)
        self.kind = kind


def compression_name(stream: BinaryIO) -> str:
    """What ``stream`` (of :func:`open_file`) decompresses, for messages: gzip, bzip2, xz,
    or plain."""
    if isinstance(stream, gzip.GzipFile):
        return "gzip"
    return getattr(stream, "kind", "plain")


def open_file(path: str, what: str = "file") -> tuple[BinaryIO, BinaryIO]:
    """(the decompressed stream, the file under it) of a plain, gzip, bzip2 or xz file; both
    are the same object for a plain file. The caller closes both. ``what`` names the file in
    the messages of a missing one (``no such embeddings file``)."""
    if os.path.isdir(path):
        raise CrftagError(f"{path}: is a directory, expected {_article(what)} {what}")
    try:
        handle = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    except FileNotFoundError:
        raise CrftagError(f"{path}: no such {what}") from None
    except OSError as error:
        raise CrftagError(f"{path}: cannot read ({error.strerror})") from None
    # peek, not read and seek: a named pipe (``<(zcat ...)``) cannot seek back.
    start = handle.peek(_MAGIC_BYTES)[:_MAGIC_BYTES]
    for _, magic, opener in _COMPRESSIONS:
        if start.startswith(magic):
            return opener(handle), handle
    return handle, handle


@contextmanager
def open_binary(path: str, what: str = "file") -> Iterator[BinaryIO]:
    """``path`` (``-`` for stdin, read as it comes) open for reading bytes, decompressed as
    :func:`open_file` says; closed when the block ends."""
    if path == "-":
        yield sys.stdin.buffer
        return
    stream, handle = open_file(path, what)
    with handle, stream:
        yield stream


def read_lines(
    stream: BinaryIO,
    source: str,
    on_error: str = "stop",
    allow_nul: bool = False,
    max_bytes: int | None = None,
) -> Iterator[tuple[int, str | None]]:
    """(line number, text) for each line of a byte stream, line ends and BOM removed.

    A line that is not UTF-8, or holds a NUL byte (unless ``allow_nul``), is an error naming it
    (``on_error="stop"``), or (``"skip"``) a warning on stderr and ``None`` for its text, so the
    caller can keep its place. A line longer than ``max_bytes`` (default ``MAX_LINE_BYTES``),
    a carriage return that ends no line, and truncated or corrupt compressed data are always
    errors.
    """
    for number, text, readable in decoded_lines(stream, source, on_error, allow_nul, max_bytes):
        yield number, text if readable else None


def decoded_lines(
    stream: BinaryIO,
    source: str,
    on_error: str = "stop",
    allow_nul: bool = False,
    max_bytes: int | None = None,
) -> Iterator[tuple[int, str, bool]]:
    """:func:`read_lines` with every line's text: (number, text, readable), where the text of a
    line skipped under ``on_error="skip"`` has U+FFFD for each byte that is not UTF-8, so that a
    caller can write it back in its place."""
    limit = MAX_LINE_BYTES if max_bytes is None else max_bytes
    number = 0
    while True:
        raw = _next_line(stream, source, number + 1, limit)
        if not raw:
            return
        number += 1
        line = raw[:-1] if raw.endswith(b"\n") else raw
        line = line.rstrip(b"\r")
        if b"\r" in line:
            raise located(source, number, _line_end_problem(number))
        if len(line) > limit or (len(raw) == limit + 2 and not raw.endswith(b"\n")):
            raise located(source, number, f"line longer than {limit} bytes")
        problem = _wide_text(line) if number == 1 else None
        if problem is not None:
            raise located(source, number, problem)
        if not allow_nul and b"\x00" in line:
            problem = "contains a NUL byte; is this a binary file?"
        elif not allow_nul and number > 1 and line.startswith(_UTF8_BOM):
            problem = "starts with a byte-order mark (U+FEFF): files joined with cat? remove it"
        else:
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as error:
                problem = f"not valid UTF-8 (byte {error.start + 1} of the line)"
        if problem is not None:
            if on_error != "skip":
                raise located(source, number, problem)
            print(f"crftag: warning: {source}:{number}: {problem}; skipped", file=sys.stderr)
            yield number, line.decode("utf-8", errors="replace"), False
            continue
        if number == 1 and text.startswith("\ufeff"):
            text = text[1:]
        yield number, text, True


def _next_line(stream: BinaryIO, source: str, number: int, limit: int) -> bytes:
    """The next line's bytes, at most ``limit + 2`` (room for the \\r\\n after a line of
    ``limit`` bytes); truncated or corrupt compressed data is an error at line ``number``."""
    try:
        # readline on the bytes, never a text wrapper: its size counts bytes, and it splits on
        # \n only, so a lone \r stays in the line to be found by the caller.
        return stream.readline(limit + 2)
    except EOFError:
        raise located(
            source, number, f"the {compression_name(stream)} file ends early (truncated)"
        ) from None
    except TrailingGarbage as error:
        raise located(source, number, str(error)) from None
    except gzip.BadGzipFile as error:
        if str(error).startswith("Not a gzipped file"):  # where a next member would start
            raise located(source, number, str(TrailingGarbage("gzip"))) from None
        raise located(source, number, f"corrupt gzip data ({error})") from None
    except DECOMPRESSION_ERRORS as error:
        if compression_name(stream) == "plain":
            raise located(source, number, f"cannot read ({error})") from None
        raise located(
            source, number, f"corrupt {compression_name(stream)} data ({error})"
        ) from None


def _wide_text(first_line: bytes) -> str | None:
    """What is wrong with a file whose first line starts with a UTF-16 or UTF-32 byte-order
    mark (UTF-32's little-endian mark starts with UTF-16's), or None."""
    for name, marks in _WIDE_MARKS:
        if first_line.startswith(marks):
            return f"{name} text (it starts with a {name} byte-order mark); convert it to UTF-8"
    return None


def _line_end_problem(number: int) -> str:
    """A carriage return inside a line: the file's line ends are CR alone (old Mac OS), or
    mixed, which no reader splits the same way."""
    if number == 1:
        return "old Mac (CR-only) line ends; convert to \\n"
    return "a carriage return (\\r) not followed by \\n: mixed line ends; convert to \\n"


def _article(noun: str) -> str:
    return "an" if noun[:1] in "aeiou" else "a"
