"""crftag distill with the ``augment`` section: each epoch changes the teacher's sentences as it
changes the labelled ones, from draws of their own (the seed, the epoch and the sentence alone),
and keeps the teacher's labels of the clean text on the changed tokens."""

import dataclasses
import random
import signal

import pytest
import torch
from test_distill import (
    test_a_stopped_student_resumes_to_the_uninterrupted_weights as stopped_and_resumed,
)
from test_distill_task import SENTENCES, students_own_store

from crftag.config.distill import DistillConfig
from crftag.data.batching import build_batch
from crftag.training.augment import epoch_changes, unlabelled_tokens
from crftag.training.corpus import read_training_files
from crftag.training.distill_task import DistillTask
from crftag.training.setup import start_run

LOWER = {"augment__lower": 1.0}
MIXED = {"augment__lower": 0.3, "augment__upper": 0.2, "augment__title": 0.2}
TYPED = {**MIXED, "augment__typos": 0.5}


def distill_task(tiny_config, objective="exact", **settings):
    """A task on the tiny run (no word dropout, so a batch is its tokens' alone) whose teacher is
    the student itself, and its teacher's rows in order."""
    config = tiny_config(train__batch_size=4, train__word_dropout=0.0, **settings)
    config = dataclasses.replace(config, distill=DistillConfig(objective=objective))
    torch.manual_seed(0)  # the same initial student, and so the same store, for every settings
    run = start_run(config, read_training_files(config), device=torch.device("cpu"))
    tags = run.training.vocabularies.tags.symbols
    task = DistillTask(run, students_own_store(run, list(range(len(tags)))), list(tags))
    return task, list(range(task.first, task.first + len(SENTENCES)))


def words_of(task, sentences):
    """The batch of ``sentences`` as the student reads them, encoded afresh."""
    return build_batch(sentences, task.run.training.vocabularies)


@pytest.mark.parametrize("objective", ["exact", "hard"])
def test_without_augment_a_teachers_batch_is_the_stored_text(tiny_config, objective):
    task, rows = distill_task(tiny_config, objective)
    for epoch in (1, 2):
        _, taught = task.batch_maker(epoch)(rows)
        clean = words_of(task, SENTENCES)
        assert torch.equal(taught.batch.mask, clean.mask)
        assert taught.batch.inputs.keys() == clean.inputs.keys()
        for name, values in clean.inputs.items():
            assert torch.equal(taught.batch.inputs[name], values), name
    # Chances of 0 are augmentation off: the same tensors, bit for bit.
    zero, _ = distill_task(tiny_config, objective, augment__lower=0.0, augment__typos=0.0)
    _, off = zero.batch_maker(1)(rows)
    _, plain = task.batch_maker(1)(rows)
    for name, values in plain.batch.inputs.items():
        assert torch.equal(off.batch.inputs[name], values), name
    if objective == "exact":
        assert torch.equal(off.token_marginals, plain.token_marginals)
        assert torch.equal(off.transition_marginals, plain.transition_marginals)
    else:
        assert torch.equal(off.batch.tags, plain.batch.tags)


@pytest.mark.parametrize("objective", ["exact", "hard"])
def test_lower_cased_teachers_sentences_keep_the_clean_texts_labels(tiny_config, objective):
    clean_task, rows = distill_task(tiny_config, objective)
    task, _ = distill_task(tiny_config, objective, **LOWER)
    _, clean = clean_task.batch_maker(1)(rows)
    _, taught = task.batch_maker(1)(rows)
    lowered = [tuple(token.lower() for token in sentence) for sentence in SENTENCES]
    expected = words_of(task, lowered)
    assert torch.equal(taught.batch.mask, clean.batch.mask)
    for name, values in expected.inputs.items():
        assert torch.equal(taught.batch.inputs[name], values), name
    assert not torch.equal(taught.batch.inputs["chars"], clean.batch.inputs["chars"])
    if objective == "exact":
        assert torch.equal(taught.token_marginals, clean.token_marginals)
        assert torch.equal(taught.transition_marginals, clean.transition_marginals)
    else:
        assert torch.equal(taught.batch.tags, clean.batch.tags)


def test_the_draws_are_the_seeds_and_the_epochs_alone(tiny_config):
    config = tiny_config(**TYPED)
    epochs = {
        epoch: [unlabelled_tokens(s, config, epoch, i) for i, s in enumerate(SENTENCES)]
        for epoch in range(1, 9)
    }
    assert len({tuple(tokens) for tokens in epochs.values()}) > 1  # a fresh draw each epoch
    assert any(tokens != list(SENTENCES) for tokens in epochs.values())
    again = tiny_config(**TYPED)  # a resumed run: a config and task built anew
    assert all(
        unlabelled_tokens(s, again, epoch, i) == epochs[epoch][i]
        for epoch in epochs
        for i, s in enumerate(SENTENCES)
    )
    other_seed = tiny_config(**TYPED, train__seed=7)
    assert any(
        [unlabelled_tokens(s, other_seed, epoch, i) for i, s in enumerate(SENTENCES)] != tokens
        for epoch, tokens in epochs.items()
    )


def test_a_sentence_looks_the_same_in_any_batch_and_any_order(tiny_config):
    """What an epoch makes of a teacher's sentence does not hang on the sentences drawn with it,
    its batch, or the order the batches are made in (a resumed epoch makes only its rest)."""
    task, rows = distill_task(tiny_config, **MIXED)
    for epoch in range(1, 4):
        make = task.batch_maker(epoch)
        whole = make(rows)[1].batch.inputs["chars"]
        for row in reversed(rows):
            alone = make([row])[1].batch.inputs["chars"]
            width = alone.shape[-1]
            assert torch.equal(alone[0], whole[row - task.first, : alone.shape[1], :width])


def test_the_labelled_sentences_keep_their_own_draws(tiny_config):
    task, _ = distill_task(tiny_config, **TYPED)
    run = task.run
    for epoch in (1, 2):
        assert epoch_changes(run.training, run.config, epoch)  # augmentation is on
        order = random.Random(epoch)
        labelled = [b for b in task.epoch_batches(epoch, order) if b[0] < task.first]
        made = task.batch_maker(epoch)
        gold = task.gold.batch_maker(epoch)
        for rows in labelled:
            ours, theirs = made(rows)[1], gold(rows)[1]
            for name, values in theirs.inputs.items():
                assert torch.equal(ours.inputs[name], values), name


ODD = [
    ("Straße", "İstanbul", "ŉ", "aaaa", "AAAA"),
    ("a", "I", ".", "--", "1999", "x-ray"),
    ("Reykjavik", "McDonald's", "e-mail", "U.S.", "naïve", "ＦＵＬＬ"),
    ("Paris",),
]


@pytest.mark.parametrize("change", ["lower", "upper", "title", "typos"])
def test_no_change_alters_the_token_count_or_empties_a_token(tiny_config, change):
    settings = {f"augment__{change}": 1.0, "augment__typo_rate": 1.0}
    config = tiny_config(**settings)
    changed_some = False
    for epoch in range(1, 6):
        for index, tokens in enumerate([*SENTENCES, *ODD]):
            changed = unlabelled_tokens(tokens, config, epoch, index)
            assert len(changed) == len(tokens) and all(changed), (tokens, changed)
            changed_some |= changed != tokens
    assert changed_some


def test_a_step_on_a_changed_teachers_batch_trains_the_student(tiny_config):
    task, rows = distill_task(tiny_config, **TYPED)
    examples, taught = task.batch_maker(2)(rows)
    before = [p.detach().clone() for p in task.run.model.parameters()]
    loss = task.step(taught, examples)
    assert loss.dim() == 0 and bool(torch.isfinite(loss)) and float(loss) > 0
    after = task.run.model.parameters()
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))


@pytest.fixture(scope="module")
def unlabelled_text(tmp_path_factory, tiny_config):
    """The sample's first 80 training sentences, one a line, as text to label."""
    data = tiny_config().data
    path = tmp_path_factory.mktemp("text") / "text.txt"
    lines = [" ".join(sentence.tokens) for sentence in data.read(data.train)[:80]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_stopped_augmented_student_resumes_to_the_uninterrupted_weights(
    tmp_path, sample_model, unlabelled_text, tiny_args
):
    """test_distill.py's resume test with augmentation on: the teacher's sentences changed in
    the epoch the stop lands in are changed alike after the resume, and the weights are the
    uninterrupted run's, bit for bit."""

    def augmented_args(**settings):
        return tiny_args(**settings, **TYPED)

    stopped_and_resumed(
        tmp_path, sample_model, unlabelled_text, augmented_args, signal.SIGINT, "distill"
    )
