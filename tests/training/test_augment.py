"""Augmentation in training: drawn from the seed and the epoch alone, at the chances asked for,
and the same for labels read from character spans."""

import pytest
import torch

from crftag.training.augment import epoch_changes
from crftag.training.corpus import read_training_files
from crftag.training.setup import start_run
from crftag.training.step import training_batch

AUGMENTED = {"augment__lower": 0.3, "augment__upper": 0.2, "augment__typos": 0.5}
# The runs compared below: two epochs, each with its own draw of changes, are as telling as three.
RUN = {"train__seed": 5, "train__epochs": 2}


@pytest.fixture(scope="module")
def training(tiny_config):
    config = tiny_config()
    return start_run(config, read_training_files(config), device=torch.device("cpu")).training


def test_the_changes_depend_on_the_seed_and_the_epoch_alone(tiny_config, training):
    config = tiny_config(**AUGMENTED)
    first = epoch_changes(training, config, 1)
    assert first and first == epoch_changes(training, config, 1)
    assert first != epoch_changes(training, config, 2)
    other_config = tiny_config(**AUGMENTED, train__seed=2)
    assert first != epoch_changes(training, other_config, 1)
    assert epoch_changes(training, tiny_config(), 1) == {}


def test_each_change_comes_at_its_chance(tiny_config, training):
    count = len(training.sentences)
    for key, test in [
        ("lower", lambda old, new: new == tuple(t.lower() for t in old)),
        ("upper", lambda old, new: new == tuple(t.upper() for t in old)),
        ("title", lambda old, new: new[0][:1].isupper() and new != old),
    ]:
        config = tiny_config(**{f"augment__{key}": 0.4})
        changed = epoch_changes(training, config, 1)
        assert all(test(training.sentences[i].tokens, new) for i, new in changed.items())
        # Sentences already in the changed case (all lower case, say) count as unchanged.
        assert 0.3 * count < len(changed) <= 0.5 * count, key
    config = tiny_config(augment__typos=1.0, augment__typo_rate=1.0)
    changed = epoch_changes(training, config, 1)
    for index, tokens in changed.items():
        old = training.sentences[index].tokens
        assert len(tokens) == len(old) and tokens != old
    eligible = [i for i, s in enumerate(training.sentences) if any(len(t) >= 4 for t in s.tokens)]
    assert len(changed) >= 0.9 * len(eligible)


def test_case_chances_over_one_are_refused(invoke, tiny_args):
    result = invoke(
        [
            "train",
            "configs/sample.yaml",
            *tiny_args(augment__lower=0.7, augment__upper=0.4),
        ]
    )
    assert result.status == 2 and not result.stdout
    assert result.stderr.startswith("crftag: error: augment.lower + augment.upper")
    assert len(result.stderr.splitlines()) == 1


def test_an_unknown_dev_perturbation_is_refused(invoke, tiny_args):
    result = invoke(["train", "configs/sample.yaml", *tiny_args(augment__dev="[lower,shout]")])
    assert result.status == 2 and not result.stdout
    assert result.stderr == (
        "crftag: error: augment.dev: expected names from lower, upper, title, typos, got 'shout'\n"
    )


def test_a_batch_reads_the_changed_tokens_and_keeps_the_tags(tiny_config, training):
    config = tiny_config(augment__upper=1.0)
    changed = epoch_changes(training, config, 1)
    rows = sorted(changed)[:6]
    options = {"document_context": False, "singletons": torch.zeros(1, dtype=torch.bool)}
    plain = training_batch(training, rows, word_dropout=0.0, **options)
    augmented = training_batch(training, rows, word_dropout=0.0, changed=changed, **options)
    assert torch.equal(plain.tags, augmented.tags) and torch.equal(plain.mask, augmented.mask)
    assert not torch.equal(plain.chars, augmented.chars)
    chars = training.vocabularies.chars
    first = changed[rows[0]][0]
    assert augmented.chars[0, 0, : len(first)].tolist() == chars.indices(list(first))


def test_augmentation_changes_the_model_and_a_run_repeats(tiny_run, train_tiny):
    _, plain = tiny_run(**RUN)
    _, augmented = tiny_run(**RUN, **AUGMENTED)
    _, again = train_tiny(**RUN, **AUGMENTED)
    assert [e.loss for e in augmented] != [e.loss for e in plain]
    assert [e.loss for e in augmented] == [e.loss for e in again]
    assert [e.dev_score for e in augmented] == [e.dev_score for e in again]


def test_span_labels_augment_as_the_column_file_they_came_from(tiny_run, train_tiny, tmp_path):
    """Labels read from character spans (JSONL) are token tags by the time text is changed, so
    the sample converted to JSONL trains, augmented, the model its CoNLL file trains."""
    from crftag import cli

    converted = {}
    for name in ("train", "dev"):
        converted[name] = str(tmp_path / f"{name}.jsonl")
        assert cli.run(["convert", f"data/ner_sample.{name}.conll", converted[name]]) == 0
    _, from_conll = tiny_run(**RUN, **AUGMENTED)
    _, from_jsonl = train_tiny(
        **RUN, data__train=converted["train"], data__dev=converted["dev"], **AUGMENTED
    )
    assert [e.loss for e in from_jsonl] == [e.loss for e in from_conll]
    assert [e.dev_score for e in from_jsonl] == [e.dev_score for e in from_conll]


def test_dev_perturb_chooses_on_the_mean_of_the_copies(tiny_run, train_tiny, tiny_config):
    from crftag.data.perturb import perturb_sentences
    from crftag.scoring.evaluate import headline, score_sentences

    _, plain = tiny_run(**RUN)
    tagger, chosen = train_tiny(**RUN, augment__dev=["lower", "typos"])
    assert [e.loss for e in chosen] == [e.loss for e in plain]  # the same training
    dev = tiny_config().data
    dev = dev.read(dev.dev)
    copies = [dev, *(perturb_sentences(dev, c, seed=5, typo_rate=0.2) for c in ("lower", "typos"))]
    scores = [headline(score_sentences(tagger, copy)) for copy in copies]
    assert max(e.dev_score for e in chosen) == pytest.approx(sum(scores) / 3, abs=1e-12)
    assert scores[1] != scores[0]
