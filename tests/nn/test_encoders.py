"""WordEmbedding: rows fixed out of training look up, save, load and train as if trained."""

import pytest
import torch

from crftag.nn.encoders import WordEmbedding

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
