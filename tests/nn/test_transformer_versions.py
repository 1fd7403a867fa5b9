"""Encoder models across transformers' major versions: each model file of
tests/fixtures/encoder_models (one trained under transformers 4, one under 5, by its make.py)
loads under the transformers installed and tags its sentences as it did where it was trained,
one tag per token. CI runs this file under both versions (.ci/run)."""

import json
import pathlib

import pytest

pytest.importorskip("transformers")

from crftag import load  # noqa: E402

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "encoder_models"
MODELS = sorted(FIXTURES.glob("tf*.pt"))


def test_a_model_of_each_major_version_is_there():
    assert [model.stem for model in MODELS] == ["tf4", "tf5"]


@pytest.mark.parametrize("model", MODELS, ids=lambda path: path.stem)
def test_a_model_trained_under_either_version_tags_as_it_did(model):
    recorded = json.loads(model.with_suffix(".json").read_text(encoding="utf-8"))
    tags = load(str(model)).tag(recorded["sentences"])
    assert tags == recorded["tags"]
    assert [len(row) for row in tags] == [len(tokens) for tokens in recorded["sentences"]]
