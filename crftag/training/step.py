"""One training step, and the batches an epoch runs it on.

:func:`train_step` is the step that ``crftag train`` runs and the speed benchmarks time; the
batches come from :func:`epoch_batches` and :func:`training_batch`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

import torch

from crftag.config.sections import TrainConfig
from crftag.data.batching import Batch, build_batch
from crftag.data.indices import bucketed_batches, document_batches
from crftag.data.vocab import UNKNOWN_INDEX
from crftag.nn.fused_lstm import loop_threads
from crftag.training.augment import reencoded
from crftag.training.corpus import TrainingSet

__all__ = ["drop_singletons", "epoch_batches", "train_step", "training_batch", "update"]


def train_step(
    network: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    batch: Batch,
    settings: TrainConfig,
) -> torch.Tensor:
    """One update on ``batch``: the CRF's negative log-likelihood, its gradient (clipped to
    ``train.clip_grad_norm``), and the optimizer's step. ``network`` is the model, or its
    DistributedDataParallel wrapper whose ``forward`` is the loss. Returns the loss, a 0-d
    detached tensor (summed or averaged over the batch's sentences, per
    ``train.loss_reduction``), left on its device so the step waits for nothing."""
    return update(
        network,
        optimizer,
        lambda: network(batch, reduction=settings.loss_reduction, amp=settings.amp),
        batch.words.device,
        settings,
    )


def update(
    network: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_of: Callable[[], torch.Tensor],
    device: torch.device,
    settings: TrainConfig,
) -> torch.Tensor:
    """One update on the loss ``loss_of()`` computes (0-d): its gradient, clipped to
    ``train.clip_grad_norm``, and the optimizer's step; the loss returned detached."""
    with _step_threads(device):
        loss = loss_of()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if settings.clip_grad_norm:
            torch.nn.utils.clip_grad_norm_(network.parameters(), settings.clip_grad_norm)
        optimizer.step()
    return loss.detach()


@contextmanager
def _step_threads(device: torch.device) -> Iterator[None]:
    """On the CPU, a step's torch operations run on the calling thread, and the compiled
    BiLSTM loops alone take a second thread (as many as torch had, at most two), their own
    partner thread (crftag/runtime/_lstm.c), not OpenMP's pool. A step's operations are on a
    batch of a few hundred words, each too small to gain much from a second thread; as OpenMP
    parallel regions, the pool's waiting thread either spins for a core between them (unfair to
    other processes, docs/cpus.md) or sleeps and is woken for each (a third of the step's speed
    on some CPUs). Torch's thread count is restored after the step."""
    if device.type != "cpu":
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with loop_threads(threads):
            yield
    finally:
        torch.set_num_threads(threads)


def epoch_batches(
    training: TrainingSet,
    batch_size: int,
    rng: random.Random,
    *,
    whole_documents: bool,
    sort_documents: bool = False,
) -> list[list[int]]:
    """One epoch's batches as lists of sentence indices, in a fresh random order: sentences of
    similar length together, or whole documents (for a model with document context), those of
    similar longest sentence together with ``sort_documents`` (``train.sort_documents``)."""
    if whole_documents:
        lengths = training.lengths if sort_documents else None
        return document_batches(training.documents, batch_size, rng, lengths)
    return bucketed_batches(training.lengths, batch_size, rng)


def training_batch(
    training: TrainingSet,
    rows: list[int],
    *,
    document_context: bool,
    singletons: torch.Tensor,
    word_dropout: float,
    changed: Mapping[int, tuple[str, ...]] | None = None,
) -> Batch:
    """The batch of sentences ``rows``, on the CPU, with word dropout applied; a sentence in
    ``changed`` (the epoch's augmentation, :func:`crftag.training.augment.epoch_changes`) is
    read as its changed tokens."""
    changed = changed or {}
    vocabularies = training.vocabularies
    batch = build_batch(
        [changed.get(i, training.sentences[i].tokens) for i in rows],
        vocabularies,
        encoded=[
            reencoded(training.encoded[i], changed[i], vocabularies)
            if i in changed
            else training.encoded[i]
            for i in rows
        ],
        documents=[training.documents[i] for i in rows] if document_context else None,
    )
    if word_dropout > 0:
        batch.words = drop_singletons(batch.words, singletons, word_dropout)
    return batch


def drop_singletons(
    words: torch.Tensor, singletons: torch.Tensor, probability: float
) -> torch.Tensor:
    """words (B, T) long with each word seen once in training (``singletons``, (V,) bool)
    replaced by the unknown word with ``probability`` (Lample et al. 2016), so the model
    learns what to do with words it has never seen."""
    dropped = singletons[words] & (torch.rand(words.shape) < probability)
    return words.masked_fill(dropped, UNKNOWN_INDEX)
