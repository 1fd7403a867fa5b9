"""Hostile model files for `predict -m`: a checkpoint (format 2, its vocabularies one JSON
string) and an ONNX export. Each damaged file is one line naming it, with a non-zero exit, and
is left as it was."""

import json

import pytest
import torch
from hostile_files import DAMAGES, assert_refused, snapshot

from crftag import cli


@pytest.fixture(scope="module")
def onnx_model(sample_model, tmp_path_factory):
    pytest.importorskip("onnxruntime")
    path = tmp_path_factory.mktemp("onnx") / "model.onnx"
    assert cli.run(["export", str(sample_model), str(path), "--format", "onnx"]) == 0
    return path


def predict(invoke, model):
    return invoke(
        ["predict", "-m", str(model), "--format", "jsonl"], stdin="John lives in Berlin .\n"
    )


def assert_tags_or_refuses(result, path):
    """A damage the format cannot see (a flipped weight) may still tag: then every record is
    whole; otherwise it is one line naming the file."""
    if result.status == 0:
        assert json.loads(result.stdout)["tokens"] == ["John", "lives", "in", "Berlin", "."]
    else:
        assert_refused(result, path)


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_checkpoint_is_one_line(invoke, sample_model, tmp_path, damage):
    path = tmp_path / "model.pt"
    path.write_bytes(DAMAGES[damage]((sample_model / "model.pt").read_bytes()))
    before = snapshot(path)
    assert_tags_or_refuses(predict(invoke, path), path)
    if damage != "flipped":
        assert predict(invoke, path).status != 0
    assert snapshot(path) == before


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_onnx_model_is_one_line(invoke, onnx_model, tmp_path, damage):
    path = tmp_path / "model.onnx"
    path.write_bytes(DAMAGES[damage](onnx_model.read_bytes()))
    before = snapshot(path)
    assert_tags_or_refuses(predict(invoke, path), path)
    if damage != "flipped":
        assert predict(invoke, path).status != 0
    assert snapshot(path) == before


@pytest.mark.parametrize(
    "vocabularies",
    [
        "[]",
        "null",
        '"words"',
        "{}",
        '{"words": 5}',
        '{"words": {"symbols": [1, 2]}}',
        "NaN",
        '{"words": {"symbols": ["<pad>", "<unk>"]}}',
    ],
)
def test_vocabularies_of_the_wrong_shape_are_one_line(invoke, sample_model, tmp_path, vocabularies):
    stored = torch.load(sample_model / "model.pt", weights_only=True)
    path = tmp_path / "model.pt"
    torch.save({**stored, "vocabularies": vocabularies}, path)
    assert_refused(predict(invoke, path), path, "vocabularies")


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_weights_that_are_not_finite_are_one_line(invoke, sample_model, tmp_path, value):
    stored = torch.load(sample_model / "model.pt", weights_only=True)
    name = next(name for name in stored["state_dict"] if name.endswith("weight"))
    weights = {**stored["state_dict"], name: torch.full_like(stored["state_dict"][name], value)}
    path = tmp_path / "model.pt"
    torch.save({**stored, "state_dict": weights}, path)
    assert_refused(predict(invoke, path), path, name)
