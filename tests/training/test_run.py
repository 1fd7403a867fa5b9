"""Training runs: reproducibility with one seed, early stopping, several training files, the
training log's lines."""

import json

import torch

from crftag import cli
from crftag.data.vocab import normalize_word
from crftag.modelfiles.checkpoint import read_checkpoint
from crftag.training.loop import EpochResult
from crftag.training.run import format_epoch


def test_same_seed_same_model_on_cpu(train_tiny):
    states = [train_tiny(train__seed=7, train__epochs=2)[0].model.state_dict() for _ in ("a", "b")]
    assert states[0].keys() == states[1].keys()
    for name in states[0]:
        assert torch.equal(states[0][name], states[1][name]), name


def test_early_stopping_ends_before_the_epoch_limit(train_tiny):
    # A learning rate of zero never improves on the first epoch's dev score.
    _, epochs = train_tiny(train__lr=0, train__epochs=10, train__patience=2)
    assert [e.epoch for e in epochs] == [1, 2, 3]
    assert [e.best for e in epochs] == [True, False, False]


def test_training_on_several_files_without_dev_keeps_the_last_epoch(tmp_path, capsys, tiny_args):
    # The final-model recipe: train and dev read together, a fixed number of epochs, no dev.
    files = ["data/ner_sample.train.conll", "data/ner_sample.dev.conll"]
    args = ["train", "configs/sample.yaml", "-o", str(tmp_path)]
    assert cli.run([*args, *tiny_args(data__train=files, data__dev=None, train__epochs=2)]) == 0
    epochs = [line for line in capsys.readouterr().err.splitlines() if line.startswith("epoch")]
    assert len(epochs) == 2
    checkpoint = read_checkpoint(str(tmp_path / "model.pt"))
    words = set(checkpoint["vocabularies"]["words"]["symbols"])
    dev_only = _words("data/ner_sample.dev.conll") - _words("data/ner_sample.train.conll")
    assert dev_only and dev_only <= words  # the dev file's words are in the vocabulary
    assert json.loads((tmp_path / "metrics.json").read_text())["epochs"] == 2


def test_a_missing_second_training_file_is_named(tmp_path, capsys, tiny_args):
    files = ["data/ner_sample.train.conll", "data/nowhere.conll"]
    args = ["train", "configs/sample.yaml", "-o", str(tmp_path), *tiny_args(data__train=files)]
    assert cli.run(args) != 0
    assert "data.train: data/nowhere.conll: no such file" in capsys.readouterr().err


def test_the_log_line_marks_averaged_and_best_epochs():
    result = EpochResult(
        epoch=2,
        loss=1.5,
        dev_score=0.75,
        best=True,
        seconds=3.0,
        tokens_per_second=1000.0,
        learning_rate=0.005,
        averaged=True,
    )
    line = format_epoch(result)
    assert line.startswith("epoch   2  loss    1.5000  dev  75.00  lr 0.005")
    assert line.endswith("avg  *")
    plain = format_epoch(EpochResult(**{**result.__dict__, "averaged": False, "dev_score": None}))
    assert "dev" not in plain and not plain.endswith(("avg", "*"))


def _words(path: str) -> set[str]:
    with open(path, encoding="utf-8") as handle:
        return {
            normalize_word(line.split()[0], lowercase=False, normalize_digits=True)
            for line in handle
            if line.strip() and not line.startswith("-DOCSTART-")
        }
