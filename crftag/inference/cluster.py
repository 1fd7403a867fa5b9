"""Tagging as a batch function of a data engine: a column of texts in, a row of answers out.

:func:`tag_table` tags an Arrow table's text column the way ``crftag predict --format jsonl``
tags text lines (tokenized, each line a document of its own, in batches of ``batch_size``
rows) and adds the columns of :data:`SCHEMA_FIELDS`: the tags, the spans with their character
offsets and confidences, the sequence's score and probability, and the whole JSON lines record.
:class:`RayTagger` is the callable class for Ray Data's ``map_batches`` (the model loaded once
per worker); :func:`spark_tagging` the function for Spark's ``mapInArrow``, with the model
file shipped to each executor by ``SparkContext.addFile``. Needs ``pyarrow``, which both
engines install. The network's arithmetic depends in its last bits on which sentences share a
batch, so a record equals ``crftag predict``'s when its batch is one of predict's: the
``batch_size`` rows counted from the first line (docs/cluster.md).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence

from crftag.data.atomic import atomic_output
from crftag.data.conll import Sentence
from crftag.data.tokenize import tokenize
from crftag.errors import CrftagError
from crftag.inference import loading
from crftag.inference.streaming import BatchSettings, Record, tag_batch

__all__ = [
    "SPAN_FIELDS",
    "RayTagger",
    "check_files",
    "output_schema",
    "spark_schema",
    "spark_tagging",
    "tag_table",
    "tag_texts",
    "write_records",
]

# (name, Arrow type) of each span's fields, as crftag predict --format jsonl writes them.
SPAN_FIELDS = [
    ("start", "int64"),
    ("end", "int64"),
    ("start_char", "int64"),
    ("end_char", "int64"),
    ("label", "string"),
    ("text", "string"),
    ("confidence", "float64"),
]


def output_schema(schema):
    """The Arrow schema of :func:`tag_table`'s output: the input's columns, then ``tags``,
    ``spans``, ``score``, ``probability`` and ``record`` (the JSON lines record)."""
    import pyarrow as pa

    span = pa.struct([(name, pa.type_for_alias(kind)) for name, kind in SPAN_FIELDS])
    added = [
        ("tags", pa.list_(pa.string())),
        ("spans", pa.list_(span)),
        ("score", pa.float64()),
        ("probability", pa.float64()),
        ("record", pa.string()),
    ]
    return pa.schema([*schema, *(pa.field(name, kind) for name, kind in added)])


def spark_schema(input_columns: str) -> str:
    """Spark's DDL of :func:`output_schema` for input columns in DDL (``"text string"``)."""
    names = {"int64": "bigint", "string": "string", "float64": "double"}
    span = ", ".join(f"{name}: {names[kind]}" for name, kind in SPAN_FIELDS)
    return (
        f"{input_columns}, tags array<string>, spans array<struct<{span}>>, score double, "
        "probability double, record string"
    )


def tag_texts(tagger, texts: Sequence[str | None], batch_size: int = 64) -> list[str]:
    """The ``crftag predict --format jsonl`` record of each text line, as the JSON line it
    writes without its line end, tagged ``batch_size`` lines at a time from the first (a
    missing text is an empty line)."""
    settings = BatchSettings("jsonl", batch_size, None, 1, 0.0, False, False)
    records = []
    for start in range(0, len(texts), batch_size):
        batch = []
        for number, text in enumerate(texts[start : start + batch_size], start + 1):
            line = text or ""
            sentence = Sentence(tuple(tokenize(line)) if line else (), None, number)
            # As in predict's text input, every line is a document of its own.
            batch.append(Record(sentence, document=("row", number), text=line))
        records += [line.rstrip("\n") for line in tag_batch(tagger, batch, settings)]
    return records


def tag_table(tagger, table, text_column: str = "text", batch_size: int = 64):
    """``table`` (a ``pyarrow.Table`` or ``RecordBatch``) with the answer columns of
    :func:`output_schema` added for its ``text_column``, row for row."""
    import pyarrow as pa

    texts = table.column(text_column).to_pylist()
    lines = tag_texts(tagger, texts, batch_size)
    records = [json.loads(line) for line in lines]
    schema = output_schema(table.schema)
    columns = {
        "tags": [record["tags"] for record in records],
        "spans": [record["spans"] for record in records],
        "score": [record["score"] for record in records],
        "probability": [record["probability"] for record in records],
        "record": lines,
    }
    arrays = [*table.columns]
    arrays += [pa.array(values, type=schema.field(name).type) for name, values in columns.items()]
    return pa.Table.from_arrays(arrays, schema=schema)


class RayTagger:
    """For ``ds.map_batches(RayTagger, fn_constructor_kwargs={"model": ...},
    batch_format="pyarrow", batch_size=64, concurrency=N)``: each of the N actors loads the
    model once and tags the batches it is handed (:func:`tag_table`)."""

    def __init__(self, model: str = "en-ner", text_column: str = "text", batch_size: int = 64):
        self.tagger = loading.load(model, "cpu")
        self.text_column = text_column
        self.batch_size = batch_size

    def __call__(self, batch):
        return tag_table(self.tagger, batch, self.text_column, self.batch_size)


_spark_taggers: dict[str, object] = {}  # model file -> its tagger, one per Python worker


def spark_tagging(model_file: str, text_column: str = "text", batch_size: int = 64):
    """The function for ``df.mapInArrow(function, schema)``: tags each partition's Arrow
    batches (:func:`tag_table`) with the model at ``SparkFiles.get(model_file)``, the file
    the driver shipped with ``SparkContext.addFile``, loaded once per Python worker.

    With a ``batch`` column (each row's line number // ``batch_size``, the rows of one batch
    in one partition, in order) it tags each batch whole, however Arrow cuts the partition,
    so every record is predict's (:func:`regrouped`)."""

    def tag_partition(batches: Iterator) -> Iterator:
        from pyspark import SparkFiles

        path = SparkFiles.get(model_file)
        if path not in _spark_taggers:
            _spark_taggers[path] = loading.load(path, "cpu")
        tagger = _spark_taggers[path]
        for table in regrouped(batches):
            yield from tag_table(tagger, table, text_column, batch_size).to_batches()

    return tag_partition


def regrouped(batches: Iterator) -> Iterator:
    """Arrow record batches re-cut into tables of whole groups of the ``batch`` column (rows
    of one group arrive together); without that column, each batch as it is."""
    import pyarrow as pa

    pending = []
    for batch in batches:
        if "batch" not in batch.schema.names:
            yield pa.Table.from_batches([batch])
            continue
        pending.append(batch)
        table = pa.Table.from_batches(pending)
        groups = table.column("batch").to_pylist()
        last = groups[-1]
        whole = groups.index(last)  # rows before the last group's first are complete groups
        if whole:
            yield table.slice(0, whole)
        pending = table.slice(whole).to_batches()
    if pending:
        yield pa.Table.from_batches(pending)


def check_files(texts: str, output: str) -> None:
    """A one-line :class:`CrftagError` before the engine starts if ``texts`` is not a file to
    read or ``output`` is that same file (the engine reads the texts lazily, while the records
    are written)."""
    if not os.path.isfile(texts):
        raise CrftagError(f"{texts}: no such file of texts")
    if os.path.exists(output) and os.path.samefile(texts, output):
        raise CrftagError(f"{output}: both the texts and the output; give another output")


def write_records(records: Iterable[str], path: str) -> int:
    """Write JSON lines records (without line ends) to ``path``, whole or not at all, say so
    on stderr, and return how many there were."""
    count = 0
    with atomic_output(path) as output:
        for record in records:
            output.write(record + "\n")
            count += 1
    print(f"tagged {count} texts into {path}", file=sys.stderr)
    return count
