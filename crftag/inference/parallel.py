"""Tagging with several processes on one machine: ``crftag predict --jobs N`` runs N workers on
interleaved shards of the input (``--shard I/N``) and merges their outputs in input order."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from typing import TextIO

from crftag.inference.streaming import merge_shards

__all__ = ["predict_in_processes"]


def predict_in_processes(
    jobs: int,
    files: list[str],
    options: list[str],
    output_format: str,
    batch_size: int,
    output: TextIO,
) -> int:
    """Run ``crftag predict FILES OPTIONS --shard I/N`` for I < N = ``jobs`` and write the merged
    records to ``output``; return the exit status (the first failing worker's, else 0).

    Standard input is first copied to a temporary file, since every worker reads all of it.
    Workers keep torch's thread count: matrix products round differently with another count,
    and the merged output is to be byte-for-byte what one process writes. Set OMP_NUM_THREADS
    to share the cores out instead (tags stay the same; probabilities may differ in their last
    digits).
    """
    with tempfile.TemporaryDirectory(prefix="crftag-jobs-") as directory:
        if files == ["-"]:
            copy = os.path.join(directory, "stdin")
            with open(copy, "wb") as handle:
                shutil.copyfileobj(sys.stdin.buffer, handle)
            files = [copy]
        outputs = [os.path.join(directory, f"shard-{index}") for index in range(jobs)]
        workers = []
        for index, path in enumerate(outputs):
            with open(path, "wb") as sink:
                command = [
                    sys.executable,
                    "-m",
                    "crftag",
                    "predict",
                    *files,
                    *options,
                    "--shard",
                    f"{index}/{jobs}",
                ]
                workers.append(subprocess.Popen(command, stdout=sink))
        statuses = [worker.wait() for worker in workers]
        failed = next((status for status in statuses if status != 0), 0)
        if failed:
            return failed
        merge_shards(outputs, output_format, output, batch_size)
    return 0
