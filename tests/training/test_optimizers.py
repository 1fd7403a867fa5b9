"""Optimizers and their rates: the learning-rate schedule, the sparse SGD of the feature CRF,
and ``train.embedding_lr_scale`` (the word embeddings' rate as a multiple of train.lr)."""

import torch

from crftag.training.optimizers import SparseSGD, learning_rate


def test_sgd_rate_decays_from_the_first_epoch(tiny_config):
    settings = tiny_config(train__optimizer="sgd", train__lr=0.1, train__lr_decay=0.5).train
    assert [learning_rate(settings, epoch) for epoch in (1, 2, 3)] == [0.1, 0.1 / 1.5, 0.1 / 2]
    assert learning_rate(tiny_config().train, 9) == tiny_config().train.lr  # adam: constant


def test_sparse_sgd_is_sgd_with_l2():
    torch.manual_seed(0)
    ours = torch.nn.Parameter(torch.randn(6, 3))
    reference = torch.nn.Parameter(ours.detach().clone())
    gradient = torch.randn(6, 3)
    ours.grad, reference.grad = gradient.to_sparse(), gradient.clone()
    SparseSGD([ours], lr=0.1, weight_decay=0.5).step()
    torch.optim.SGD([reference], lr=0.1, weight_decay=0.5).step()
    assert torch.allclose(ours, reference)


def _moved(model, initial) -> tuple[float, float]:
    """How far training moved the word embeddings and the BiLSTM's input weights."""
    with torch.no_grad():
        embedding = (model.word_embedding.weight - initial.word_embedding.weight).abs().max()
        lstm = (model.encoder.lstm.weight_ih_l0 - initial.encoder.lstm.weight_ih_l0).abs().max()
    return float(embedding), float(lstm)


def _train(train_tiny, **settings) -> torch.nn.Module:
    tagger, _ = train_tiny(train__epochs=1, train__seed=3, **settings)
    return tagger.model


def test_scale_zero_keeps_the_embeddings_and_trains_the_rest(train_tiny):
    # train.lr=0 with the same seed gives the initial weights to compare with
    initial = _train(train_tiny, train__lr=0)
    kept = _train(train_tiny, train__embedding_lr_scale=0)
    tuned = _train(train_tiny)
    embedding, lstm = _moved(kept, initial)
    assert embedding == 0.0 and lstm > 0.0
    assert _moved(tuned, initial)[0] > 0.0


def test_scale_sets_the_embedding_groups_lr(train_tiny, monkeypatch):
    # Record each optimizer step's groups: the embedding group runs at 0.25 x the others' lr.
    seen = []
    original = torch.optim.Adam.step

    def step(self, *args, **kwargs):
        seen.append([(group["lr"], group.get("lr_scale")) for group in self.param_groups])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.Adam, "step", step)
    _train(train_tiny, train__embedding_lr_scale=0.25)
    assert seen
    for (rest_lr, rest_scale), (embedding_lr, embedding_scale) in seen:
        assert (rest_scale, embedding_scale) == (1.0, 0.25)
        assert embedding_lr == rest_lr * 0.25 and rest_lr == 0.005


def test_scale_with_frozen_embeddings_is_a_config_error(tmp_path, invoke, tiny_args):
    settings = tiny_args(train__embedding_lr_scale=0.5, model__freeze_embeddings=True)
    result = invoke(["train", "configs/sample.yaml", "-o", str(tmp_path), *settings])
    assert result.status == 2 and "model.freeze_embeddings: true" in result.stderr
    assert result.stderr.count("\n") == 1
