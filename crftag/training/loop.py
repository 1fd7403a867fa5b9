"""The training loop: a generator over epochs, on one screen.

Everything it works on is set up beforehand: the run's moving parts (:class:`LoopRun`: the
model, its optimizer and where the run stands) and a :class:`Task`, what one kind of training
does within an epoch: its batches, how one is built, the step on it, the rate. A tagger's
training (:mod:`crftag.training.tagging_task`) and ``crftag pretrain``'s language models
(:mod:`crftag.training.pretrain_task`) are two tasks of this one loop. The evaluation, saving
and stop request come in as callables, so the same loop serves a run on disk, a run in memory,
and every rank of a distributed run.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import torch

from crftag.data.progress import progress_bar
from crftag.errors import CrftagError, TrainingInterrupted
from crftag.training.averaging import WeightAverage
from crftag.training.distributed import Group
from crftag.training.optimizers import set_learning_rate
from crftag.training.prefetch import prefetcher
from crftag.training.state import BestScoreTracker, EpochResult, RunState

__all__ = ["EpochResult", "LoopRun", "Task", "fit"]


class LoopRun(Protocol):
    """The moving parts of a run as the loop uses them (:class:`crftag.training.setup.Run`
    for a tagger)."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    average: WeightAverage
    state: RunState
    tracker: BestScoreTracker
    batch_order: random.Random  # the task may draw each epoch's batch order from it
    group: Group
    device: torch.device


class Task(Protocol):
    """What one kind of training does within the loop's epochs."""

    epochs: int  # the last epoch
    examples: int  # what an epoch's loss is a mean over: sentences, pieces of text
    tokens: int  # what tokens_per_second counts: words, characters
    average_from: int | None  # the first epoch whose weights are averaged; None or 0: none
    resume_command: str | None  # what continues a stopped run; None for a run in memory
    diverged_hint: str  # what to change when training diverges

    def learning_rate(self, epoch: int) -> float:
        """The rate of 1-based ``epoch``."""

    def epoch_batches(self, epoch: int, order: random.Random) -> list[list[int]]:
        """The epoch's batches of example indices, for every rank (the loop shards them)."""

    def batch_maker(self, epoch: int) -> Callable[[list[int]], tuple[int, Any]]:
        """make(rows) -> (examples, batch): run ahead of the step, on a thread of its own on a
        GPU, in the epoch's order."""

    def step(self, batch: Any, examples: int) -> torch.Tensor:
        """One update on ``batch``; its loss summed over its ``examples`` (0-d, detached)."""


def fit(
    run: LoopRun,
    task: Task,
    *,
    evaluate: Callable[[], float | None],
    save_best: Callable[[int, float | None], None],
    save_state: Callable[[], None] = lambda: None,
    stop_requested: Callable[[], int | None] = lambda: None,
    show_progress: bool = True,
    time_budget: float | None = None,
) -> Iterator[EpochResult]:
    """Train from where ``run`` stands to the task's last epoch, early stop, or the end of the
    time budget; yield each finished epoch.

    evaluate        the current model's dev score (None without dev), called on rank 0
    save_best       called on rank 0 with (epoch, dev score) when the tracker calls the model best
    save_state      makes the run resumable; called after every epoch and on a stop request
    stop_requested  polled after every batch; a signal number stops the run with
                    :class:`TrainingInterrupted` after ``save_state``
    time_budget     seconds of training in all, earlier processes' included (one process): the
                    batch that reaches it ends training, within its epoch
    """
    state, group = run.state, run.group
    while state.epoch <= task.epochs and not run.tracker.should_stop:
        epoch, started = state.epoch, time.perf_counter()
        if _out_of_time(state, started, time_budget):
            return

        # Set the rate.
        rate = task.learning_rate(epoch)
        set_learning_rate(run.optimizer, rate)

        # Run the epoch through the task's step; None: the time budget ended training in it.
        epoch_loss = _run_epoch(
            run, task, started, save_state, stop_requested, show_progress, time_budget
        )
        if epoch_loss is None:
            return
        _check_finite(run, task, epoch_loss, epoch)
        train_seconds = state.epoch_seconds + time.perf_counter() - started

        # Average, evaluate, and let the tracker decide on saving.
        if task.average_from and epoch >= task.average_from:
            run.average.add()  # every rank holds the same weights, so the same mean
        with run.average.applied():
            dev_score = group.broadcast(evaluate() if group.main else None)  # others wait here
            improved = run.tracker.update(dev_score)
            if improved and group.main:
                save_best(epoch, dev_score)

        # Record, make resumable, and yield.
        result = EpochResult(
            epoch=epoch,
            loss=float(epoch_loss) * group.world_size / task.examples,
            dev_score=dev_score,
            best=improved,
            seconds=state.epoch_seconds + time.perf_counter() - started,
            tokens_per_second=task.tokens / train_seconds,
            learning_rate=rate,
            averaged=run.average.count > 0,
        )
        state.finish_epoch(dataclasses.asdict(result), run.batch_order.getstate())
        save_state()
        yield result
        signal_number = group.any_signal(stop_requested())
        if signal_number is not None:
            raise TrainingInterrupted(signal_number, _stopped(task, f"after epoch {epoch}"))


def _run_epoch(
    run: LoopRun,
    task: Task,
    started: float,
    save_state: Callable[[], None],
    stop_requested: Callable[[], int | None],
    show_progress: bool,
    time_budget: float | None,
) -> torch.Tensor | None:
    """Run the rest of the epoch under way; return its summed loss (0-d, on the run's device;
    with several ranks, this rank's share), or None when the time budget ended it."""
    state, group = run.state, run.group
    run.model.train()
    run.batch_order.setstate(state.batch_order_state)
    batches = group.shard(task.epoch_batches(state.epoch, run.batch_order))
    make = task.batch_maker(state.epoch)
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
    with bar, prefetcher(make, batches[state.step :], run.device) as built:
        for examples, batch in built:
            epoch_loss += task.step(batch, examples)
            state.step += 1
            bar.update()
            signal_number = group.any_signal(stop_requested())
            if signal_number is not None:
                built.rewind()  # the generator as the next batch found it, for the resume file
                _pause(state, epoch_loss, started)
                save_state()
                where = f"at epoch {state.epoch}, batch {state.step} of {len(batches)}"
                raise TrainingInterrupted(signal_number, _stopped(task, where))
            if _out_of_time(state, started, time_budget):
                _pause(state, epoch_loss, started)
                return None
    return epoch_loss


def _pause(state: RunState, epoch_loss: torch.Tensor, started: float) -> None:
    """Record the part of the epoch done, which a resumed run goes on from."""
    state.epoch_loss = float(epoch_loss)
    state.epoch_seconds += time.perf_counter() - started


def _out_of_time(state: RunState, started: float, time_budget: float | None) -> bool:
    """Whether training so far has taken ``time_budget`` seconds: the finished epochs, and the
    epoch under way before and since ``started``."""
    if time_budget is None:
        return False
    finished = sum(result["seconds"] for result in state.history)
    return finished + state.epoch_seconds + time.perf_counter() - started >= time_budget


def _check_finite(run: LoopRun, task: Task, epoch_loss: torch.Tensor, epoch: int) -> None:
    """Stop before anything of the epoch is saved when its loss or the weights are not finite:
    a NaN model tags nothing. Every rank holds the same weights, so every rank stops."""
    loss = float(epoch_loss)
    if math.isfinite(loss) and all(bool(torch.isfinite(p).all()) for p in run.model.parameters()):
        return
    raise CrftagError(
        f"training diverged in epoch {epoch}: the loss ({loss}) or the weights are no longer "
        f"finite numbers, so nothing of this epoch is saved; {task.diverged_hint}"
    )


def _stopped(task: Task, where: str) -> str:
    message = f"interrupted {where}"
    if task.resume_command is not None:
        message += f"; continue with: {task.resume_command}"
    return message
