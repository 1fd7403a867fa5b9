"""A tagger's training as the loop (:func:`crftag.training.loop.fit`) runs it: the epoch's
batches of sentences (sorted by length, or whole documents), built with word dropout and the
epoch's augmentation, :func:`crftag.training.step.train_step` on each, and the rate of
``train.lr``'s schedule."""

from __future__ import annotations

import random
from collections.abc import Callable

import torch

from crftag.data.batching import Batch
from crftag.training.augment import epoch_changes
from crftag.training.optimizers import learning_rate
from crftag.training.setup import Run
from crftag.training.step import epoch_batches, train_step, training_batch

__all__ = ["TaggingTask"]


class TaggingTask:
    """The :class:`crftag.training.loop.Task` of training ``run``'s tagger."""

    diverged_hint = (
        "lower train.lr, set train.clip_grad_norm, or check model.embeddings for extreme values"
    )

    def __init__(self, run: Run) -> None:
        self.run = run
        self.settings = run.config.train
        self.epochs = self.settings.epochs
        self.average_from = self.settings.average_from
        self.examples = len(run.training.sentences)
        self.tokens = sum(run.training.lengths)
        self.resume_command = (
            None if run.output_dir is None else f"crftag train --resume {run.output_dir}"
        )

    def learning_rate(self, epoch: int) -> float:
        return learning_rate(self.settings, epoch)

    def epoch_batches(self, epoch: int, order: random.Random) -> list[list[int]]:
        return epoch_batches(
            self.run.training,
            self.settings.batch_size,
            order,
            whole_documents=self.run.config.model.document_context,
            sort_documents=self.settings.sort_documents,
        )

    def batch_maker(self, epoch: int) -> Callable[[list[int]], tuple[int, Batch]]:
        """make(rows) -> (sentences, their batch on the CPU, with word dropout and the epoch's
        augmentation)."""
        run = self.run
        changed = epoch_changes(run.training, run.config, epoch)

        def make(rows: list[int]) -> tuple[int, Batch]:
            batch = training_batch(
                run.training,
                rows,
                document_context=run.config.model.document_context,
                singletons=run.singletons,
                word_dropout=self.settings.word_dropout,
                changed=changed,
            )
            return len(rows), batch

        return make

    def step(self, batch: Batch, examples: int) -> torch.Tensor:
        run, settings = self.run, self.settings
        loss = train_step(run.network, run.optimizer, batch.to(run.device), settings)
        return loss * (examples if settings.loss_reduction == "mean" else 1)
