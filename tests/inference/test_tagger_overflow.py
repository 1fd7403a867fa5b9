"""Weights that push the CRF's scores out of float range: never a probability of 1 beside
token probabilities that say otherwise. A model whose tag scores reach past what float32 can
hold to 0.001 is refused when loaded; a sharp model within that range gives probabilities that
agree (the log-space recursions where the scaled ones underflow), in both backends; and a batch
whose quantities are still not numbers is one line, not NaN in the output."""

import copy
import math

import pytest
import torch

from crftag.errors import CrftagError
from crftag.inference.base import BatchScores, _check_scored
from crftag.inference.loading import load
from crftag.modelfiles.checkpoint import export_arrays, load_model, model_payload


@pytest.fixture(scope="module")
def payload(sample_model):
    return model_payload(load_model(str(sample_model)))


def sharp_model(payload, directory, reach):
    """The sample model with its projection scaled so its tag scores reach ``reach`` per
    token (within the bound), as a checkpoint and as its export."""
    state = copy.deepcopy(payload)
    weights = state["state_dict"]
    bound = float(
        (weights["projection.weight"].abs().sum(1) + weights["projection.bias"].abs()).max()
    )
    for name in ("projection.weight", "projection.bias"):
        weights[name] = weights[name] * (reach / bound)
    checkpoint = directory / "sharp.pt"
    torch.save(state, checkpoint)
    exported = directory / "sharp.npz"
    export_arrays(str(exported), load_model(str(checkpoint)))
    return checkpoint, exported


@pytest.mark.parametrize(
    ("names", "reach", "message"),
    [
        (["projection.weight"], 1e30, "projection gives tag scores up to "),
        (["crf.transitions"], 1e30, "crf.transitions gives tag scores up to 1e+30"),
        (["crf.transitions"], 1e5, "crf.transitions gives tag scores up to 1e+05"),
        (["crf.end_transitions"], 2e4, "crf.end_transitions gives tag scores up to 2e+04"),
        (["projection.bias"], 1e5, "projection gives tag scores up to "),
    ],
)
def test_tag_scores_beyond_float32s_precision_are_refused(payload, tmp_path, names, reach, message):
    state = copy.deepcopy(payload)
    for name in names:
        state["state_dict"][name] *= reach / float(state["state_dict"][name].abs().max())
    path = tmp_path / "huge.pt"
    torch.save(state, path)
    with pytest.raises(CrftagError) as caught:
        load_model(str(path))
    assert str(caught.value).startswith(f"{path}: {message}")


def test_the_export_of_such_a_model_is_refused_too(payload, tmp_path, monkeypatch):
    from crftag.modelfiles import checkpoint_schema

    state = copy.deepcopy(payload)
    state["state_dict"]["crf.transitions"] *= 1e30 / float(
        state["state_dict"]["crf.transitions"].abs().max()
    )
    path = tmp_path / "huge.pt"
    torch.save(state, path)
    monkeypatch.setattr(checkpoint_schema, "check_score_range", lambda *_: None)
    exported = tmp_path / "huge.npz"
    export_arrays(str(exported), load_model(str(path)))  # written past the check, to read it
    monkeypatch.undo()
    with pytest.raises(CrftagError, match="crf.transitions gives tag scores up to 1e"):
        load(str(exported), "cpu")


def test_a_sharp_model_gives_probabilities_that_agree(payload, tmp_path):
    checkpoint, exported = sharp_model(payload, tmp_path, 5000.0)
    sentence = "John Smith lives in Berlin .".split()
    # Emissions of thousands: the scaled recursions underflow (float32 here).
    tagger = load(str(checkpoint), "cpu")
    batch = next(tagger._batches([sentence], 1, None))[1]
    with torch.inference_mode():
        emissions = tagger.model.emissions(batch)
        assert not bool(torch.isfinite(tagger.model.crf.marginals(emissions, batch.mask)).all())
    records = [
        load(str(path), "cpu").predict([sentence], probs="all")[0]
        for path in (checkpoint, exported)
    ]
    for record in records:
        assert 0.0 < record.probability <= 1.0 and math.isfinite(record.score)
        assert all(math.isfinite(p) and 0.0 <= p <= 1.0 + 1e-9 for p in record.token_probs)
        # A sequence is never likelier than any of its tokens' tags.
        assert record.probability <= min(record.token_probs) + 1e-6
        for distribution in record.marginals:
            assert abs(sum(distribution.values()) - 1.0) < 1e-6
    assert records[0].tags == records[1].tags
    for torch_probs, array_probs in zip(
        records[0].token_probs, records[1].token_probs, strict=True
    ):
        assert abs(torch_probs - array_probs) < 1e-4


@pytest.mark.parametrize(
    ("scores", "log_z"),
    [([1.0], [math.nan]), ([math.inf], [math.inf]), ([50.0], [10.0])],
    ids=["nan log Z", "infinite", "a path above log Z"],
)
def test_a_batch_whose_quantities_are_not_numbers_is_refused(scores, log_z):
    scored = BatchScores([[0]], scores, log_z, [[1.0]])
    with pytest.raises(CrftagError, match="^model.npz: the CRF's scores on this input overflow"):
        _check_scored(scored, "model.npz")


def test_a_batch_of_numbers_passes():
    _check_scored(BatchScores([[0, 1]], [-1.5], [-1.5 + 1e-12], [[0.5]]), "model.npz")
