"""Tagging with several processes on one machine: ``crftag predict --jobs N``.

This process reads the inputs once, in order (standard input streamed as it comes, never copied),
and cuts them into the batches one process would tag; N worker processes, each holding the model,
tag the batches; their answers are written here in input order as soon as each batch's turn
comes. At most 2N batches are in flight, so memory stays bounded and an endless input streams.
Every batch is the one a single process tags, computed the same way, so the output is the same
bytes as one process writes, up to and including the records before a bad line.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_context
from typing import TYPE_CHECKING, TextIO

from crftag.data.labelled import COLUMN_FORMATS
from crftag.errors import CrftagError
from crftag.inference import loading
from crftag.inference.streaming import (
    BatchSettings,
    PredictOptions,
    Record,
    batches_of,
    input_records,
    tag_batch,
)

if TYPE_CHECKING:
    from crftag.inference.base import TaggerBase

__all__ = ["predict_in_processes"]

# Batches handed out ahead of the one being written, per worker: enough to keep every worker
# busy while the next answer is awaited, few enough that an endless input stays in memory bounds.
IN_FLIGHT_PER_WORKER = 2

_worker_tagger: TaggerBase | None = None  # each worker process's model, loaded once


def predict_in_processes(
    jobs: int, files: list[str], options: PredictOptions, output: TextIO
) -> int:
    """Tag ``files`` (``-`` is stdin) with ``jobs`` worker processes and write the records to
    ``output`` in input order: the same bytes as one process writes. Return the number of
    sentences. An input error is raised after the records before it are written, as in one
    process; a worker's error (the model cannot be loaded) is raised as it is.

    Workers keep torch's thread count: matrix products round differently with another count,
    and the output is to be byte-for-byte what one process writes. Set OMP_NUM_THREADS to share
    the cores out instead (tags stay the same; probabilities may differ in their last digits).
    """
    if options.input_format == "doc":
        raise CrftagError(
            "--jobs: document input is tagged a whole document at a time; tag it in one process"
        )
    # spawn, not fork: a forked child would inherit torch's thread pool and locks mid-state.
    with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
        word_column, document_context = pool.submit(_model_facts, options).result()
        batches = _input_batches(files, options, word_column, document_context)
        return _tag_in_order(pool, batches, options, IN_FLIGHT_PER_WORKER * jobs, output)


def _input_batches(files, options, word_column, document_context):
    """The batches one process cuts from ``files``, lazily."""
    records = input_records(
        files, options.input_format, word_column, options.on_error, options.output_format
    )
    whole_documents = document_context and options.input_format in COLUMN_FORMATS
    return batches_of(records, options.batch_size, whole_documents)


def _tag_in_order(
    pool: ProcessPoolExecutor, batches, options: PredictOptions, window: int, output: TextIO
) -> int:
    """Submit batches, at most ``window`` ahead, while a writer thread writes each answer as
    soon as it and every one before it are in: reading waits on the input, writing on the
    workers, and neither holds the other up (a pause in the input does not hold back answers
    that are ready). An error while reading the input is raised once every batch read before
    it has been written; an error while writing (a closed pipe) once reading has stopped."""
    answers: queue.Queue[Future | None] = queue.Queue(maxsize=window)
    writer = _InOrderWriter(answers, output)
    writer.start()
    try:
        for batch in batches:
            if writer.error is not None:
                break
            answers.put(pool.submit(_tag, batch, options))
    finally:
        answers.put(None)
        writer.join()
    if writer.error is not None:
        raise writer.error
    return writer.sentences


class _InOrderWriter(threading.Thread):
    """Writes the answers of the futures put in ``answers``, in order, until None. After an
    error it keeps taking futures (so the reader never waits on a full queue) and keeps the
    error for the reader to raise."""

    def __init__(self, answers: queue.Queue, output: TextIO) -> None:
        super().__init__(name="crftag-jobs-writer", daemon=True)
        self.answers, self.output = answers, output
        self.sentences = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        while (answer := self.answers.get()) is not None:
            if self.error is not None:
                answer.cancel()
                continue
            try:
                text, sentences = answer.result()
                self.output.write(text)
                self.output.flush()
                self.sentences += sentences
            except BaseException as error:  # noqa: BLE001 -- handed to the reader to raise
                self.error = error


def _tagger(options: PredictOptions) -> TaggerBase:
    """The worker's model, loaded on its first task (a load error then reaches the user as the
    task's error, one line, where an initializer's would only break the pool)."""
    global _worker_tagger
    if _worker_tagger is None:
        _worker_tagger = loading.load(options.model, options.device)
    return _worker_tagger


def _model_facts(options: PredictOptions) -> tuple[int | None, bool]:
    """What reading the input needs to know of the model: its word column, and whether it
    tags whole documents of column input together (document context)."""
    tagger = _tagger(options)
    return tagger.config.data.word_column, tagger.document_context


def _tag(batch: list[Record], options: PredictOptions) -> tuple[str, int]:
    """A worker's job: one batch's records as text, and its number of sentences."""
    settings = BatchSettings(
        options.output_format,
        options.batch_size,
        options.probs,
        options.nbest,
        options.min_confidence,
        options.token_offsets,
        options.input_format in COLUMN_FORMATS,
    )
    text = "".join(tag_batch(_tagger(options), batch, settings))
    return text, sum(not record.markup for record in batch)
