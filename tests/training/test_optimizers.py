"""``train.embedding_lr_scale``: the word embeddings' learning rate as a multiple of train.lr."""

import torch

from crftag import cli
from crftag.inference.tagger import Tagger

TINY = ["--set", "train.epochs=1", "--set", "model.hidden_size=16", "--set", "model.word_dim=16"]
TINY += ["--device", "cpu", "--quiet", "--seed", "3"]


def _train(directory, *settings) -> torch.nn.Module:
    sets = [part for setting in settings for part in ("--set", setting)]
    assert cli.run(["train", "configs/sample.yaml", "-o", str(directory), *TINY, *sets]) == 0
    return Tagger.load(str(directory)).model


def _moved(model, initial) -> tuple[float, float]:
    """How far training moved the word embeddings and the BiLSTM's input weights."""
    with torch.no_grad():
        embedding = (model.word_embedding.weight - initial.word_embedding.weight).abs().max()
        lstm = (model.encoder.lstm.weight_ih_l0 - initial.encoder.lstm.weight_ih_l0).abs().max()
    return float(embedding), float(lstm)


def test_scale_zero_keeps_the_embeddings_and_trains_the_rest(tmp_path):
    # train.lr=0 with the same seed gives the initial weights to compare with
    initial = _train(tmp_path / "initial", "train.lr=0")
    kept = _train(tmp_path / "kept", "train.embedding_lr_scale=0")
    tuned = _train(tmp_path / "tuned")
    embedding, lstm = _moved(kept, initial)
    assert embedding == 0.0 and lstm > 0.0
    assert _moved(tuned, initial)[0] > 0.0


def test_scale_sets_the_embedding_groups_lr(tmp_path, monkeypatch):
    # Record each optimizer step's groups: the embedding group runs at 0.25 x the others' lr.
    seen = []
    original = torch.optim.Adam.step

    def step(self, *args, **kwargs):
        seen.append([(group["lr"], group.get("lr_scale")) for group in self.param_groups])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.Adam, "step", step)
    _train(tmp_path, "train.embedding_lr_scale=0.25")
    assert seen
    for (rest_lr, rest_scale), (embedding_lr, embedding_scale) in seen:
        assert (rest_scale, embedding_scale) == (1.0, 0.25)
        assert embedding_lr == rest_lr * 0.25 and rest_lr == 0.005


def test_scale_with_frozen_embeddings_is_a_config_error(tmp_path, invoke):
    args = ["train", "configs/sample.yaml", "-o", str(tmp_path), "--set"]
    result = invoke(
        [*args, "train.embedding_lr_scale=0.5", "--set", "model.freeze_embeddings=true"]
    )
    assert result.status == 2 and "model.freeze_embeddings: true" in result.stderr
    assert result.stderr.count("\n") == 1
