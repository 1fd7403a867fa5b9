"""Exported models that read but are wrong: each is a one-line ``MODEL: ...`` error before
anything is tagged (no traceback, no NaN scores, no silently changed tags), through the NumPy
tagger, the torch loader and the command line; and the shapes the schema expects are the torch
network's own for every architecture an export can hold."""

import json

import numpy as np
import pytest
import torch

from crftag.data.vocab import Vocabularies, Vocabulary
from crftag.errors import CrftagError
from crftag.inference.array_tagger import ArrayTagger
from crftag.modelfiles.checkpoint import export_arrays, load_model
from crftag.nn.taggers import build_model
from crftag.runtime.archive_schema import expected_arrays

METADATA = "__metadata__"


@pytest.fixture(scope="module")
def exported(sample_model, tmp_path_factory):
    path = tmp_path_factory.mktemp("export") / "model.npz"
    export_arrays(str(path), load_model(str(sample_model)))
    with np.load(path) as archive:
        return {name: archive[name] for name in archive.files}


def rewritten(arrays, tmp_path, change):
    """The export's arrays, ``change``d (a function of the arrays and the metadata), saved."""
    arrays = {name: array.copy() for name, array in arrays.items()}
    metadata = json.loads(arrays.pop(METADATA).tobytes())
    change(arrays, metadata)
    encoded = np.frombuffer(json.dumps(metadata).encode(), dtype=np.uint8)
    path = tmp_path / "bad.npz"
    np.savez(path, **{METADATA: encoded}, **arrays)
    return path


def scaled(name, value):
    def change(arrays, _):
        arrays[name] = arrays[name].astype(np.float32)
        arrays[name].flat[0] = value

    return change


def fewer_tags(arrays, metadata):
    metadata["vocabularies"]["tags"]["symbols"] = metadata["vocabularies"]["tags"]["symbols"][:-3]


CASES = {
    "nan projection": (scaled("projection.weight", np.nan), "projection.weight: holds NaN"),
    "inf transitions": (scaled("crf.transitions", np.inf), "crf.transitions: holds NaN"),
    "nan embedding": (scaled("word_embedding.weight", np.nan), "word_embedding.weight: holds"),
    "nan lstm bias": (scaled("encoder.lstm.bias_hh_l0", np.nan), "bias_hh_l0: holds NaN"),
    "int64 projection": (
        lambda a, _: a.update({"projection.weight": a["projection.weight"].astype(np.int64)}),
        "projection.weight: dtype int64, expected float32",
    ),
    "float allowed": (
        lambda a, _: a.update({"crf.allowed": a["crf.allowed"].astype(np.float32)}),
        "crf.allowed: dtype float32, expected bool",
    ),
    "wrong shape": (
        lambda a, _: a.update({"projection.weight": a["projection.weight"][:, :5]}),
        "projection.weight: shape",
    ),
    "5x5 transitions": (
        lambda a, _: a.update({"crf.transitions": np.zeros((5, 5), np.float32)}),
        "crf.transitions: shape (5, 5)",
    ),
    "missing array": (lambda a, _: a.pop("projection.bias"), "missing projection.bias"),
    "extra array": (
        lambda a, _: a.update({"extra.weight": np.zeros(2, np.float32)}),
        "unexpected extra.weight",
    ),
    "tag vocabulary 3 short": (fewer_tags, "projection.weight: shape"),
    "no vocabularies": (lambda _, m: m.pop("vocabularies"), "no 'vocabularies'"),
    "huge config": (
        lambda _, m: m["config"]["model"].update({"hidden_size": 10**9}),
        "model.hidden_size",
    ),
    "version a float": (
        lambda _, m: m.update({"format_version": 1.0}),
        "format_version: expected int, got float",
    ),
    "quantized not a list": (lambda _, m: m.update({"quantized": 5}), "quantized: expected"),
    "quantized, scales missing": (
        lambda _, m: m.update({"quantized": ["projection.weight"]}),
        "'projection.weight' or its scales are missing",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_malformed_export_is_a_one_line_error_in_both_backends(exported, tmp_path, case):
    change, message = CASES[case]
    path = rewritten(exported, tmp_path, change)
    for load in (ArrayTagger.load, load_model):
        with pytest.raises(CrftagError) as caught:
            load(str(path))
        text = str(caught.value)
        assert text.startswith(f"{path}: ") and message in text, text
        assert "\n" not in text and len(text) < 400


def test_the_command_line_tags_nothing_with_nan_weights(exported, tmp_path, invoke):
    path = rewritten(exported, tmp_path, scaled("projection.weight", np.nan))
    for command in (
        ["predict", "-m", str(path), "--format", "jsonl"],
        ["eval", "-m", str(path), "data/ner_sample.dev.conll"],
    ):
        result = invoke(command, stdin="Berlin\n")
        assert (result.status, result.stdout) == (2, "")
        assert result.stderr == (
            f"crftag: error: {path}: array projection.weight: holds NaN or infinite values\n"
        )


def test_a_well_formed_export_still_loads(exported, tmp_path):
    path = rewritten(exported, tmp_path, lambda *_: None)
    tagger = ArrayTagger.load(str(path))
    assert tagger.tag([["Berlin"]])[0][0] in tagger.vocabularies.tags.symbols


ARCHITECTURES = {
    "cnn": {},
    "lstm characters": {"char_encoder": "lstm"},
    "no characters": {"char_encoder": "none"},
    "casing": {"casing_dim": 4},
    "hidden layer": {"hidden_layer": 7},
    "document context, 2 layers": {"document_context": True, "num_layers": 2},
}


@pytest.mark.parametrize("architecture", list(ARCHITECTURES))
def test_the_expected_arrays_are_the_torch_networks(tiny_config, architecture):
    settings = {f"model__{key}": value for key, value in ARCHITECTURES[architecture].items()}
    config = tiny_config(**settings)
    chars = ["<pad>", "<unk>", "a", "B", "1"]
    vocabularies = Vocabularies(
        words=Vocabulary(["<pad>", "<unk>", "x", "y"]),
        chars=Vocabulary(chars),
        tags=Vocabulary(["B-X", "E-X", "O", "S-X"], has_unknown=False),
    )
    with torch.device("meta"):
        network = build_model(config, vocabularies, "none")
    model = vars(config.model)
    expected = expected_arrays(model, vocabularies.to_state())
    actual = {
        name: (tuple(tensor.shape), "bool" if tensor.dtype == torch.bool else "float")
        for name, tensor in network.state_dict().items()
    }
    assert expected == actual
