"""``crftag distill``'s training as the loop (:func:`crftag.training.loop.fit`) runs it: each
epoch, the labelled training sentences in batches of their own, trained as ``crftag train``
trains them (:class:`crftag.training.tagging_task.TaggingTask`), and the unlabelled sentences a
teacher labelled (a :class:`crftag.inference.teacher_store.TeacherStore`), all of them or
``distill.sentences`` drawn afresh, in batches of their own; the two kinds of batch in one
shuffled order drawn from the run's batch-order generator, so a resumed run visits what an
uninterrupted one does. On a teacher's batch the loss is ``distill.weight`` times

- ``exact``: the cross-entropy between the teacher's and the student's distributions over whole
  tag sequences (:func:`crftag.crf.distillation.posterior_cross_entropy`), from the teacher's
  token and transition marginals mapped onto the student's tags
  (:mod:`crftag.training.teacher_tags`);
- ``hard``: the negative log-likelihood of the teacher's Viterbi tags, as if they were gold.

With ``augment``, an epoch lower-cases, upper-cases, title-cases or mistypes the teacher's
sentences at the chances it does the labelled ones
(:func:`crftag.training.augment.unlabelled_tokens`), and the student learns the teacher's labels
of the text as stored on the changed copy: a change keeps every token in its place.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from crftag.crf.distillation import posterior_cross_entropy
from crftag.data.batching import Batch, build_batch
from crftag.data.indices import bucketed_batches
from crftag.training.augment import unlabelled_tokens
from crftag.training.setup import Run
from crftag.training.step import drop_singletons, update
from crftag.training.tagging_task import TaggingTask
from crftag.training.teacher_tags import tag_matrix

if TYPE_CHECKING:
    from crftag.inference.teacher_store import TeacherStore

__all__ = ["DistillTask", "TeacherBatch"]


@dataclass
class TeacherBatch:
    """Unlabelled sentences with what the teacher says of them, on the student's tags.

    batch                 the sentences; ``tags`` the teacher's Viterbi tags (``hard``)
    token_marginals       (B, T, K) float32, 0 on padding (``exact``; else None)
    transition_marginals  (B, K, K) float32, summed over each sentence (``exact``; else None)
    """

    batch: Batch
    token_marginals: torch.Tensor | None = None
    transition_marginals: torch.Tensor | None = None

    def to(self, device: torch.device) -> TeacherBatch:
        return TeacherBatch(
            self.batch.to(device),
            None if self.token_marginals is None else self.token_marginals.to(device),
            None if self.transition_marginals is None else self.transition_marginals.to(device),
        )


class DistillTask:
    """The :class:`crftag.training.loop.Task` of training ``run``'s tagger on its labelled
    data and on ``store``, whose tags are ``mapped`` onto the student's
    (:func:`crftag.training.teacher_tags.map_teacher_tags`, one per ``store.labels``)."""

    diverged_hint = f"{TaggingTask.diverged_hint}, or lower distill.weight"

    def __init__(self, run: Run, store: TeacherStore, mapped: list[str]) -> None:
        self.run, self.store = run, store
        self.gold = TaggingTask(run)  # the labelled sentences' batches, steps and rate
        self.settings = run.config.distill
        self.epochs = self.gold.epochs
        self.average_from = self.gold.average_from
        self.resume_command = (
            None if run.output_dir is None else f"crftag distill --resume {run.output_dir}"
        )
        student_tags = run.training.vocabularies.tags.symbols
        index = {tag: position for position, tag in enumerate(student_tags)}
        self.tag_index = {
            teacher: index[student] for teacher, student in zip(store.labels, mapped, strict=True)
        }
        self.matrix = tag_matrix(mapped, student_tags)  # (K_teacher, K_student)
        self.first = len(run.training.sentences)  # a batch's row from here on is the store's
        self.lengths = [len(store.sentence(i)) for i in range(len(store))]
        drawn = min(self.settings.sentences or len(store), len(store))
        self.examples = self.first + drawn
        self.tokens = sum(run.training.lengths)  # with the epoch's drawn sentences' tokens

    def learning_rate(self, epoch: int) -> float:
        return self.gold.learning_rate(epoch)

    def epoch_batches(self, epoch: int, order: random.Random) -> list[list[int]]:
        """The labelled sentences' batches, then the drawn unlabelled sentences' (rows from
        ``self.first`` on), shuffled together; every draw from ``order``."""
        labelled = self.gold.epoch_batches(epoch, order)
        drawn = list(range(len(self.store)))
        if self.examples - self.first < len(drawn):
            drawn = sorted(order.sample(drawn, self.examples - self.first))
        lengths = [self.lengths[i] for i in drawn]
        unlabelled = [
            [self.first + drawn[i] for i in rows]
            for rows in bucketed_batches(lengths, self.run.config.train.batch_size, order)
        ]
        self.tokens = sum(self.run.training.lengths) + sum(lengths)
        batches = labelled + unlabelled
        order.shuffle(batches)
        return batches

    def batch_maker(self, epoch: int) -> Callable[[list[int]], tuple[int, Batch | TeacherBatch]]:
        """make(rows) -> (sentences, their batch on the CPU): a labelled batch as
        :class:`TaggingTask` makes it, or a :class:`TeacherBatch` (with word dropout and the
        epoch's augmentation)."""
        gold = self.gold.batch_maker(epoch)

        def make(rows: list[int]) -> tuple[int, Batch | TeacherBatch]:
            if rows[0] < self.first:
                return gold(rows)
            return len(rows), self.teacher_batch([row - self.first for row in rows], epoch)

        return make

    def teacher_batch(self, indices: list[int], epoch: int) -> TeacherBatch:
        """The store's sentences ``indices`` as epoch ``epoch`` sees them (with ``augment``,
        :func:`crftag.training.augment.unlabelled_tokens`) with the teacher's labels of the
        sentences as stored, on the student's tags: a change keeps every token in its place."""
        run, store = self.run, self.store
        sentences = [unlabelled_tokens(store.sentence(i), run.config, epoch, i) for i in indices]
        documents = list(range(len(indices))) if run.config.model.document_context else None
        batch = build_batch(sentences, run.training.vocabularies, documents=documents)
        if run.config.train.word_dropout > 0:
            batch.words = drop_singletons(
                batch.words, run.singletons, run.config.train.word_dropout
            )
        if self.settings.objective == "hard":
            tags = torch.zeros(batch.mask.shape, dtype=torch.long)
            for row, i in enumerate(indices):
                viterbi = [self.tag_index[tag] for tag in store.viterbi(i)]
                tags[row, : len(viterbi)] = torch.tensor(viterbi)
            batch.tags = tags
            return TeacherBatch(batch)
        size = self.matrix.shape[1]
        token_marginals = torch.zeros(*batch.mask.shape, size)
        transition_marginals = torch.zeros(len(indices), size, size)
        for row, i in enumerate(indices):
            tokens, transitions = (torch.tensor(part) for part in store.marginals(i))
            token_marginals[row, : len(tokens)] = tokens.float() @ self.matrix
            transition_marginals[row] = self.matrix.T @ transitions.float() @ self.matrix
        return TeacherBatch(batch, token_marginals, transition_marginals)

    def step(self, batch: Batch | TeacherBatch, examples: int) -> torch.Tensor:
        """A labelled batch's step as ``crftag train``'s; a teacher's: ``distill.weight`` times
        the objective's loss, summed or averaged per ``train.loss_reduction``."""
        if isinstance(batch, Batch):
            return self.gold.step(batch, examples)
        run, settings = self.run, self.run.config.train
        taught = batch.to(run.device)
        loss = update(
            run.network,
            run.optimizer,
            lambda: self.settings.weight * self._teacher_loss(taught),
            run.device,
            settings,
        )
        return loss * (examples if settings.loss_reduction == "mean" else 1)

    def _teacher_loss(self, taught: TeacherBatch) -> torch.Tensor:
        """The objective's loss on a teacher's batch (0-d), reduced per ``train.loss_reduction``."""
        settings, batch = self.run.config.train, taught.batch
        if taught.token_marginals is None:  # hard: the teacher's tags as gold
            return self.run.network(batch, reduction=settings.loss_reduction, amp=settings.amp)
        model = self.run.model
        with torch.autocast(batch.words.device.type, dtype=torch.bfloat16, enabled=settings.amp):
            emissions = model.emissions(batch)
        return posterior_cross_entropy(
            model.crf,
            emissions.float(),
            batch.mask,
            taught.token_marginals,
            taught.transition_marginals,
            reduction=settings.loss_reduction,
        )
