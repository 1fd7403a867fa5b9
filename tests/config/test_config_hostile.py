"""Hostile configs: every mistake reported at once, numbers bounded and finite, strict YAML (no
duplicate keys, no aliases, bounded nesting and size), short messages whatever the value; each a
user error (exit 2, no traceback) through the command line."""

import dataclasses
import math
import typing

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from crftag.config.loading import maximum_of, minimum_of
from crftag.config.sections import Config, load_config
from crftag.data.vocab import PAD, UNK, Vocabularies, Vocabulary
from crftag.errors import CrftagError
from crftag.training import checks


def write(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def refusal(path, overrides=()) -> list[str]:
    with pytest.raises(CrftagError) as caught:
        load_config(path, list(overrides))
    return str(caught.value).split("\n")


def numeric_keys(kind):
    """(section, key, field) of every key whose type holds ``kind`` (int or float); a list's
    numbers (the tune section's) are checked as those of the key each is for."""
    found = []
    for section, section_class in typing.get_type_hints(Config).items():
        hints = typing.get_type_hints(section_class)
        for spec in dataclasses.fields(section_class):
            if typing.get_origin(hints[spec.name]) is list:
                continue
            if kind in (typing.get_args(hints[spec.name]) or (hints[spec.name],)):
                found.append((section, spec.name, spec))
    return found


FLOAT_KEYS = numeric_keys(float)
INT_KEYS = numeric_keys(int)


def test_every_mistake_is_reported_at_once(tmp_path):
    path = write(
        tmp_path,
        "data:\n  train: t\n  tain: x\nvocab:\n  max_size: abc\n"
        "model:\n  hidden_sizee: 3\n  num_layers: 0\ntrain:\n  lr: a\n",
    )
    assert refusal(path, ["lr=3", "train.epochs=.inf"]) == [
        "--set lr=3: expected section.key=value, e.g. train.lr=0.01",
        f"{path}: unknown key 'data.tain'; did you mean 'data.train'? (valid: train, dev, test, "
        "format, word_column, tag_column, tag_scheme, train_scheme, misaligned)",
        f"{path}: vocab.max_size: expected int, got str 'abc'",
        f"{path}: unknown key 'model.hidden_sizee'; did you mean 'model.hidden_size'? (valid: "
        "encoder, feature_buckets, word_dim, char_encoder, char_dim, char_size, char_kernel, "
        "max_word_chars, "
        "casing_dim, hidden_size, num_layers, dropout, locked_dropout, document_context, "
        "hidden_layer, constrained, embeddings, freeze_embeddings, lexicons, char_lm, "
        "char_lm_finetune, transformer, transformer_layers, transformer_pooling, "
        "transformer_finetune, transformer_lr_scale, transformer_max_length)",
        f"{path}: model.num_layers: expected a value >= 1, got 0",
        f"{path}: train.lr: expected float, got str 'a'",
        f"{path}: train.epochs: expected int, got float inf",
    ]


def test_a_missing_required_key_is_reported_with_the_rest(tmp_path):
    path = write(tmp_path, "data:\n  dev: d\ntrain:\n  seed: -1\n")
    assert refusal(path) == [
        f"{path}: missing required key 'data.train'",
        f"{path}: train.seed: expected a value >= 0, got -1",
    ]


@pytest.mark.parametrize("text", [".nan", ".inf", "-.inf", "1.0e+999"])
@pytest.mark.parametrize(("section", "key"), [(s, k) for s, k, _ in FLOAT_KEYS])
def test_every_float_key_refuses_values_that_are_not_finite(tmp_path, section, key, text):
    path = write(tmp_path, "data:\n  train: t\n")
    shown = {".nan": "nan", ".inf": "inf", "-.inf": "-inf", "1.0e+999": "inf"}[text]
    assert refusal(path, [f"{section}.{key}={text}"]) == [
        f"{path}: {section}.{key}: expected a finite number, got {shown}"
    ]


@pytest.mark.parametrize(("section", "key", "spec"), FLOAT_KEYS + INT_KEYS)
def test_every_number_has_bounds_that_hold_at_both_ends(tmp_path, section, key, spec):
    maximum, minimum = maximum_of(spec), minimum_of(spec)
    assert maximum is not None, f"{section}.{key} has no maximum"
    path = write(tmp_path, "data:\n  train: t\n")
    for edge in (minimum, maximum):
        assert (
            getattr(getattr(load_config(path, [f"{section}.{key}={edge}"]), section), key) == edge
        )
    beyond = maximum + 1 if isinstance(maximum, int) else maximum * 2
    shown = float(beyond) if (section, key, spec) in FLOAT_KEYS else beyond
    word = "probability in [0, " if spec.metadata.get("probability") else "value <= "
    closing = "]" if spec.metadata.get("probability") else ""
    assert refusal(path, [f"{section}.{key}={beyond}"]) == [
        f"{path}: {section}.{key}: expected a {word}{maximum}{closing}, got {shown}"
    ]


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(FLOAT_KEYS),
    st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(2**70), 2**70),
)
def test_a_number_is_taken_exactly_when_finite_and_within_its_bounds(key, value):
    section, name, spec = key
    raw = {"data": {"train": "t"}, section: {name: value}}
    inside = math.isfinite(value) and minimum_of(spec) <= value <= maximum_of(spec)
    if inside:
        assert getattr(getattr(Config.from_dict(raw), section), name) == value
    else:
        with pytest.raises(CrftagError, match=rf"^<config>: {section}\.{name}: expected a "):
            Config.from_dict(raw)


def test_dropout_that_leaves_almost_nothing_is_refused(tmp_path):
    path = write(tmp_path, "data:\n  train: t\nmodel:\n  dropout: 0.9999999\n")
    assert refusal(path) == [
        f"{path}: model.dropout: expected a probability in [0, 0.95], got 0.9999999"
    ]


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("model.num_layers=1000000", "model.num_layers: expected a value <= 16, got 1000000"),
        (
            "model.feature_buckets=1099511627776",
            "model.feature_buckets: expected a value <= 16777216, got 1099511627776",
        ),
        ("model.hidden_size=100000", "model.hidden_size: expected a value <= 4096, got 100000"),
        ("model.word_dim=5000", "model.word_dim: expected a value <= 4096, got 5000"),
        ("model.char_dim=5000", "model.char_dim: expected a value <= 4096, got 5000"),
        ("train.epochs=1000000", "train.epochs: expected a value <= 100000, got 1000000"),
        ("train.batch_size=100000", "train.batch_size: expected a value <= 10000, got 100000"),
        (
            "train.seed=18446744073709551616",
            "train.seed: expected a value <= 4294967295, got 18446744073709551616",
        ),
    ],
)
def test_sizes_from_the_issue_are_refused(tmp_path, setting, message):
    path = write(tmp_path, "data:\n  train: t\n")
    assert refusal(path, [setting]) == [f"{path}: {message}"]


def test_duplicate_keys_name_the_key_and_both_lines(tmp_path):
    path = write(
        tmp_path,
        "data:\n  train: t\ntrain:\n  lr: 0.1\n  momentum: 0.5\n  lr: 0.2\n"
        "model:\n  dropout: 0.1\ntrain:\n  epochs: 2\n",
    )
    assert refusal(path) == [
        f"{path}:6: duplicate key 'train.lr', first on line 4",
        f"{path}:9: duplicate section 'train', first on line 3",
    ]


def test_duplicate_keys_come_with_the_other_mistakes(tmp_path):
    path = write(tmp_path, "data:\n  train: t\n  train: u\nmodel:\n  dropout: 2\n")
    assert refusal(path) == [
        f"{path}:3: duplicate key 'data.train', first on line 2",
        f"{path}: model.dropout: expected a probability in [0, 0.95], got 2.0",
    ]


BILLION_LAUGHS = "".join(
    [
        "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
        *(
            f"{name}: &{name} [{', '.join(['*' + previous] * 9)}]\n"
            for previous, name in zip("abcdefgh", "bcdefghi", strict=True)
        ),
        "data:\n  train: *i\n",
    ]
)


def test_an_alias_bomb_is_refused_at_once(tmp_path, monkeypatch):
    """Refused at the first alias, before a value is built: nothing is expanded."""
    from crftag.config import loading

    composed = []
    compose_node = loading._strict_loader().compose_node

    def counting(self, parent, index):
        composed.append(index)
        return compose_node(self, parent, index)

    def never(self, node):
        raise AssertionError("a value was built from a document with aliases")

    monkeypatch.setattr(loading._strict_loader(), "compose_node", counting)
    monkeypatch.setattr(loading._strict_loader(), "construct_document", never)
    path = write(tmp_path, BILLION_LAUGHS)
    assert refusal(path) == [f"{path}:2: aliases (*name) are not allowed in a config file"]
    # The root, line 1's key, list and 9 items, line 2's key and list, then its first alias.
    assert len(composed) == 15


def test_an_alias_in_a_set_value_is_taken_as_text(tmp_path):
    path = write(tmp_path, "data:\n  train: t\n")
    assert load_config(path, ["data.dev=*a"]).data.dev == "*a"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("data: " + "[" * 100_000, ":1: nested more than 16 deep"),
        ("data:\n  train: t\ntrain:\n  seed: " + "9" * 5000, ":4: an integer of 5000 characters; "),
        ("data:\n  train: t\n# " + "x" * (1 << 20), ": larger than 1,048,576 bytes, too large "),
    ],
    ids=["deep", "long integer", "large file"],
)
def test_values_that_would_exhaust_the_reader_are_refused(tmp_path, text, message):
    path = write(tmp_path, text)
    (line,) = refusal(path)
    assert line.startswith(path + message)


def test_a_huge_value_in_an_error_is_cut_short(tmp_path):
    path = write(tmp_path, "data:\n  train: t\n")
    huge = "[" + ",".join(["[1, 2, [3, [4, [5]]]]"] * 500) + "]"  # 11 kB: far past the 80 shown
    (line,) = refusal(path, [f"data.dev={huge}", "model.encoder=" + "x" * 10_000])[1:]
    assert len(line) < len(path) + 200
    cut = f"'{'x' * 37}...{'x' * 38}'"  # 80 characters, both ends of the value
    assert line == f"{path}: model.encoder: expected one of bilstm|features, got {cut}"
    (dev,) = refusal(path, [f"data.dev={huge}"])
    assert dev == (
        f"{path}: data.dev: expected str, got list "
        "[[1, 2, [...]], [1, 2, [...]], [1, 2, [...]], [1, 2, [...]], ...]"
    )


def test_a_long_unknown_key_is_cut_short(tmp_path):
    path = write(tmp_path, "data:\n  train: t\n")
    (line,) = refusal(path, ["train." + "k" * 100_000 + "=1"])
    assert len(line) < len(path) + 400 and line.startswith(f"{path}: unknown key 'train.kkk")


def test_the_command_line_reports_each_mistake_and_exits_2(invoke, tmp_path):
    path = write(
        tmp_path, "data:\n  train: t\ntrain:\n  lr: .nan\n  lr: .inf\nmodel:\n  num_layers: 99\n"
    )
    result = invoke(["train", path, "-o", str(tmp_path / "run"), "--seed", str(2**64)])
    assert result.status == 2 and result.stdout == ""
    assert "Traceback" not in result.stderr
    assert [line.removeprefix("crftag: error: ") for line in result.stderr.splitlines()] == [
        f"{path}:5: duplicate key 'train.lr', first on line 4",
        f"{path}: model.num_layers: expected a value <= 16, got 99",
        f"{path}: train.lr: expected a finite number, got inf",
        f"{path}: train.seed: expected a value <= 4294967295, got 18446744073709551616",
    ]


def test_the_command_line_prefixes_every_mistake(invoke, tmp_path):
    path = write(tmp_path, "data:\n  train: t\nmodel:\n  num_layers: 99\n  dropout: 1\n")
    result = invoke(["train", path, "-o", str(tmp_path / "run")])
    assert result.stderr.splitlines() == [
        f"crftag: error: {path}: model.num_layers: expected a value <= 16, got 99",
        f"crftag: error: {path}: model.dropout: expected a probability in [0, 0.95], got 1.0",
    ]


def test_one_mistake_is_one_line(invoke, tmp_path):
    path = write(tmp_path, "data:\n  train: t\nmodel:\n  dropout: .nan\n")
    result = invoke(["train", path, "-o", str(tmp_path / "run")])
    assert result.status == 2 and result.stdout == ""
    assert (
        result.stderr
        == f"crftag: error: {path}: model.dropout: expected a finite number, got nan\n"
    )


def test_a_network_no_model_file_could_hold_is_refused_before_any_data(invoke, tmp_path):
    run = tmp_path / "run"
    sizes = ["--set", "model.hidden_size=4096", "--set", "model.num_layers=16"]
    result = invoke(["train", "configs/sample.yaml", *sizes, "-o", str(run), "--device", "cpu"])
    assert (result.status, result.stdout) == (2, "")
    assert result.stderr == (
        "crftag: error: model: the network would have 6,177,696,593 parameters, and a model "
        "holds at most 1,073,741,824; make the model's sizes (model.*) or the vocabulary "
        "(vocab.*) smaller\n"
    )
    assert not run.exists()


def test_training_that_would_not_fit_in_memory_is_refused(monkeypatch):
    monkeypatch.setattr(checks, "_free_memory", lambda device: 2 * checks.GIB)
    sizes = ["model.hidden_size=4096", "model.num_layers=2", "train.optimizer=adam"]
    config = load_config("configs/sample.yaml", sizes)
    with pytest.raises(CrftagError) as caught:
        checks.check_device(config, torch.device("cpu"))
    assert str(caught.value) == (
        "model: training 539,634,513 parameters needs at least 8.0 GiB (weights, gradients, "
        "optimizer state), and cpu memory has 2.0 GiB free; make the model's sizes (model.*) or "
        "the vocabulary (vocab.*) smaller"
    )
    checks.check_device(load_config("configs/sample.yaml"), torch.device("cpu"))


def test_the_vocabulary_counts_in_the_network_size():
    config = load_config("configs/sample.yaml", ["model.word_dim=4096"])
    words = Vocabulary([PAD, UNK, *(f"w{index}" for index in range(300_000))])
    vocabularies = Vocabularies(
        words=words, chars=Vocabulary([PAD, UNK]), tags=Vocabulary(["O"], has_unknown=False)
    )
    with pytest.raises(CrftagError, match=r"^model: the network would have 1,230,957,421 "):
        checks.check_model_size(config, vocabularies, torch.device("cpu"))


def test_a_malformed_test_file_is_found_before_training(invoke, tiny_args, tmp_path):
    test_file = tmp_path / "test.conll"
    test_file.write_bytes(b"Berlin B-LOC\ncaf\xe9 O\n")
    run = tmp_path / "run"
    args = ["train", "configs/sample.yaml", *tiny_args(data__test=str(test_file)), "-o", str(run)]
    result = invoke(args)
    assert result.status == 2 and result.stdout == ""
    assert result.stderr == f"crftag: error: {test_file}:2: not valid UTF-8 (byte 4 of the line)\n"
    assert not (run / "model.pt").exists()
