"""Merging sharded predict outputs: ``predict --shard I/N`` writes every N-th batch of records,
and :func:`merge_shards` interleaves the N outputs back into input order."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import TextIO

__all__ = ["merge_shards", "read_records"]


def read_records(stream: TextIO, output_format: str) -> Iterator[str]:
    """The records of one predict output: a line of JSON, or CoNLL lines up to and including
    the blank line that ends each record (an empty sentence is a lone blank line)."""
    if output_format == "jsonl":
        yield from stream
        return
    record: list[str] = []
    for line in stream:
        record.append(line)
        if not line.strip():
            yield "".join(record)
            record = []
    if record:
        yield "".join(record)


def merge_shards(paths: list[str], output_format: str, output: TextIO, batch_size: int = 64) -> int:
    """Interleave the outputs of ``predict --shard 0/N ... N-1/N`` (given in shard order, made
    with this ``batch_size``) back into input order; return the number of records."""
    handles = [open(path, encoding="utf-8") for path in paths]  # noqa: SIM115 - closed below
    try:
        streams = [read_records(handle, output_format) for handle in handles]
        count = 0
        while True:
            wrote = 0
            for stream in streams:
                for record in itertools.islice(stream, batch_size):
                    output.write(record)
                    wrote += 1
            if not wrote:
                return count
            count += wrote
    finally:
        for handle in handles:
            handle.close()
