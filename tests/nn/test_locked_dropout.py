"""``model.locked_dropout``: one dropout mask per sentence, shared by all its words."""

import pytest
import torch

from crftag.inference.loading import load
from crftag.modelfiles.checkpoint import save_model
from crftag.nn.encoders import LockedDropout


def test_one_mask_per_sentence_and_feature():
    torch.manual_seed(0)
    inputs = torch.rand(6, 9, 40) + 0.5  # (B, T, D), no zeros of its own
    dropout = LockedDropout(0.5).train()
    ratio = dropout(inputs) / inputs  # (B, T, D): the mask, scaled by 1 / keep
    assert torch.equal(ratio, ratio[:, :1].expand_as(ratio))  # the same at every word
    assert set(ratio.unique().tolist()) == {0.0, 2.0}
    # different sentences draw different masks
    assert not torch.equal(ratio[0, 0], ratio[1, 0])


def test_the_expected_value_is_kept():
    torch.manual_seed(1)
    inputs = torch.ones(400, 3, 250)
    outputs = LockedDropout(0.3).train()(inputs)
    assert outputs.mean().item() == pytest.approx(1.0, abs=0.01)
    assert (outputs == 0).float().mean().item() == pytest.approx(0.3, abs=0.01)


def test_identity_outside_training_and_at_zero():
    inputs = torch.randn(2, 5, 7)
    assert torch.equal(LockedDropout(0.5).eval()(inputs), inputs)
    assert torch.equal(LockedDropout(0.0).train()(inputs), inputs)


def test_gradient_passes_the_kept_features_only():
    torch.manual_seed(2)
    inputs = torch.randn(3, 4, 8, requires_grad=True)
    outputs = LockedDropout(0.5).train()(inputs)
    outputs.sum().backward()
    kept = outputs.detach() != 0
    assert torch.equal(inputs.grad, kept.float() * 2.0)


@pytest.mark.parametrize("p", [1.0, -0.1])
def test_a_probability_outside_the_range_is_refused(p):
    with pytest.raises(ValueError, match="dropout probability"):
        LockedDropout(p)


def test_a_trained_and_reloaded_model_keeps_the_setting(train_tiny, tmp_path):
    tagger, _ = train_tiny(train__epochs=1, model__locked_dropout=True, model__dropout=0.4)
    save_model(str(tmp_path / "model.pt"), tagger.loaded)
    for model in (tagger.model, load(str(tmp_path / "model.pt"), "cpu").model):
        assert isinstance(model.dropout, LockedDropout) and model.dropout.p == 0.4
