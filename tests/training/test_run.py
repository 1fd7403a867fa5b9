"""Training: vocabularies, reproducibility with one seed, early stopping."""

import json
from collections import Counter

import torch

from crftag import cli
from crftag.data.vocab import PAD, UNK, Vocabulary, normalize_word

FAST = ["--set", "model.hidden_size=16", "--set", "model.word_dim=16", "--quiet", "--device", "cpu"]


def test_vocabulary_min_freq_and_unknowns():
    vocabulary = Vocabulary.build(Counter({"the": 5, "cat": 2, "rare": 1}), min_freq=2)
    assert vocabulary.symbols == [PAD, UNK, "the", "cat"]
    assert vocabulary.index("rare") == 1 and vocabulary.index("cat") == 3
    restored = Vocabulary.from_state(vocabulary.to_state())
    assert restored.symbols == vocabulary.symbols


def test_word_normalisation():
    assert normalize_word("Année 2024", lowercase=True, normalize_digits=True) == "année 0000"
    assert normalize_word("Année 2024", lowercase=False, normalize_digits=False) == "Année 2024"


def test_same_seed_same_model_on_cpu(tmp_path):
    states = []
    for run in ("a", "b"):
        args = ["train", "configs/sample.yaml", "-o", str(tmp_path / run), "--seed", "7"]
        assert cli.run([*args, "--set", "train.epochs=2", *FAST]) == 0
        states.append(torch.load(tmp_path / run / "model.pt", weights_only=True)["state_dict"])
    assert states[0].keys() == states[1].keys()
    for name in states[0]:
        assert torch.equal(states[0][name], states[1][name]), name


def test_early_stopping_ends_before_the_epoch_limit(tmp_path, capsys):
    # A learning rate of zero never improves on the first epoch's dev score.
    args = ["train", "configs/sample.yaml", "-o", str(tmp_path), "--set", "train.lr=0"]
    assert cli.run([*args, "--set", "train.epochs=10", "--set", "train.patience=2", *FAST]) == 0
    epochs = [line for line in capsys.readouterr().err.splitlines() if line.startswith("epoch")]
    assert len(epochs) == 3


def test_casing_embedding_trains_and_reloads(tmp_path):
    args = ["train", "configs/sample.yaml", "-o", str(tmp_path), "--set", "train.epochs=1"]
    assert cli.run([*args, "--set", "model.casing_dim=4", *FAST]) == 0
    state = torch.load(tmp_path / "model.pt", weights_only=True)
    assert state["state_dict"]["casing.embedding.weight"].shape == (8, 4)
    from crftag.inference.tagger import Tagger

    tags = Tagger.load(str(tmp_path)).tag([["Anna", "visited", "PARIS", "in", "1990", "."]])
    assert len(tags[0]) == 6


def test_training_on_several_files_without_dev_keeps_the_last_epoch(tmp_path, capsys):
    # The final-model recipe: train and dev read together, a fixed number of epochs, no dev.
    files = "[data/ner_sample.train.conll,data/ner_sample.dev.conll]"
    args = ["train", "configs/sample.yaml", "-o", str(tmp_path), "--set", f"data.train={files}"]
    args += ["--set", "data.dev=null", "--set", "train.epochs=2", *FAST]
    assert cli.run(args) == 0
    epochs = [line for line in capsys.readouterr().err.splitlines() if line.startswith("epoch")]
    assert len(epochs) == 2
    checkpoint = torch.load(tmp_path / "model.pt", weights_only=True)
    words = set(checkpoint["vocabularies"]["words"]["symbols"])
    dev_only = _words("data/ner_sample.dev.conll") - _words("data/ner_sample.train.conll")
    assert dev_only and dev_only <= words  # the dev file's words are in the vocabulary
    assert json.loads((tmp_path / "metrics.json").read_text())["epochs"] == 2


def test_a_missing_second_training_file_is_named(tmp_path, capsys):
    files = "[data/ner_sample.train.conll,data/nowhere.conll]"
    args = ["train", "configs/sample.yaml", "-o", str(tmp_path), "--set", f"data.train={files}"]
    assert cli.run([*args, *FAST]) != 0
    assert "data.train: data/nowhere.conll: no such file" in capsys.readouterr().err


def _words(path: str) -> set[str]:
    with open(path, encoding="utf-8") as handle:
        return {
            normalize_word(line.split()[0], lowercase=False, normalize_digits=True)
            for line in handle
            if line.strip() and not line.startswith("-DOCSTART-")
        }
