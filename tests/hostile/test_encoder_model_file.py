"""A model file's embedded encoder (its config and tokenizer files, kept in the vocabularies) is
checked against bounds before anything is built from it: each damage is one line naming the
model file, with a non-zero exit, and nothing is allocated or written first. Keys of the
encoder's config that its class does not define, and ``tokenizer_class``, are not read: the
model tags as before. The model is the tiny encoder model trained under the transformers of
this major version (tests/fixtures/encoder_models)."""

import json
import pathlib

import pytest
import torch

transformers = pytest.importorskip("transformers")

from hostile_files import DAMAGES, assert_refused, snapshot  # noqa: E402

from tests.nn.tiny_bert import bert_tokenizer  # noqa: E402

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "encoder_models"
MODEL = FIXTURES / f"tf{transformers.__version__.split('.')[0]}.pt"
SENTENCE = "John Smith lives in Berlin ."


@pytest.fixture(scope="module")
def stored():
    return torch.load(MODEL, weights_only=True)


def _with_encoder(stored, tmp_path, change) -> pathlib.Path:
    """The model file with ``change(encoder)`` applied to its embedded encoder's state
    (``{"config": ..., "tokenizer": {name: text}}``)."""
    vocabularies = json.loads(stored["vocabularies"])
    change(vocabularies["transformer"])
    path = tmp_path / "model.pt"
    torch.save({**stored, "vocabularies": json.dumps(vocabularies)}, path)
    return path


def predict(invoke, path):
    return invoke(
        ["predict", "-m", str(path), "--input-format", "tokens", "--format", "jsonl"],
        stdin=SENTENCE + "\n",
    )


def _config(**changes):
    def change(encoder):
        encoder["config"].update(changes)
        encoder["config"] = {k: v for k, v in encoder["config"].items() if v is not None}

    return change


def _tokenizer_file(name, text):
    def change(encoder):
        encoder["tokenizer"][name] = text

    return change


def _renamed_tokenizer(name):
    def change(encoder):
        encoder["tokenizer"][name] = encoder["tokenizer"].pop("tokenizer.json")

    return change


def _big_tokenizer(encoder):
    """A tokenizer of 6,000 words in place of the encoder's own (for a table of fewer rows)."""
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *(f"w{i}" for i in range(5995))]
    encoder["tokenizer"]["tokenizer.json"] = bert_tokenizer(words, 64).backend_tokenizer.to_str()


# Each damage of the embedded encoder: (the change, a text of the one-line refusal).
REFUSED = {
    "model_type missing": (_config(model_type=None), "no model_type"),
    "model_type unknown": (_config(model_type="nonsense"), "'nonsense' is not an encoder"),
    "model_type an integer": (_config(model_type=5), "model_type 5"),
    "model_type gpt2": (_config(model_type="gpt2"), "decoder-only"),
    "model_type t5": (_config(model_type="t5"), "encoder-decoder"),
    "hidden_size 0": (_config(hidden_size=0), "hidden_size 0"),
    "hidden_size true": (_config(hidden_size=True), "hidden_size True"),
    "3 heads for a width of 32": (_config(num_attention_heads=3), "does not divide"),
    "vocab_size 2**34": (_config(vocab_size=2**34), "vocab_size 17179869184"),
    "num_hidden_layers 100000": (_config(num_hidden_layers=100000), "num_hidden_layers 100000"),
    "a config of other sizes": (_config(hidden_size=64), "state_dict.transformer"),
    "a DistilBERT config": (_config(model_type="distilbert"), "state_dict"),
    "tokenizer.json empty": (_tokenizer_file("tokenizer.json", ""), "tokenizer.json: not JSON"),
    "tokenizer.json not JSON": (_tokenizer_file("tokenizer.json", "{x"), "not JSON"),
    "tokenizer.json another kind": (_tokenizer_file("tokenizer.json", '{"model": {}}'), "not a"),
    "tokenizer_config.json not JSON": (_tokenizer_file("tokenizer_config.json", "["), "not JSON"),
    "a file named ''": (_tokenizer_file("", "{}"), "file name ''"),
    "a file named '.'": (_tokenizer_file(".", "{}"), "file name '.'"),
    "a file named '../escaped.json'": (
        _tokenizer_file("../escaped.json", "{}"),
        "file name '../escaped.json'",
    ),
    "tokenizer.json renamed": (_renamed_tokenizer("other.json"), "tokenizer.json: missing"),
    "ids past the embedding table": (_big_tokenizer, "past the encoder's embedding table"),
}


@pytest.mark.parametrize("damage", REFUSED)
def test_a_damaged_embedded_encoder_is_one_line(invoke, stored, tmp_path, damage):
    change, text = REFUSED[damage]
    path = _with_encoder(stored, tmp_path, change)
    before = snapshot(path)
    assert_refused(predict(invoke, path), path, text)
    assert snapshot(path) == before
    assert sorted(item.name for item in tmp_path.iterdir()) == ["model.pt"]  # nothing escaped


def _tags(result):
    assert result.status == 0, result.stderr
    return [json.loads(line)["tags"] for line in result.stdout.splitlines()]


@pytest.mark.parametrize(
    "change",
    [
        _config(frobnicate=3, notes="a key of no class"),
        _tokenizer_file("tokenizer_config.json", '{"tokenizer_class": "NoSuchTokenizer"}'),
    ],
    ids=["an unknown config key", "tokenizer_class unknown"],
)
def test_what_is_not_read_changes_nothing(invoke, stored, tmp_path, change):
    expected = _tags(predict(invoke, MODEL))
    assert _tags(predict(invoke, _with_encoder(stored, tmp_path, change))) == expected
    assert expected[0] and len(expected[0]) == len(SENTENCE.split())


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_encoder_model_file_is_one_line(invoke, tmp_path, damage):
    path = tmp_path / "model.pt"
    path.write_bytes(DAMAGES[damage](MODEL.read_bytes()))
    before = snapshot(path)
    result = predict(invoke, path)
    if result.status == 0:  # a flipped weight the format cannot see: every record whole
        assert json.loads(result.stdout)["tokens"] == SENTENCE.split()
    else:
        assert_refused(result, path)
    assert snapshot(path) == before
