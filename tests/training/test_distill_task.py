"""crftag distill's task: each epoch's batches (every labelled sentence once, the teacher's drawn
from the seed), the teacher's labels on the student's tags, and its two objectives."""

import dataclasses
import random

import numpy as np
import pytest
import torch

from crftag.config.distill import DistillConfig
from crftag.crf.distillation import teacher_marginals
from crftag.data.batching import Batch, build_batch
from crftag.training.corpus import read_training_files
from crftag.training.distill_task import DistillTask, TeacherBatch
from crftag.training.setup import start_run

SENTENCES = [
    ("John", "Smith", "lives", "in", "Berlin", "."),
    ("Shares", "rose", "."),
    ("Vestas", "said", "the", "deal", "was", "signed", "in", "Reykjavik", "."),
    ("Paris",),
    ("The", "company", "expects", "sales", "to", "grow", "."),
]


class FakeStore:
    """What :class:`crftag.inference.teacher_store.TeacherStore` gives a task, from arrays: the
    marginals and Viterbi paths of ``crf`` on ``emissions`` (labels in ``labels``' order)."""

    def __init__(self, labels, token_marginals, transition_marginals, viterbi):
        self.labels, self.scheme = labels, "bioes"
        self._token, self._pairs, self._viterbi = token_marginals, transition_marginals, viterbi

    def __len__(self):
        return len(SENTENCES)

    def sentence(self, i):
        return SENTENCES[i]

    def marginals(self, i):
        return self._token[i].astype(np.float32), self._pairs[i].astype(np.float32)

    def viterbi(self, i):
        return [self.labels[tag] for tag in self._viterbi[i]]


def tiny_run(tiny_config, **distill):
    config = tiny_config(train__batch_size=4)
    config = dataclasses.replace(config, distill=DistillConfig(**distill))
    return start_run(config, read_training_files(config), device=torch.device("cpu"))


def students_own_store(run, order):
    """A store of the student's own posteriors, its tags listed in ``order`` (a permutation)."""
    tags = run.training.vocabularies.tags.symbols
    built = build_batch(SENTENCES, run.training.vocabularies)
    run.model.eval()
    with torch.no_grad():
        emissions = run.model.emissions(built)
        token, pairs = teacher_marginals(run.model.crf, emissions, built.mask)
        paths, _ = run.model.decode(built)
    run.model.train()
    lengths = [len(s) for s in SENTENCES]
    token_rows = [token[i, : lengths[i]][:, order].numpy() for i in range(len(SENTENCES))]
    pair_rows = [pairs[i][order][:, order].numpy() for i in range(len(SENTENCES))]
    rank = {old: new for new, old in enumerate(order)}
    viterbi = [[rank[t] for t in paths[i, : lengths[i]].tolist()] for i in range(len(SENTENCES))]
    return FakeStore([tags[i] for i in order], token_rows, pair_rows, viterbi)


def test_an_epoch_holds_every_labelled_sentence_and_every_teachers_once(tiny_config):
    run = tiny_run(tiny_config)
    tags = run.training.vocabularies.tags.symbols
    task = DistillTask(run, students_own_store(run, list(range(len(tags)))), list(tags))
    batches = task.epoch_batches(1, random.Random(5))
    rows = sorted(row for batch in batches for row in batch)
    assert rows == list(range(len(run.training.sentences) + len(SENTENCES)))
    first = task.first
    assert all(min(b) >= first or max(b) < first for b in batches)  # never mixed
    assert batches == task.epoch_batches(1, random.Random(5))  # what a resumed run redraws
    assert task.examples == first + len(SENTENCES)


def test_distill_sentences_draws_that_many_each_epoch(tiny_config):
    run = tiny_run(tiny_config, sentences=2)
    tags = run.training.vocabularies.tags.symbols
    task = DistillTask(run, students_own_store(run, list(range(len(tags)))), list(tags))
    order = random.Random(1)
    drawn = []
    for _ in range(6):
        rows = [r for batch in task.epoch_batches(1, order) for r in batch if r >= task.first]
        assert len(rows) == len(set(rows)) == 2
        drawn.append(tuple(sorted(rows)))
    assert len(set(drawn)) > 1  # a fresh draw each epoch


@pytest.mark.parametrize("objective", ["exact", "hard"])
def test_the_teachers_labels_reach_the_students_tags_in_any_order(tiny_config, objective):
    """A teacher that is the student itself, its tags listed in reverse: the mapped marginals
    and paths are the student's own, so the exact objective's gradient is zero."""
    run = tiny_run(tiny_config, objective=objective, weight=1.0)
    tags = run.training.vocabularies.tags.symbols
    order = list(reversed(range(len(tags))))
    store = students_own_store(run, order)
    task = DistillTask(run, store, store.labels)
    made = task.batch_maker(1)(list(range(task.first, task.first + len(SENTENCES))))
    examples, taught = made
    assert examples == len(SENTENCES) and isinstance(taught, TeacherBatch)
    reference = students_own_store(run, list(range(len(tags))))
    if objective == "hard":
        for row in range(len(SENTENCES)):
            tags_of_row = taught.batch.tags[row, : len(SENTENCES[row])].tolist()
            assert [tags[t] for t in tags_of_row] == reference.viterbi(row)
        return
    mask = taught.batch.mask
    sums = taught.token_marginals.sum(-1)
    assert torch.allclose(sums[mask], torch.ones(int(mask.sum())), atol=1e-5)
    assert bool((sums[~mask] == 0).all())
    for row in range(len(SENTENCES)):
        token, pairs = reference.marginals(row)
        assert torch.allclose(taught.token_marginals[row, : len(token)], torch.tensor(token))
        assert torch.allclose(taught.transition_marginals[row], torch.tensor(pairs))
    run.model.eval()  # no dropout: the student's distribution is the teacher's exactly
    run.model.zero_grad()
    task._teacher_loss(taught).backward()
    largest = max(float(p.grad.abs().max()) for p in run.model.parameters() if p.grad is not None)
    assert largest < 1e-4


def test_a_labelled_batch_takes_the_training_step(tiny_config):
    run = tiny_run(tiny_config)
    tags = run.training.vocabularies.tags.symbols
    task = DistillTask(run, students_own_store(run, list(range(len(tags)))), list(tags))
    examples, batch = task.batch_maker(1)([0, 1, 2])
    assert examples == 3 and isinstance(batch, Batch) and batch.tags is not None
    before = [p.detach().clone() for p in run.model.parameters()]
    loss = task.step(batch, examples)
    assert loss.dim() == 0 and float(loss) > 0
    assert any(not torch.equal(a, b) for a, b in zip(before, run.model.parameters(), strict=True))


def test_the_teacher_term_is_scaled_by_its_weight(tiny_config):
    losses = []
    for weight in (1.0, 2.5):
        run = tiny_run(tiny_config, weight=weight)
        tags = run.training.vocabularies.tags.symbols
        order = list(range(len(tags)))
        task = DistillTask(run, students_own_store(run, order), list(tags))
        examples, taught = task.batch_maker(1)([task.first, task.first + 1])
        losses.append(float(task.step(taught, examples)))
    assert losses[1] == pytest.approx(2.5 * losses[0], rel=1e-5)
