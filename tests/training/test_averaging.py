"""Weight averaging (train.average_from): the running mean, swapping it in, training with it."""

import torch

from crftag import cli
from crftag.training.averaging import WeightAverage


def _model() -> torch.nn.Module:
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 2))
    model[1].weight.requires_grad_(False)  # frozen: never averaged
    return model


def test_the_mean_of_several_epochs_is_swapped_in_and_out():
    torch.manual_seed(0)
    model = _model()
    average = WeightAverage(model)
    frozen = model[1].weight.detach().clone()
    samples = []
    for _ in range(3):
        with torch.no_grad():
            for parameter in model.parameters():
                if parameter.requires_grad:
                    parameter.normal_()
        samples.append([p.detach().clone() for p in model.parameters()])
        average.add()
    last = samples[-1]
    with average.applied():
        for i, parameter in enumerate(model.parameters()):
            if parameter.requires_grad:
                mean = sum(sample[i] for sample in samples) / 3
                torch.testing.assert_close(parameter, mean)
        torch.testing.assert_close(model[1].weight, frozen, rtol=0, atol=0)
    for parameter, raw in zip(model.parameters(), last, strict=True):
        assert torch.equal(parameter, raw)  # the raw weights come back exactly

    restored = WeightAverage(model)
    restored.load_state_dict(average.state_dict())
    assert restored.count == 3
    with average.applied():
        expected = [p.detach().clone() for p in model.parameters()]
    with restored.applied():
        for parameter, mean in zip(model.parameters(), expected, strict=True):
            assert torch.equal(parameter, mean)


def test_no_samples_leaves_the_model_alone():
    model = _model()
    before = [p.detach().clone() for p in model.parameters()]
    with WeightAverage(model).applied():
        assert all(torch.equal(p, b) for p, b in zip(model.parameters(), before, strict=True))


def _final_weights(train_tiny, **settings) -> tuple[dict, list]:
    """The weights a run without dev keeps (its last epoch's), and its epochs."""
    tagger, epochs = train_tiny(train__seed=5, data__dev=None, **settings)
    return tagger.model.state_dict(), epochs


def test_the_saved_model_is_the_mean_of_the_epochs_from_average_from(train_tiny):
    # Averaging never changes the training trajectory, so runs of 2 and 3 epochs without it
    # give the raw weights that a 3-epoch run averaging from epoch 2 must keep the mean of.
    second, _ = _final_weights(train_tiny, train__epochs=2)
    third, _ = _final_weights(train_tiny, train__epochs=3)
    averaged, epochs = _final_weights(train_tiny, train__epochs=3, train__average_from=2)
    changed = 0
    for name, weights in averaged.items():
        if not weights.is_floating_point():  # masks and the like, the same in every run
            assert torch.equal(weights, third[name]), name
            continue
        torch.testing.assert_close(weights, (second[name] + third[name]) / 2)
        changed += not torch.equal(weights, third[name])
    assert changed  # the trained weights moved between epochs 2 and 3
    assert [e.averaged for e in epochs] == [False, True, True]


def test_averaging_after_the_last_epoch_is_a_config_error(tmp_path, capsys, tiny_args):
    args = ["train", "configs/sample.yaml", "-o", str(tmp_path)]
    assert cli.run([*args, *tiny_args(train__epochs=3, train__average_from=4)]) == 2
    error = capsys.readouterr().err.strip()
    assert error == (
        "crftag: error: train.average_from: 4 is after the last epoch (train.epochs: 3), "
        "so nothing would be averaged"
    )
    assert not (tmp_path / "model.pt").exists()


def test_an_empty_average_survives_a_state_round_trip():
    # What resume.pt holds for a run that has not reached train.average_from (or has it off).
    model = _model()
    restored = WeightAverage(model)
    restored.load_state_dict(WeightAverage(model).state_dict())
    assert restored.count == 0
    before = [p.detach().clone() for p in model.parameters()]
    with restored.applied():
        assert all(torch.equal(p, b) for p, b in zip(model.parameters(), before, strict=True))
