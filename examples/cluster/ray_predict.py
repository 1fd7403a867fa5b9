"""Tag a file of texts with Ray Data: one text a line in, `crftag predict --format jsonl`'s
records out, in input order.

    python examples/cluster/ray_predict.py TEXTS OUT.jsonl -m MODEL [--actors 2] [--address auto]

Without --address, Ray starts a local cluster on this machine. Each actor loads the model once
(`crftag.inference.cluster.RayTagger`) and tags batches of 64 lines. The blocks are cut at
multiples of 64 lines so that every batch is one of `crftag predict`'s and the records are the
same bytes. On a real cluster, read the texts where they live (`ray.data.read_parquet`,
`read_text` of a bucket) and write the table instead of collecting it (`ds.write_parquet`).
"""

from __future__ import annotations

import argparse
import os
import sys

import ray

from crftag.errors import CrftagError
from crftag.inference.cluster import RayTagger, check_files, write_records
from crftag.modelfiles.registry import resolve_model_path

BATCH = 64  # rows per batch, crftag predict's default --batch-size


def tagged_dataset(texts: str, model: str, actors: int):
    """The texts of the file as a Ray dataset of answer columns (`output_schema`), in order."""
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True  # records come out in input order
    lines = ray.data.read_text(os.path.abspath(texts), drop_empty_lines=False)
    # Blocks of whole batches: a batch never straddles two blocks, so it is one of predict's.
    lines = lines.repartition(target_num_rows_per_block=BATCH * 16, strict=True)
    return lines.map_batches(
        RayTagger,
        fn_constructor_kwargs={"model": model, "batch_size": BATCH},
        batch_format="pyarrow",
        batch_size=BATCH,
        concurrency=actors,
        num_cpus=0.5,  # Ray Data needs a CPU free for reading the blocks
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="Tag a file of texts with Ray Data.")
    parser.add_argument("texts", help="one text a line")
    parser.add_argument("output", help="JSON lines, one record per text")
    parser.add_argument("-m", "--model", default="en-ner")
    parser.add_argument(
        "--actors", type=int, default=2, help="taggers (actors), each loading the model once"
    )
    parser.add_argument("--address", default=None, help="a running cluster (default: local)")
    arguments = parser.parse_args()
    try:
        check_files(arguments.texts, arguments.output)
        resolve_model_path(arguments.model)  # a missing model here, not in every actor
    except CrftagError as error:
        sys.exit(f"crftag: error: {error}")
    ray.init(address=arguments.address, include_dashboard=False, log_to_driver=False)
    try:
        # The actors may start elsewhere: a model file by its absolute path.
        model = arguments.model
        model = os.path.abspath(model) if os.path.exists(model) else model
        dataset = tagged_dataset(arguments.texts, model, arguments.actors)
        batches = dataset.select_columns(["record"]).iter_batches(batch_format="pyarrow")
        records = (record for batch in batches for record in batch.column("record").to_pylist())
        write_records(records, arguments.output)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
