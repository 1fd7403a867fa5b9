"""Micro-batching: concurrent requests gathered into one tagging call, answered one by one.

Requests wait in a queue. The batcher takes everything queued (and, when that is little, waits
up to ``max_wait_ms`` for more) until ``max_batch_tokens``, then tags the batch in one worker
thread while the event loop keeps reading requests, so the next batch gathers during this one.
Requests with equal options share one :meth:`TaggerBase.predict` call, which sorts sentences by
length as predict does; every text is a document of its own, so a request's tags never depend
on which requests shared its batch (its floating-point sums may differ in their last bits, as
between batches of ``crftag predict``: docs/serve.md).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from crftag.data.annotations import Document
from crftag.inference.documents import tag_documents

if TYPE_CHECKING:
    from crftag.inference.base import TaggerBase
    from crftag.serve.metrics import Metrics
    from crftag.serve.requests import PredictRequest

__all__ = ["MicroBatcher"]

LOG = logging.getLogger("crftag.serve")


@dataclass
class _Pending:
    """A request in the queue, its size in tokens (roughly: whitespace words) and its answer."""

    request: PredictRequest
    tokens: int
    answer: asyncio.Future = field(repr=False)


def _size(request: PredictRequest) -> int:
    return sum(len(item) if isinstance(item, list) else len(item.split()) for item in request.items)


class MicroBatcher:
    """Gathers requests for the taggers (model name -> tagger) and answers each with its
    records. ``start`` in the server's event loop before the first request, ``stop`` to drain."""

    def __init__(
        self,
        taggers: dict[str, TaggerBase],
        metrics: Metrics,
        max_batch_tokens: int = 4096,
        max_wait_ms: float = 0.0,
    ) -> None:
        self.taggers = taggers
        self.metrics = metrics
        self.max_batch_tokens = max_batch_tokens
        self.max_wait = max_wait_ms / 1000
        self._queue: asyncio.Queue[_Pending | None] = asyncio.Queue()
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="crftag-tagger")
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Answer everything queued, then stop."""
        if self._task is not None:
            self._queue.put_nowait(None)
            await self._task
        self._worker.shutdown(wait=True)

    async def submit(self, request: PredictRequest) -> list[dict]:
        """The records answering ``request`` (:meth:`Prediction.to_dict`), one per text, token
        list or document."""
        answer = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Pending(request, _size(request), answer))
        return await answer

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch, stopping = await self._gather()
            if batch:
                try:
                    records = await loop.run_in_executor(self._worker, self._answer, batch)
                except Exception as error:  # a bug, not a bad request: every waiter hears it
                    LOG.exception("tagging a batch failed")
                    for pending in batch:
                        if not pending.answer.done():
                            pending.answer.set_exception(error)
                else:
                    for pending, answer in zip(batch, records, strict=True):
                        if not pending.answer.done():  # done: its client went away
                            pending.answer.set_result(answer)
            if stopping:
                return

    async def _gather(self) -> tuple[list[_Pending], bool]:
        """(the next batch, whether the stop marker was reached)."""
        first = await self._queue.get()
        if first is None:
            return [], True
        batch, tokens = [first], first.tokens
        deadline = asyncio.get_running_loop().time() + self.max_wait
        while tokens < self.max_batch_tokens:
            try:
                pending = self._queue.get_nowait()
            except asyncio.QueueEmpty:
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    break
                try:
                    pending = await asyncio.wait_for(self._queue.get(), remaining)
                except TimeoutError:
                    break
            if pending is None:
                return batch, True
            batch.append(pending)
            tokens += pending.tokens
        return batch, False

    def _answer(self, batch: list[_Pending]) -> list[list[dict]]:
        """Each request's records; runs in the tagging thread."""
        answers: list[list[dict] | None] = [None] * len(batch)
        key = lambda index: (batch[index].request.kind, batch[index].request.options)  # noqa: E731
        for (kind, _), group in itertools.groupby(sorted(range(len(batch)), key=key), key=key):
            members = list(group)
            requests = [batch[i].request for i in members]
            tagger = self.taggers[requests[0].model]
            tag = _tag_documents if kind == "documents" else _tag_sentences
            for index, records in zip(members, tag(tagger, requests, self.metrics), strict=True):
                answers[index] = records
        return answers


def _options(request: PredictRequest) -> dict:
    return {
        "probs": request.probs,
        "nbest": request.nbest,
        "min_confidence": request.min_confidence,
        "token_offsets": request.token_offsets,
    }


def _tag_sentences(
    tagger: TaggerBase, requests: list[PredictRequest], metrics: Metrics
) -> list[list[dict]]:
    """One predict call for the sentences of requests with equal options, each text a document
    of its own (as every line of ``crftag predict``), answered request by request."""
    sentences = [item for request in requests for item in request.items]
    predictions = tagger.predict(
        sentences, documents=list(range(len(sentences))), **_options(requests[0])
    )
    metrics.tagged(len(predictions), sum(len(p.tokens) for p in predictions))
    records = iter([prediction.to_dict() for prediction in predictions])
    return [list(itertools.islice(records, len(request.items))) for request in requests]


def _tag_documents(
    tagger: TaggerBase, requests: list[PredictRequest], metrics: Metrics
) -> list[list[dict]]:
    """Documents (``predict --input-format doc``), each request's tagged together."""
    answers = []
    for request in requests:
        documents = [
            Document(text=text, spans=(), source="request", line=number)
            for number, text in enumerate(request.items, 1)
        ]
        records = []
        for _, prediction in tag_documents(tagger, documents, **_options(request)):
            records.append(prediction.to_dict())
            metrics.tagged(len(prediction.sentences or []), len(prediction.tokens))
        answers.append(records)
    return answers
