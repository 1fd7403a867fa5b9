"""Config loading: strict keys with hints, types, overrides, paths relative to the file."""

import os

import pytest

from crftag.config.sections import load_config
from crftag.errors import CrftagError


def write(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_paths_are_relative_to_the_config_file(tmp_path):
    config = load_config(write(tmp_path, "data:\n  train: sub/train.conll\n"))
    assert config.data.train == os.path.join(str(tmp_path), "sub", "train.conll")
    assert config.train.lr == 0.015  # defaults fill the rest


def test_unknown_key_names_the_nearest_valid_key(tmp_path):
    path = write(tmp_path, "data:\n  train: t\ntrain:\n  learning_rte: 0.1\n  lr_decy: 0.1\n")
    with pytest.raises(CrftagError, match="unknown key 'train.learning_rte'"):
        load_config(path)
    path = write(tmp_path, "data:\n  train: t\ntrain:\n  lr_decy: 0.1\n")
    with pytest.raises(CrftagError, match="did you mean 'train.lr_decay'"):
        load_config(path)
    with pytest.raises(CrftagError, match="unknown key 'modle'; did you mean 'model'"):
        load_config(write(tmp_path, "data:\n  train: t\nmodle: {}\n"))


def test_wrong_type_names_key_and_type(tmp_path):
    with pytest.raises(CrftagError, match=r"train\.lr: expected float, got str 'fast'"):
        load_config(write(tmp_path, "data:\n  train: t\ntrain:\n  lr: fast\n"))
    with pytest.raises(CrftagError, match=r"model\.char_encoder: expected one of cnn\|lstm\|none"):
        load_config(write(tmp_path, "data:\n  train: t\nmodel:\n  char_encoder: gru\n"))
    with pytest.raises(CrftagError, match=r"train\.batch_size: expected a value >= 1, got 0"):
        load_config(write(tmp_path, "data:\n  train: t\ntrain:\n  batch_size: 0\n"))
    with pytest.raises(CrftagError, match=r"missing required key 'data.train'"):
        load_config(write(tmp_path, "data:\n  dev: d\n"))


@pytest.mark.parametrize(
    "setting, message",
    [
        ("model.dropout=1.5", r"model\.dropout: expected a probability in \[0, 0\.95\], got 1\.5"),
        ("model.dropout=1", r"model\.dropout: expected a probability in \[0, 0\.95\], got 1\.0"),
        ("train.word_dropout=2", r"train\.word_dropout: expected a probability in \[0, 1\]"),
        ("model.dropout=-0.1", r"model\.dropout: expected a value >= 0, got -0\.1"),
    ],
)
def test_dropout_rates_are_probabilities(tmp_path, setting, message):
    path = write(tmp_path, "data:\n  train: t\n")
    with pytest.raises(CrftagError, match=message):
        load_config(path, [setting])
    # the edges that are allowed
    config = load_config(path, ["model.dropout=0", "train.word_dropout=1"])
    assert (config.model.dropout, config.train.word_dropout) == (0.0, 1.0)


def test_overrides(tmp_path):
    path = write(tmp_path, "data:\n  train: t\n")
    config = load_config(path, ["train.lr=0.1", "model.char_encoder=lstm", "data.dev=d.conll"])
    assert config.train.lr == 0.1
    assert config.model.char_encoder == "lstm"
    assert config.data.dev == "d.conll"  # --set paths are the user's, relative to the shell
    with pytest.raises(CrftagError, match="expected section.key=value"):
        load_config(path, ["lr=0.1"])
    with pytest.raises(CrftagError, match="unknown key 'train.lrr'; did you mean 'train.lr'"):
        load_config(path, ["train.lrr=0.1"])


def test_frozen(tmp_path):
    config = load_config(write(tmp_path, "data:\n  train: t\n"))
    with pytest.raises(AttributeError):
        config.train.lr = 1.0


def test_yaml_syntax_error_names_line(tmp_path):
    with pytest.raises(CrftagError, match=r"c\.yaml:\d+: expected ',' or ']'"):
        load_config(write(tmp_path, "data:\n  train: [unclosed\n"))


@pytest.mark.parametrize("name", sorted(os.listdir("configs")))
def test_shipped_configs_load(name):
    config = load_config(os.path.join("configs", name))
    files = config.data.train if isinstance(config.data.train, list) else [config.data.train]
    assert all(path.endswith((".conll", ".conllu", ".train", ".testa")) for path in files)


def test_train_may_be_a_list_of_files(tmp_path):
    config = load_config(write(tmp_path, "data:\n  train: [a.conll, /abs/b.conll]\n"))
    assert config.data.train == [os.path.join(str(tmp_path), "a.conll"), "/abs/b.conll"]
    with pytest.raises(CrftagError, match=r"data\.train: expected a list of str, got int 3"):
        load_config(write(tmp_path, "data:\n  train: [a.conll, 3]\n"))
    with pytest.raises(CrftagError, match=r"data\.train: expected a list of str, got an empty"):
        load_config(write(tmp_path, "data:\n  train: []\n"))
    with pytest.raises(CrftagError, match=r"train\.lr: expected float, got list"):
        load_config(write(tmp_path, "data:\n  train: t\ntrain:\n  lr: [1]\n"))


def test_numbers_are_never_negative_except_column_indices(tmp_path):
    config = load_config(write(tmp_path, "data:\n  train: t\n  tag_column: -1\n"))
    assert config.data.tag_column == -1  # counts from the end
    with pytest.raises(CrftagError, match=r"vocab\.min_freq: expected a value >= 0, got -1"):
        load_config(write(tmp_path, "data:\n  train: t\nvocab:\n  min_freq: -1\n"))
    with pytest.raises(CrftagError, match=r"train\.lr: expected a value >= 0, got -0\.1"):
        load_config(write(tmp_path, "data:\n  train: t\ntrain:\n  lr: -0.1\n"))
