"""Tag a file of texts with Spark: one text a line in, `crftag predict --format jsonl`'s records
out, in input order.

    python examples/cluster/spark_predict.py TEXTS OUT.jsonl -m MODEL [--master local[2]]

The model file is shipped to every executor once (`SparkContext.addFile`) and loaded once per
Python worker; `mapInArrow` hands it each partition's rows as Arrow batches
(`crftag.inference.cluster.spark_tagging`). Each line is numbered and its batch of 64 lines
kept in one partition, in order, so every batch is one of `crftag predict`'s and the records
are the same bytes. On a real cluster, read the texts where they live (`spark.read.parquet`)
and write the table instead of collecting it (`tagged.write.parquet`).
"""

from __future__ import annotations

import argparse
import os
import sys

from pyspark.sql import SparkSession

from crftag.errors import CrftagError
from crftag.inference.cluster import check_files, spark_schema, spark_tagging, write_records
from crftag.modelfiles.registry import resolve_model_path

BATCH = 64  # rows per batch, crftag predict's default --batch-size


def tagged_frame(spark: SparkSession, texts: str, model_file: str, partitions: int):
    """The texts as a DataFrame of answer columns (`output_schema`), with each line's number."""
    spark.sparkContext.addFile(model_file)
    numbered = spark.sparkContext.textFile(os.path.abspath(texts)).zipWithIndex()
    rows = numbered.map(lambda pair: (pair[0], pair[1], pair[1] // BATCH))
    lines = spark.createDataFrame(rows, "text string, line bigint, batch bigint")
    # A batch's rows in one partition and in order: each is tagged whole, as predict tags it.
    lines = lines.repartition(partitions, "batch").sortWithinPartitions("line")
    tagging = spark_tagging(os.path.basename(model_file), batch_size=BATCH)
    return lines.mapInArrow(tagging, spark_schema("text string, line bigint, batch bigint"))


def main() -> None:
    parser = argparse.ArgumentParser(description="Tag a file of texts with Spark.")
    parser.add_argument("texts", help="one text a line")
    parser.add_argument("output", help="JSON lines, one record per text")
    parser.add_argument("-m", "--model", default="en-ner", help="a bundled name or a model file")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--partitions", type=int, default=4)
    arguments = parser.parse_args()
    try:
        check_files(arguments.texts, arguments.output)
        # The one file each executor loads with crftag.load: a bundled name's shipped export,
        # a run directory's model.pt, or the file given.
        model_file = resolve_model_path(arguments.model)
    except CrftagError as error:
        sys.exit(f"crftag: error: {error}")
    # Local workers run this interpreter, which has crftag; a cluster's come from its config.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master(arguments.master)
        .appName("crftag")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        tagged = tagged_frame(
            spark, arguments.texts, os.path.abspath(model_file), arguments.partitions
        )
        # Kept, so that sorting (which samples the lines first) does not tag them twice.
        records = tagged.select("line", "record").persist()
        rows = records.orderBy("line").select("record").toLocalIterator()
        write_records((row.record for row in rows), arguments.output)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
