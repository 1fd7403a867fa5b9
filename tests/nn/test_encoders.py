"""Encoder parts: WordEmbedding's rows fixed out of training look up, save, load and train as
if trained; CasingEmbedding's classes, trained and reloaded; LexiconEmbedding's rows per type."""

import pytest
import torch

from crftag.inference.loading import load
from crftag.modelfiles.checkpoint import save_model
from crftag.nn.encoders import CasingEmbedding, WordEmbedding
from crftag.nn.lexicons import LexiconEmbedding

ROWS, DIM, TRAINED = 12, 4, 7


def embedding(seed: int = 0) -> WordEmbedding:
    torch.manual_seed(seed)
    module = WordEmbedding(ROWS, DIM)
    torch.nn.init.normal_(module.weight)
    return module


def test_fixed_rows_look_up_save_and_load_as_one_matrix():
    whole = embedding()
    split = embedding()
    split.fix_rows_from(TRAINED)
    assert split.weight.shape == (TRAINED, DIM) and split.fixed.shape == (ROWS - TRAINED, DIM)
    words = torch.tensor([[0, 3, 6, 7, 11], [11, 9, 1, 0, 0]])
    assert torch.equal(split(words), whole(words))
    assert torch.equal(split(words)[0, 0], whole.weight[0])
    # One (V, D) matrix in the state dict, so checkpoints read the same either way.
    assert list(split.state_dict()) == ["weight"]
    assert torch.equal(split.state_dict()["weight"], whole.weight.detach())
    fresh = WordEmbedding(ROWS, DIM)
    fresh.load_state_dict(split.state_dict())
    assert torch.equal(fresh(words), whole(words))
    other = embedding(seed=1)
    other.fix_rows_from(TRAINED)
    other.load_state_dict(whole.state_dict())  # as resuming a run does
    assert torch.equal(other(words), whole(words))
    assert other.weight.shape == (TRAINED, DIM)
    with pytest.raises(RuntimeError, match="size mismatch"):
        other.load_state_dict({"weight": torch.zeros(ROWS + 1, DIM)})
    with pytest.raises(ValueError):
        embedding().fix_rows_from(ROWS + 1)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_training_with_fixed_rows_equals_training_every_row(optimizer):
    """Words past the training data never occur in a training batch: fixing their rows changes
    nothing, with momentum, Adam's moments, padding and gradient clipping."""
    models = []
    for split in (False, True):
        module = embedding()
        if split:
            module.fix_rows_from(TRAINED)
        torch.manual_seed(2)
        head = torch.nn.Linear(DIM, 3)
        models.append((module, head))
    optimizers = []
    for module, head in models:
        parameters = [module.weight, *head.parameters()]
        if optimizer == "sgd":
            optimizers.append(torch.optim.SGD(parameters, lr=0.5, momentum=0.9))
        else:
            optimizers.append(torch.optim.Adam(parameters, lr=0.1))
    generator = torch.Generator().manual_seed(3)
    for _ in range(5):
        words = torch.randint(0, TRAINED, (4, 6), generator=generator)
        targets = torch.randint(0, 3, (4, 6), generator=generator)
        for (module, head), step in zip(models, optimizers, strict=True):
            loss = torch.nn.functional.cross_entropy(
                head(module(words)).flatten(0, 1), targets.flatten()
            )
            step.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_([module.weight, *head.parameters()], 0.1)
            step.step()
    whole, split = (module.state_dict()["weight"] for module, _ in models)
    torch.testing.assert_close(split, whole, rtol=1e-6, atol=1e-7)
    assert not torch.equal(whole[:TRAINED], embedding().weight[:TRAINED])  # it did train
    assert torch.equal(split[TRAINED:], embedding().weight[TRAINED:].detach())
    assert torch.equal(whole[TRAINED:], embedding().weight[TRAINED:].detach())


def test_casing_classes():
    symbols = ["<pad>", "<unk>", *"aAbB019.-"]
    words = ["ab", "AB", "Ab", "10", "10a", "a1", ".-", "aB", "", "1.0", "Q"]
    index = {s: i for i, s in enumerate(symbols)}
    width = max(len(w) for w in words)
    chars = torch.tensor([[[index.get(c, 1) for c in w] + [0] * (width - len(w)) for w in words]])
    classes = CasingEmbedding(symbols, 4).classes(chars)[0].tolist()
    # numeric 1, mainly numeric 2, lower 3, upper 4, initial upper 5, has a digit 6, other 7
    assert classes == [3, 4, 5, 1, 2, 6, 7, 7, 0, 2, 7]


def test_casing_embedding_trains_and_reloads(train_tiny, tmp_path):
    tagger, _ = train_tiny(train__epochs=1, model__casing_dim=4)
    save_model(str(tmp_path / "model.pt"), tagger.loaded)
    state = torch.load(tmp_path / "model.pt", weights_only=True)
    assert state["state_dict"]["casing.embedding.weight"].shape == (8, 4)
    tags = load(str(tmp_path), "cpu").tag([["Anna", "visited", "PARIS", "in", "1990", "."]])
    assert len(tags[0]) == 6


def test_lexicon_embedding_gives_each_type_rows_of_its_own():
    torch.manual_seed(0)
    module = LexiconEmbedding(num_types=2, dim=3)
    positions = torch.tensor([[[0, 4], [1, 0]]])  # (B=1, T=2, L=2)
    out = module(positions)
    assert out.shape == (1, 2, 6)
    rows = module.embedding.weight
    assert torch.equal(out[0, 0], torch.cat([rows[0], rows[5 + 4]]))
    assert torch.equal(out[0, 1], torch.cat([rows[1], rows[5 + 0]]))
