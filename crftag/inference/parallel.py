"""Tagging with several processes on one machine: ``crftag predict --jobs N`` runs N worker
processes, each loading the model and tagging one interleaved shard of the input
(:func:`~crftag.inference.streaming.predict_files` with ``shard=(I, N)``), and merges their
outputs back into input order."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import TextIO

from crftag.errors import CrftagError
from crftag.inference.shards import merge_shards, merge_until_short
from crftag.inference.streaming import PredictOptions, tag_files

__all__ = ["predict_in_processes"]


def predict_in_processes(
    jobs: int, files: list[str], options: PredictOptions, output: TextIO
) -> int:
    """Tag ``files`` (``-`` is stdin) with ``jobs`` worker processes and write the merged records
    to ``output``: the same bytes as one process writes. Return the number of sentences.

    Standard input is first copied to a temporary file, since every worker reads all of it. A
    worker's :class:`~crftag.errors.CrftagError` (the first, in shard order) is raised here, so
    it reaches the user as one line, as in one process; nothing is written then.

    Workers keep torch's thread count: matrix products round differently with another count,
    and the merged output is to be byte-for-byte what one process writes. Set OMP_NUM_THREADS
    to share the cores out instead (tags stay the same; probabilities may differ in their last
    digits).
    """
    with tempfile.TemporaryDirectory(prefix="crftag-jobs-") as directory:
        stdin_copy = None
        if "-" in files:
            stdin_copy = os.path.join(directory, "stdin")
            with open(stdin_copy, "wb") as handle:
                shutil.copyfileobj(sys.stdin.buffer, handle)
            files = [stdin_copy if path == "-" else path for path in files]
        outputs = [os.path.join(directory, f"shard-{index}") for index in range(jobs)]
        # spawn, not fork: a forked child would inherit torch's thread pool and locks mid-state.
        with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
            shards = [
                pool.submit(_tag_shard, options, files, (index, jobs), path)
                for index, path in enumerate(outputs)
            ]
            errors = [shard.exception() for shard in shards]
        failed = next((error for error in errors if error is not None), None)
        if isinstance(failed, CrftagError):
            # Every worker reads the whole input, so all stopped at the bad line: write what
            # one process writes before it, then its error, naming stdin as one process does.
            merge_until_short(outputs, options.output_format, output, options.batch_size)
            output.flush()
            message = str(failed).replace(stdin_copy or "\0", "<stdin>")
            raise type(failed)(message) from None
        if failed is not None:
            raise failed
        return merge_shards(outputs, options.output_format, output, options.batch_size)


def _tag_shard(
    options: PredictOptions, files: list[str], shard: tuple[int, int], output_path: str
) -> int:
    """One worker's job: tag shard ``(I, N)`` of ``files`` into ``output_path`` (UTF-8)."""
    with open(output_path, "w", encoding="utf-8") as output:
        return tag_files(options, files, output, shard=shard)
