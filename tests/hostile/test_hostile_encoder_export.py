"""Hostile exports of a model with a pretrained encoder: its tokenizer, settings, graph or
layer mix missing or altered, a sentence of 10,000 tokens, words the tokenizer makes nothing
of, and the NumPy export asked of it. Each is one line naming the file, or a correct answer."""

import json

import onnx
import pytest
from hostile_files import assert_refused

pytest.importorskip("transformers")
pytest.importorskip("onnxruntime")

from crftag.inference.loading import load  # noqa: E402
from crftag.inference.tagger import Tagger  # noqa: E402
from crftag.modelfiles.checkpoint import load_model  # noqa: E402
from tests.inference.encoder_exports import encoder_model  # noqa: E402


@pytest.fixture(scope="module")
def exported(tmp_path_factory, tiny_args):
    folder = tmp_path_factory.mktemp("encoder")
    settings = {"model__transformer_layers": 2, "model__transformer_pooling": "mean"}
    return encoder_model(folder, tiny_args, int8=False, **settings)


def predict(invoke, model):
    return invoke(
        ["predict", "-m", str(model), "--format", "jsonl"], stdin="John lives in Berlin .\n"
    )


def altered(source, target, change):
    """A copy of the ONNX model ``source`` at ``target``, ``change`` (proto -> None) applied."""
    proto = onnx.load(str(source))
    change(proto)
    onnx.save(proto, str(target))
    return target


def metadata(proto, key, edit):
    """Replace the metadata entry ``key`` by ``edit(its value)``, or drop it where that is None."""
    entries = {p.key: p.value for p in proto.metadata_props}
    value = edit(entries[key])
    del proto.metadata_props[:]
    entries = (
        {**entries, key: value}
        if value is not None
        else {k: v for k, v in entries.items() if k != key}
    )
    onnx.helper.set_model_props(proto, entries)


def tokenizer_files(edit):
    """A change of the model description's tokenizer files by ``edit`` (files -> None)."""

    def change(text):
        described = json.loads(text)
        edit(described["vocabularies"]["transformer"]["tokenizer"])
        return json.dumps(described)

    return change


def shifted_ids(files):
    """tokenizer.json with every subword's id moved past the encoder's embeddings."""
    tokenizer = json.loads(files["tokenizer.json"])
    tokenizer["model"]["vocab"] = {k: v + 5000 for k, v in tokenizer["model"]["vocab"].items()}
    files["tokenizer.json"] = json.dumps(tokenizer)


TOKENIZER_DAMAGES = {
    "missing tokenizer": (lambda files: files.pop("tokenizer.json"), "tokenizer.json: missing"),
    "garbled tokenizer": (
        lambda files: files.update({"tokenizer.json": "{not json"}),
        "tokenizer.json: not JSON",
    ),
    "shifted ids": (shifted_ids, "altered"),
}


@pytest.mark.parametrize("damage", TOKENIZER_DAMAGES)
def test_a_missing_or_altered_tokenizer_is_one_line(invoke, exported, tmp_path, damage):
    edit, message = TOKENIZER_DAMAGES[damage]
    path = altered(
        exported[1], tmp_path / "m.onnx", lambda p: metadata(p, "crftag", tokenizer_files(edit))
    )
    assert_refused(predict(invoke, path), path, message)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda text: None, "is missing"),
        (lambda text: "[1, 2]", "not the settings crftag writes"),
        (lambda text: text.replace('"width": ', '"width": -'), "a window of"),
        (lambda text: text.replace('"pooling": "mean"', '"pooling": "max"'), "pooling 'max'"),
    ],
    ids=["missing", "a list", "negative width", "unknown pooling"],
)
def test_missing_or_altered_encoder_settings_are_one_line(
    invoke, exported, tmp_path, edit, message
):
    path = altered(
        exported[1], tmp_path / "m.onnx", lambda p: metadata(p, "crftag.transformer", edit)
    )
    assert_refused(predict(invoke, path), path, message)


def without_weight_of(word):
    """A change dropping the weight read by the graph's first node whose name holds ``word``
    (the layer mix's shares, an attention projection's matrix)."""

    def change(proto):
        weights = proto.graph.initializer
        names = {weight.name: i for i, weight in enumerate(weights)}
        node = next(n for n in proto.graph.node if word in n.name and set(n.input) & set(names))
        del weights[names[next(name for name in node.input if name in names)]]

    return change


def without_encoder_node(proto):
    nodes = proto.graph.node
    del nodes[next(i for i, node in enumerate(nodes) if node.name.startswith("transformer/"))]


@pytest.mark.parametrize(
    "change",
    [without_weight_of("/mix/"), without_weight_of("attention"), without_encoder_node],
    ids=["layer mix", "attention weight", "encoder node"],
)
def test_a_graph_without_its_layer_mix_or_an_encoder_piece_is_one_line(
    invoke, exported, tmp_path, change
):
    path = altered(exported[1], tmp_path / "m.onnx", change)
    assert_refused(predict(invoke, path), path)


def test_a_sentence_of_10000_tokens_and_empty_words_are_tagged_as_torch_tags_them(exported):
    checkpoint, path, _ = exported
    words = "UN backs Dutch plan to ban Danishness cheese \u200b .".split(" ")
    sentence = (words * 1000)[:10_000]
    expected = Tagger.from_loaded(load_model(str(checkpoint))).predict([sentence])[0].tags
    assert load(str(path)).predict([sentence])[0].tags == expected
    assert len(expected) == 10_000


def test_the_numpy_export_refuses_an_encoder_model_in_one_line(invoke, exported, tmp_path):
    checkpoint = exported[0]
    target = tmp_path / "m.npz"
    result = invoke(["export", str(checkpoint), str(target), "--format", "numpy"])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "--format onnx" in result.stderr and result.stderr.startswith("crftag: error: ")
    assert not target.exists()
