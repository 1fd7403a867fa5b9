"""The encoder's settings: where ``model.transformer`` is looked for (a relative path in a
config file is the folder beside the file, else a name in the Hugging Face cache; never the
working directory), document context without a BiLSTM, and each setting missing, empty,
wrong-typed or out of range: one line, exit status 2, before anything trains."""

import os

import pytest

pytest.importorskip("transformers")

from crftag.config import load_config  # noqa: E402
from crftag.errors import CrftagError  # noqa: E402
from tests.nn.tiny_bert import save_tiny_bert  # noqa: E402

TRAIN = os.path.abspath("data/ner_sample.dev.conll")


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return save_tiny_bert(tmp_path_factory.mktemp("bert"))


@pytest.fixture
def places(tmp_path, monkeypatch, bert):
    """(a config folder, a working directory elsewhere), an empty Hugging Face cache, and a
    function that writes ``config.yaml`` naming an encoder in the config folder."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    configs, work = tmp_path / "configs", tmp_path / "work"
    configs.mkdir()
    work.mkdir()
    monkeypatch.chdir(work)

    def write(name):
        path = configs / "config.yaml"
        path.write_text(f"data:\n  train: {TRAIN}\nmodel:\n  transformer: {name}\n")
        return path

    return configs, work, write


def test_a_folder_beside_the_config_is_the_one_read(places, bert):
    configs, work, write = places
    os.symlink(bert, configs / "encoder_here")
    os.symlink(bert, work / "encoder_here")  # not read: the config file's folder decides
    config = load_config(str(write("encoder_here")))
    assert config.model.transformer == str(configs / "encoder_here")


def test_a_folder_only_in_the_working_directory_is_refused_naming_both(places, bert):
    configs, work, write = places
    os.symlink(bert, work / "encoder_here")
    with pytest.raises(CrftagError) as raised:
        load_config(str(write("encoder_here")))
    message = str(raised.value)
    assert "\n" not in message and "relative to it" in message
    assert str(configs / "encoder_here") in message and str(work / "encoder_here") in message


def test_a_name_in_neither_place_is_refused_naming_both(places):
    configs, work, write = places
    with pytest.raises(CrftagError) as raised:
        load_config(str(write("org/no-such-encoder")))
    message = str(raised.value)
    assert "\n" not in message and str(configs / "org" / "no-such-encoder") in message
    assert "'org/no-such-encoder' in the Hugging Face cache" in message


def test_a_name_in_the_cache_is_kept_as_a_name(places, bert):
    from huggingface_hub import constants

    configs, work, write = places
    snapshot = os.path.join(constants.HF_HUB_CACHE, "models--org--tiny", "snapshots", "abc")
    os.makedirs(os.path.dirname(snapshot))
    os.symlink(bert, snapshot)
    assert load_config(str(write("org/tiny"))).model.transformer == "org/tiny"


def test_set_is_relative_to_the_working_directory_and_replaces_the_file(places, bert):
    configs, work, write = places
    os.symlink(bert, work / "encoder_here")
    path = write("encoder_here")  # refused alone (above), but --set gives another
    config = load_config(str(path), ["model.transformer=encoder_here"])
    assert config.model.transformer == "encoder_here" and os.path.isdir("encoder_here")


def test_the_command_refuses_in_one_line(places, bert, invoke):
    configs, work, write = places
    os.symlink(bert, work / "encoder_here")
    result = invoke(["train", str(write("encoder_here")), "-o", "run", "--device", "cpu"])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr.startswith("crftag: error: ") and result.stderr.count("\n") == 1
    assert str(work / "encoder_here") in result.stderr and not os.path.exists("run/model.pt")


# Each setting and a value refused: (--set key=value, a text of the one-line refusal).
SETTINGS = [
    ("model.document_context=true", "model.hidden_size 0 has no BiLSTM"),
    ("model.transformer=", "model.transformer"),
    ("model.transformer=[1]", "model.transformer"),
    ("model.transformer_layers=0", "model.transformer_layers"),
    ("model.transformer_layers=4", "model.transformer_layers: 4; the encoder has 3"),
    ("model.transformer_layers=two", "model.transformer_layers"),
    ("model.transformer_pooling=max", "model.transformer_pooling"),
    ("model.transformer_pooling=", "model.transformer_pooling"),
    ("model.transformer_finetune=maybe", "model.transformer_finetune"),
    ("model.transformer_max_length=3", "model.transformer_max_length"),
    ("model.transformer_max_length=-1", "model.transformer_max_length"),
    ("model.transformer_lr_scale=-1", "model.transformer_lr_scale"),
    ("model.transformer_lr_scale=.nan", "model.transformer_lr_scale"),
]


@pytest.mark.parametrize("setting, text", SETTINGS, ids=[s for s, _ in SETTINGS])
def test_each_setting_out_of_range_is_one_line(bert, tmp_path, invoke, tiny_args, setting, text):
    run = tmp_path / "run"
    options = tiny_args(model__transformer=str(bert), model__hidden_size=0, train__epochs=1)
    result = invoke(["train", "configs/sample.yaml", "-o", str(run), *options, "--set", setting])
    assert result.status == 2 and result.stdout == "", result.stderr[-1000:]
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("crftag: error: ") and text in lines[0], lines
    assert not (run / "model.pt").exists()
