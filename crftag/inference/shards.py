"""Sharded predict outputs that prove themselves: ``predict --shard I/N`` writes every N-th batch
of records between a header line (shard index and count, batch size, format) and an end line
(record count, a checksum of the records, a checksum of the whole input), and
:func:`merge_shards` interleaves N of them back into input order only after checking that they
are exactly the full set: every index once and in order, made alike from the same input, none
truncated or altered. Anything else is a one-line error naming the shard.

In JSON formats the header and end lines are JSON objects (``{"crftag_shard": ...}``,
``{"crftag_shard_end": ...}``); in CoNLL they are comment lines (``# crftag_shard {...}``).
Shards are read as bytes and split on ``\\n`` only, so a carriage return inside a token stays.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TextIO

from crftag.errors import CrftagError

__all__ = ["SHARD_VERSION", "ShardWriter", "merge_shards"]

SHARD_VERSION = 1
HEADER, END = "crftag_shard", "crftag_shard_end"


def _marker_line(name: str, value: dict, output_format: str) -> str:
    if output_format == "conll":
        return f"# {name} {json.dumps(value, sort_keys=True)}\n"
    return json.dumps({name: value}, sort_keys=True) + "\n"


def _read_marker(line: bytes, name: str, output_format: str | None) -> tuple[dict, str] | None:
    """(value, format) of a header or end line, or None if the line is not one."""
    text = line.decode("utf-8", errors="replace").rstrip("\n")
    prefix = f"# {name} "
    try:
        if text.startswith(prefix):
            return json.loads(text[len(prefix) :]), "conll"
        if text.startswith("{") and output_format != "conll":
            value = json.loads(text)
            if isinstance(value, dict) and set(value) == {name}:
                return value[name], "json"
    except json.JSONDecodeError:
        return None
    return None


class ShardWriter:
    """Writes one shard to ``output``: the header now, the records through :meth:`write`, and the
    end line at :meth:`finish` (only a shard whose predict finished has one). The input's
    records pass through :meth:`hash_input`, so the end line names the input they came from."""

    def __init__(
        self, output: TextIO, index: int, count: int, batch_size: int, output_format: str
    ) -> None:
        self.output = output
        self.output_format = output_format
        self.records = 0
        self._body = hashlib.sha256()
        self._input = hashlib.sha256()
        header = {
            "version": SHARD_VERSION,
            "index": index,
            "count": count,
            "batch_size": batch_size,
            "format": output_format,
        }
        output.write(_marker_line(HEADER, header, output_format))

    def hash_input(self, records: Iterable) -> Iterator:
        """The records unchanged, each hashed on its way (every shard reads the whole input)."""
        for record in records:
            sentence = record.sentence
            self._input.update(repr((sentence.tokens, record.text, record.markup)).encode())
            yield record

    def write(self, formatted: list[str]) -> None:
        """One batch's formatted records (an empty string is no record: markup in JSON)."""
        text = "".join(formatted)
        self._body.update(text.encode("utf-8"))
        self.records += sum(1 for record in formatted if record)
        self.output.write(text)

    def flush(self) -> None:
        self.output.flush()

    def finish(self) -> None:
        end = {
            "records": self.records,
            "records_sha256": self._body.hexdigest(),
            "input_sha256": self._input.hexdigest(),
        }
        self.output.write(_marker_line(END, end, self.output_format))
        self.output.flush()


@dataclass
class _Shard:
    path: str
    header: dict
    end: dict


def _lines(path: str) -> Iterator[bytes]:
    """The lines of a file as bytes, each with its ``\\n``."""
    try:
        with open(path, "rb") as stream:
            yield from stream
    except OSError as error:
        raise CrftagError(f"{path}: cannot read the shard ({error.strerror})") from None


def _check_shard(path: str, output_format: str | None) -> _Shard:
    """Header, records and end line of one shard, checked against each other."""
    lines = _lines(path)
    first = next(lines, b"")
    header = _read_marker(first, HEADER, output_format)
    if header is None or not isinstance(header[0], dict):
        raise CrftagError(
            f"{path}: not a shard of `crftag predict --shard I/N` (no shard header on line 1)"
        )
    header = header[0]
    blocks = header.get("format") == "conll"  # a CoNLL record ends at a blank line
    digest, records, last = hashlib.sha256(), 0, None
    for line in lines:
        if last is not None:
            digest.update(last)
            records += not blocks or not last.strip()
        last = line
    end = None if last is None else _read_marker(last, END, output_format)
    if end is None:
        raise CrftagError(f"{path}: truncated: no shard end line (its predict did not finish)")
    end = end[0]
    if end.get("records") != records:
        raise CrftagError(
            f"{path}: altered or truncated: {records} records, its end line says "
            f"{end.get('records')}"
        )
    if end.get("records_sha256") != digest.hexdigest():
        raise CrftagError(f"{path}: altered: its records' checksum differs from its end line's")
    return _Shard(path, header, end)


def _check_set(shards: list[_Shard], output_format: str | None, batch_size: int | None) -> None:
    """The shards are exactly shard 0/N .. N-1/N, in order, made alike from one input."""
    first = shards[0].header
    count = first.get("count")
    for position, shard in enumerate(shards):
        header, name = shard.header, shard.path
        if header.get("version") != SHARD_VERSION:
            raise CrftagError(f"{name}: shard version {header.get('version')!r}; expected 1")
        for key, wanted in (("count", count), ("format", first.get("format"))):
            if header.get(key) != wanted:
                raise CrftagError(
                    f"{name}: {key} {header.get(key)!r}, but {shards[0].path} has {wanted!r}"
                )
        if header.get("batch_size") != first.get("batch_size"):
            raise CrftagError(f"{name}: made with another --batch-size than {shards[0].path}")
        if shard.end.get("input_sha256") != shards[0].end.get("input_sha256"):
            raise CrftagError(f"{name}: tagged from other input than {shards[0].path}")
        if header.get("index") != position:
            _misplaced(shards, position, count)
    if len(shards) != count:
        missing = ", ".join(f"{i}/{count}" for i in range(len(shards), count))
        raise CrftagError(f"expected all {count} shards, got {len(shards)}: missing {missing}")
    if output_format is not None and first.get("format") != output_format:
        raise CrftagError(
            f"--format {output_format}: the shards were written as {first.get('format')}"
        )
    if batch_size is not None and first.get("batch_size") != batch_size:
        raise CrftagError(
            f"--batch-size {batch_size}: the shards were made with {first.get('batch_size')}"
        )


def _misplaced(shards: list[_Shard], position: int, count) -> None:
    index = shards[position].header.get("index")
    twice = [shard.path for shard in shards if shard.header.get("index") == index]
    if len(twice) > 1:
        raise CrftagError(f"shard {index}/{count} given {len(twice)} times: {', '.join(twice)}")
    raise CrftagError(
        f"{shards[position].path}: shard {index}/{count} given in place of {position}/{count}; "
        "give the shards in order"
    )


def _records(path: str, output_format: str) -> Iterator[str]:
    """The records of a shard, header and end line left out."""
    lines = _lines(path)
    next(lines, None)
    record: list[bytes] = []
    previous = None
    for line in lines:
        if previous is not None:
            record.append(previous)
            if output_format != "conll" or not previous.strip():
                yield b"".join(record).decode("utf-8")
                record = []
        previous = line


def merge_shards(
    paths: list[str],
    output_format: str | None,
    output: TextIO,
    batch_size: int | None = None,
) -> int:
    """Check that ``paths`` are shard 0/N .. N-1/N of one predict run, then interleave their
    records back into input order; return the number of records. ``output_format`` and
    ``batch_size``, where given, must be the shards' own."""
    if not paths:
        raise CrftagError("no shards given")
    try:
        shards = [_check_shard(path, output_format) for path in paths]
    except UnicodeDecodeError:
        raise CrftagError("a shard is not UTF-8 text") from None
    _check_set(shards, output_format, batch_size)
    chosen_format, size = shards[0].header["format"], shards[0].header["batch_size"]
    try:
        streams = [_records(path, chosen_format) for path in paths]
        count = 0
        while True:
            wrote = 0
            for stream in streams:
                for record in itertools.islice(stream, size):
                    output.write(record)
                    wrote += 1
            if not wrote:
                return count
            count += wrote
    except UnicodeDecodeError as error:
        raise CrftagError(f"a shard is not UTF-8 text ({error.reason})") from None
