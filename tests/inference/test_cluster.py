"""The engines' batch functions without the engines: a table of texts in, predict's records
out, row for row, and Arrow batches re-cut into whole groups of rows."""

import json
import subprocess
import sys

import pytest

pa = pytest.importorskip("pyarrow")

from crftag.inference.cluster import (  # noqa: E402
    RayTagger,
    output_schema,
    regrouped,
    spark_schema,
    tag_table,
)
from crftag.inference.loading import load  # noqa: E402

TEXTS = [
    "John Smith met Mary Jones in Berlin .",
    "",
    "Zoë flew to Zürich on Monday .",
    "The European Union rejected the call , Reuters said .",
] * 20


@pytest.fixture(scope="module")
def predicted(tmp_path_factory):
    """crftag predict --format jsonl's lines for TEXTS, and batch size 8's."""
    texts = tmp_path_factory.mktemp("texts") / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    lines = {}
    for batch_size in (64, 8):
        command = [sys.executable, "-m", "crftag", "predict", "-m", "en-ner", "--format", "jsonl"]
        command += ["--batch-size", str(batch_size), str(texts)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        lines[batch_size] = done.stdout.splitlines()
    return lines


def test_ray_tagger_gives_predicts_records_and_columns(predicted):
    table = pa.table({"text": TEXTS, "id": list(range(len(TEXTS)))})
    tagged = RayTagger("en-ner")(table)
    assert tagged.schema == output_schema(table.schema)
    assert tagged.column("id").to_pylist() == list(range(len(TEXTS)))
    assert tagged.column("record").to_pylist() == predicted[64]
    records = [json.loads(line) for line in predicted[64]]
    assert tagged.column("tags").to_pylist() == [record["tags"] for record in records]
    assert tagged.column("spans").to_pylist() == [record["spans"] for record in records]
    assert tagged.column("probability").to_pylist() == [r["probability"] for r in records]
    first = tagged.column("spans").to_pylist()[0][0]
    assert (first["start_char"], first["end_char"], first["label"]) == (0, 10, "PER")


def test_batch_size_cuts_the_rows_as_predict_does(predicted):
    tagger = load("en-ner")
    table = pa.table({"body": TEXTS})
    tagged = tag_table(tagger, table, text_column="body", batch_size=8)
    assert tagged.column("record").to_pylist() == predicted[8]


def test_a_missing_text_is_an_empty_line(predicted):
    tagged = tag_table(load("en-ner"), pa.table({"text": pa.array([None], pa.string())}))
    assert tagged.column("record").to_pylist() == [predicted[64][1]]
    assert tagged.column("spans").to_pylist() == [[]]


def test_regrouped_cuts_only_between_groups():
    groups = [0] * 5 + [1] * 5 + [2] * 3
    table = pa.table({"batch": groups, "text": [str(i) for i in range(13)]})
    batches = table.to_batches(max_chunksize=4)  # cuts inside groups 0, 1 and 2
    tables = list(regrouped(iter(batches)))
    for piece in tables:
        ids = piece.column("batch").to_pylist()
        assert ids and all(groups.count(i) == ids.count(i) for i in set(ids))
    assert [t for piece in tables for t in piece.column("text").to_pylist()] == [
        str(i) for i in range(13)
    ]


def test_without_a_batch_column_each_batch_passes_as_it_is():
    batches = pa.table({"text": list("abcdef")}).to_batches(max_chunksize=4)
    assert [len(piece) for piece in regrouped(iter(batches))] == [4, 2]


def test_the_spark_schema_names_every_answer_column():
    ddl = spark_schema("text string, line bigint")
    assert ddl.startswith("text string, line bigint, tags array<string>, spans array<struct<")
    assert "confidence: double" in ddl and ddl.endswith("probability double, record string")
