"""The training loop: a generator over epochs, on one screen.

Everything it works on is set up beforehand (:func:`crftag.training.setup.start_run`); the
evaluation, saving and stop request come in as callables, so the same loop serves a run on disk,
a run in memory, and every rank of a distributed run.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from crftag.data.batching import Batch
from crftag.data.progress import progress_bar
from crftag.errors import CrftagError, TrainingInterrupted
from crftag.training.augment import epoch_changes
from crftag.training.optimizers import learning_rate, set_learning_rate
from crftag.training.prefetch import prefetcher
from crftag.training.setup import Run
from crftag.training.step import epoch_batches, train_step, training_batch

__all__ = ["EpochResult", "fit"]


@dataclass(frozen=True)
class EpochResult:
    epoch: int
    loss: float  # mean NLL per training sentence
    dev_score: float | None  # entity micro F1 (spans) or token accuracy, in [0, 1]
    best: bool  # this epoch's model is the best so far and was saved
    seconds: float
    tokens_per_second: float
    learning_rate: float
    averaged: bool = False  # dev score and saved model are the weight average (train.average_from)


def fit(
    run: Run,
    *,
    evaluate: Callable[[], float | None],
    save_best: Callable[[int, float | None], None],
    save_state: Callable[[], None] = lambda: None,
    stop_requested: Callable[[], int | None] = lambda: None,
    show_progress: bool = True,
) -> Iterator[EpochResult]:
    """Train from where ``run`` stands to the last epoch or early stop; yield each epoch.

    evaluate        the current model's dev score (None without dev), called on rank 0
    save_best       called on rank 0 with (epoch, dev score) when the tracker calls the model best
    save_state      makes the run resumable; called after every epoch and on a stop request
    stop_requested  polled after every batch; a signal number stops the run with
                    :class:`TrainingInterrupted` after ``save_state``
    """
    settings, state, group = run.config.train, run.state, run.group
    total_tokens = sum(run.training.lengths)
    while state.epoch <= settings.epochs and not run.tracker.should_stop:
        epoch, started = state.epoch, time.perf_counter()

        # Set the rate.
        rate = learning_rate(settings, epoch)
        set_learning_rate(run.optimizer, rate)

        # Run the epoch through train_step.
        epoch_loss = _run_epoch(run, started, save_state, stop_requested, show_progress)
        _check_finite(run, epoch_loss, epoch)
        train_seconds = state.epoch_seconds + time.perf_counter() - started

        # Average, evaluate, and let the tracker decide on saving.
        if settings.average_from and epoch >= settings.average_from:
            run.average.add()  # every rank holds the same weights, so the same mean
        with run.average.applied():
            dev_score = group.broadcast(evaluate() if group.main else None)  # others wait here
            improved = run.tracker.update(dev_score)
            if improved and group.main:
                save_best(epoch, dev_score)

        # Record, make resumable, and yield.
        result = EpochResult(
            epoch=epoch,
            loss=float(epoch_loss) * group.world_size / len(run.training.sentences),
            dev_score=dev_score,
            best=improved,
            seconds=state.epoch_seconds + time.perf_counter() - started,
            tokens_per_second=total_tokens / train_seconds,
            learning_rate=rate,
            averaged=run.average.count > 0,
        )
        state.finish_epoch(dataclasses.asdict(result), run.batch_order.getstate())
        save_state()
        yield result
        signal_number = group.any_signal(stop_requested())
        if signal_number is not None:
            raise TrainingInterrupted(signal_number, _stopped(run, f"after epoch {epoch}"))


def _run_epoch(
    run: Run,
    started: float,
    save_state: Callable[[], None],
    stop_requested: Callable[[], int | None],
    show_progress: bool,
) -> torch.Tensor:
    """Run the rest of the epoch under way; return its summed loss (0-d, on the run's device;
    with several ranks, this rank's share)."""
    settings, state, group = run.config.train, run.state, run.group
    run.model.train()
    run.batch_order.setstate(state.batch_order_state)
    whole_documents = run.config.model.document_context
    order = epoch_batches(
        run.training,
        settings.batch_size,
        run.batch_order,
        whole_documents=whole_documents,
        sort_documents=settings.sort_documents,
    )
    batches = group.shard(order)
    changed = epoch_changes(run.training, run.config, state.epoch)
    epoch_loss = torch.tensor(state.epoch_loss, device=run.device)
    # one bar per run, rank 0's
    bar = progress_bar(
        show=show_progress and group.main,
        total=len(batches),
        initial=state.step,
        desc=f"epoch {state.epoch}",
        unit="batch",
        leave=False,
    )

    def make(rows: list[int]) -> tuple[int, Batch]:
        batch = training_batch(
            run.training,
            rows,
            document_context=whole_documents,
            singletons=run.singletons,
            word_dropout=settings.word_dropout,
            changed=changed,
        )
        return len(rows), batch

    with bar, prefetcher(make, batches[state.step :], run.device) as built:
        for sentences, batch in built:
            loss = train_step(run.network, run.optimizer, batch.to(run.device), settings)
            epoch_loss += loss * (sentences if settings.loss_reduction == "mean" else 1)
            state.step += 1
            bar.update()
            signal_number = group.any_signal(stop_requested())
            if signal_number is not None:
                built.rewind()  # the generator as the next batch found it, for the resume file
                state.epoch_loss = float(epoch_loss)
                state.epoch_seconds += time.perf_counter() - started
                save_state()
                where = f"at epoch {state.epoch}, batch {state.step} of {len(batches)}"
                raise TrainingInterrupted(signal_number, _stopped(run, where))
    return epoch_loss


def _check_finite(run: Run, epoch_loss: torch.Tensor, epoch: int) -> None:
    """Stop before anything of the epoch is saved when its loss or the weights are not finite:
    a NaN model tags nothing. Every rank holds the same weights, so every rank stops."""
    loss = float(epoch_loss)
    if math.isfinite(loss) and all(bool(torch.isfinite(p).all()) for p in run.model.parameters()):
        return
    raise CrftagError(
        f"training diverged in epoch {epoch}: the loss ({loss}) or the weights are no longer "
        "finite numbers, so nothing of this epoch is saved; lower train.lr, set "
        "train.clip_grad_norm, or check model.embeddings for extreme values"
    )


def _stopped(run: Run, where: str) -> str:
    message = f"interrupted {where}"
    if run.output_dir is not None:
        message += f"; continue with: crftag train --resume {run.output_dir}"
    return message
