"""A damaged encoder folder (what ``model.transformer`` names): each damage is one line naming
the folder and the file, exit status 2, before any training starts; nothing is trained on a
folder whose parts do not fit (a config with fewer layers than its weights, a tokenizer whose
ids run past the embedding table)."""

import json
import os
import shutil

import pytest

pytest.importorskip("transformers")

from hostile_files import PNG, assert_refused, snapshot, truncated  # noqa: E402

from crftag.errors import CrftagError  # noqa: E402
from crftag.nn.transformer import load_encoder_files, load_encoder_weights  # noqa: E402
from tests.nn.tiny_bert import bert_tokenizer, save_tiny_bert  # noqa: E402


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return save_tiny_bert(tmp_path_factory.mktemp("bert"))


@pytest.fixture(scope="module")
def small_bert(tmp_path_factory):
    """The tiny BERT with an embedding table of 10 rows."""
    from transformers import BertConfig, BertModel

    folder = tmp_path_factory.mktemp("small")
    config = BertConfig(
        vocab_size=10,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(folder)
    return folder


def _config(**changes):
    def change(folder):
        path = folder / "config.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))

    return change


def _write(name, data):
    def change(folder):
        (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())

    return change


def _remove(*names):
    def change(folder):
        for name in names:
            (folder / name).unlink()

    return change


def _empty(folder):
    for name in os.listdir(folder):
        (folder / name).unlink()


def _big_tokenizer(folder):
    """A WordPiece tokenizer of 6,000 words beside the encoder of fewer rows."""
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *(f"w{i}" for i in range(5995))]
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (folder / name).unlink(missing_ok=True)
    bert_tokenizer(words, 64).save_pretrained(folder)


def _safetensors(damage):
    def change(folder):
        path = folder / "model.safetensors"
        path.write_bytes(damage(path.read_bytes()))

    return change


# Each damage: (what it does to a copy of the tiny BERT, the file the refusal names, a text).
DAMAGES = {
    "an empty folder": (_empty, "config.json", "missing"),
    "no tokenizer files": (
        _remove("tokenizer.json", "tokenizer_config.json", "vocab.txt"),
        "tokenizer.json",
        "missing",
    ),
    "tokenizer.json empty": (_write("tokenizer.json", ""), "tokenizer.json", "not JSON"),
    "tokenizer.json not JSON": (_write("tokenizer.json", "{oops"), "tokenizer.json", "not JSON"),
    "tokenizer.json of another kind": (
        _write("tokenizer.json", '{"version": "1.0", "model": {"type": "Nonsense"}}'),
        "tokenizer.json",
        "not a tokenizer",
    ),
    "tokenizer.json a list": (_write("tokenizer.json", "[1, 2]"), "tokenizer.json", "mapping"),
    "tokenizer.json random bytes": (_write("tokenizer.json", PNG), "tokenizer.json", "UTF-8"),
    "tokenizer_config.json not JSON": (
        _write("tokenizer_config.json", "nope"),
        "tokenizer_config.json",
        "not JSON",
    ),
    "unk_token not in tokenizer.json": (
        _write("tokenizer_config.json", '{"unk_token": "<nowhere>"}'),
        "tokenizer_config.json",
        "unk_token",
    ),
    "config.json missing": (_remove("config.json"), "config.json", "missing"),
    "config.json empty": (_write("config.json", ""), "config.json", "not JSON"),
    "config.json random bytes": (_write("config.json", PNG), "config.json", "UTF-8"),
    "config.json a list": (_write("config.json", "[]"), "config.json", "mapping"),
    "no model_type": (_config(model_type=None), "config.json", "model_type"),
    "model_type unknown": (_config(model_type="nonsense"), "config.json", "it reads bert"),
    "hidden_size 0": (_config(hidden_size=0), "config.json", "hidden_size 0"),
    "hidden_size -32": (_config(hidden_size=-32), "config.json", "hidden_size -32"),
    "hidden_size big": (_config(hidden_size="big"), "config.json", "hidden_size 'big'"),
    "hidden_size true": (_config(hidden_size=True), "config.json", "hidden_size True"),
    "hidden_size 33, 2 heads": (_config(hidden_size=33), "config.json", "does not divide"),
    "num_attention_heads 0": (_config(num_attention_heads=0), "config.json", "heads 0"),
    "num_hidden_layers 0": (_config(num_hidden_layers=0), "config.json", "layers 0"),
    "num_hidden_layers 100000": (_config(num_hidden_layers=100000), "config.json", "100000"),
    "vocab_size 2**34": (_config(vocab_size=2**34), "config.json", "vocab_size"),
    "hidden_size 16384, 256 layers": (
        _config(hidden_size=16384, num_hidden_layers=256, num_attention_heads=16),
        "config.json",
        "parameters",
    ),
    "vocab_size 10 against weights of 284 rows": (
        _config(vocab_size=10),
        "tokenizer.json",
        "embedding table of 10 rows",
    ),
    "a tokenizer of 6,000 words": (_big_tokenizer, "tokenizer.json", "past the encoder's"),
    "no weights": (_remove("model.safetensors"), "model.safetensors", "missing"),
    "model.safetensors halved": (_safetensors(truncated), "model.safetensors", "safetensors"),
    "model.safetensors short by 1 byte": (
        _safetensors(lambda data: data[:-1]),
        "model.safetensors",
        "safetensors",
    ),
    "model.safetensors empty": (_safetensors(lambda data: b""), "model.safetensors", ""),
    "model.safetensors random bytes": (_safetensors(lambda data: PNG), "model.safetensors", ""),
}
# Damages only the weights show: the folder's config and tokenizer files are sound.
WEIGHT_DAMAGES = {
    "weights of 10 rows against a config of 284": (None, "word_embeddings"),
    "num_hidden_layers 1 beside weights of 2": (_config(num_hidden_layers=1), "layer.1"),
    "num_hidden_layers 3 beside weights of 2": (_config(num_hidden_layers=3), "layer.2"),
}


def _damaged(bert, tmp_path, change):
    folder = tmp_path / "encoder"
    shutil.copytree(bert, folder)
    change(folder)
    return folder


def _refusal(folder, load=load_encoder_files) -> str:
    with pytest.raises(CrftagError) as raised:
        load(str(folder))
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"model.transformer: {folder}: "), message
    return message


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_folder_is_one_line_naming_the_file(bert, tmp_path, damage):
    change, file_name, text = DAMAGES[damage]
    folder = _damaged(bert, tmp_path, change)
    message = _refusal(folder)
    assert f": {file_name}: " in message and text in message
    assert _refusal(folder, load_encoder_weights) == message  # the weights' load checks it too


@pytest.mark.parametrize("damage", WEIGHT_DAMAGES)
def test_weights_that_do_not_fit_the_config_are_one_line(bert, small_bert, tmp_path, damage):
    change, text = WEIGHT_DAMAGES[damage]
    if change is None:  # the weights of the encoder of 10 rows
        change = _write("model.safetensors", (small_bert / "model.safetensors").read_bytes())
    folder = _damaged(bert, tmp_path, change)
    load_encoder_files(str(folder))  # config and tokenizer agree
    message = _refusal(folder, load_encoder_weights)
    assert "the weights do not fit config.json" in message and text in message


@pytest.mark.parametrize(
    "damage", ["tokenizer.json not JSON", "a tokenizer of 6,000 words", "model.safetensors halved"]
)
def test_training_stops_before_it_starts(bert, tmp_path, invoke, tiny_args, damage):
    change, file_name, _ = DAMAGES[damage]
    folder = _damaged(bert, tmp_path, change)
    before = {name: snapshot(folder / name) for name in os.listdir(folder)}
    run = tmp_path / "run"
    options = tiny_args(model__transformer=str(folder), train__epochs=1)
    result = invoke(["train", "configs/sample.yaml", "-o", str(run), *options])
    assert result.status == 2
    assert_refused(result, folder, file_name)
    assert not (run / "model.pt").exists() and "transformer features" not in result.stderr
    assert {name: snapshot(folder / name) for name in os.listdir(folder)} == before


def test_training_stops_on_weights_that_do_not_fit(bert, tmp_path, invoke, tiny_args):
    folder = _damaged(bert, tmp_path, _config(num_hidden_layers=1))
    run = tmp_path / "run"
    options = tiny_args(model__transformer=str(folder), train__epochs=1)
    result = invoke(["train", "configs/sample.yaml", "-o", str(run), *options])
    assert result.status == 2
    assert_refused(result, folder, "config.json", "layer.1")
    assert not (run / "model.pt").exists() and "transformer features" not in result.stderr
