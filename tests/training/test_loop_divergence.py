"""A loss that stops being a finite number stops training with one line, and nothing of the
diverged epoch is saved: never a model whose weights are NaN."""

import torch
from diverging import diverge_in_epoch

# Plain SGD at the largest rate the config takes, summed loss, no clipping: the sample's
# weights overflow within the first epoch.
DIVERGING = {
    "train__optimizer": "sgd",
    "train__lr": 10.0,
    "train__loss_reduction": "sum",
    "train__clip_grad_norm": None,
}


def test_a_diverging_run_stops_and_saves_no_model(invoke, tiny_args, tmp_path):
    run = tmp_path / "run"
    args = ["train", "configs/sample.yaml", "-o", str(run), *tiny_args(**DIVERGING)]
    result = invoke(args)
    assert (result.status, result.stdout) == (2, "")
    assert result.stderr.startswith("crftag: error: training diverged in epoch 1: the loss (")
    assert "nothing of this epoch is saved" in result.stderr
    assert result.stderr.count("\n") == 1
    assert not (run / "model.pt").exists()


def test_an_epoch_that_diverges_after_a_good_one_keeps_the_good_model(
    invoke, tiny_args, tmp_path, monkeypatch
):
    diverge_in_epoch(monkeypatch, 2)
    run = tmp_path / "run"
    result = invoke(["train", "configs/sample.yaml", "-o", str(run), *tiny_args()])
    assert result.status == 2 and "training diverged in epoch 2" in result.stderr
    weights = torch.load(run / "model.pt", weights_only=True)["state_dict"].values()
    assert all(bool(torch.isfinite(w).all()) for w in weights if w.is_floating_point())
