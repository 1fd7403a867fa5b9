"""Checkpoints that load safely but are wrong: each is a one-line ``MODEL: ...`` error before
anything is built from it (no traceback, no hang, no huge allocation), through the Python API
and the command line."""

import copy
import math
import os
import subprocess
import sys

import pytest
import torch

from crftag.checkpoint import load_model, model_payload
from crftag.errors import CrftagError


@pytest.fixture(scope="module")
def payload(sample_model):
    return model_payload(load_model(str(sample_model)))


def nested(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


def shared(depth, width):
    """A few hundred bytes in a pickle (each level repeats one list), width ** depth when walked."""
    value = [0]
    for _ in range(depth):
        value = [value] * width
    return value


def set_path(state, path, value):
    *parents, last = path
    for key in parents:
        state = state[key]
    if value is DELETE:
        del state[last]
    else:
        state[last] = value


DELETE = object()
CASES = {
    "no config": (["config"], DELETE, "no 'config'"),
    "no state_dict": (["state_dict"], DELETE, "no 'state_dict'"),
    "no vocabularies": (["vocabularies"], DELETE, "no 'vocabularies'"),
    "no data_scheme": (["data_scheme"], DELETE, "no 'data_scheme'"),
    "no train_scheme": (["train_scheme"], DELETE, "no 'train_scheme'"),
    "no tags": (["vocabularies", "tags"], DELETE, "vocabularies.tags"),
    "metrics an int": (["metrics"], 7, "metrics"),
    "vocabulary a list": (["vocabularies", "words"], ["a", "b"], "vocabularies.words"),
    "duplicate symbols": (["vocabularies", "chars", "symbols"], ["a", "a"], "appears twice"),
    "version negative": (["format_version"], -1, "format_version"),
    "version a bool": (["format_version"], True, "format_version"),
    "train scheme none": (["train_scheme"], "none", "both or neither none"),
    "train scheme iob1": (["train_scheme"], "iob1", "train_scheme 'iob1'"),
    "huge lstm": (["config", "model", "hidden_size"], 10**9, "hidden_size"),
    "nan dropout": (["config", "model", "dropout"], math.nan, "dropout"),
    "deep nesting": (["config", "model", "bomb"], nested(60), "nested more than"),
    "shared nesting": (["metrics", "bomb"], shared(12, 8), "larger than"),
    "huge list": (["metrics", "history"], [0] * 3_000_000, "larger than"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_malformed_payload_is_a_one_line_error(payload, tmp_path, case):
    path, value, message = CASES[case]
    state = copy.deepcopy(payload)
    set_path(state, path, value)
    assert_refused(state, tmp_path, message)


def assert_refused(state, tmp_path, message):
    target = tmp_path / "bad.pt"
    torch.save(state, target)
    with pytest.raises(CrftagError) as caught:
        load_model(str(target))
    assert str(caught.value).startswith(str(target)) and message in str(caught.value)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 400


def test_tags_without_a_prefix_in_a_span_model(payload, tmp_path):
    state = copy.deepcopy(payload)
    state["vocabularies"]["tags"]["symbols"][-1] = "PERSON"
    assert_refused(state, tmp_path, "not a bioes span tag")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda w: w.pop("projection.bias"), "missing projection.bias"),
        (lambda w: w.update({"extra.weight": torch.zeros(2)}), "unexpected extra.weight"),
        (lambda w: w.update({"projection.bias": torch.zeros(3)}), "shape (3,)"),
        (lambda w: w["projection.weight"].fill_(math.nan), "NaN or infinite"),
        (lambda w: w["projection.weight"].fill_(math.inf), "NaN or infinite"),
        (
            lambda w: w.update({"projection.bias": w["projection.bias"].long()}),
            "dtype torch.int64",
        ),
    ],
    ids=["missing", "extra", "shape", "nan", "inf", "integer"],
)
def test_weights_that_are_not_the_described_networks(payload, tmp_path, change, message):
    state = copy.deepcopy(payload)
    change(state["state_dict"])
    assert_refused(state, tmp_path, message)


def test_the_command_line_says_it_in_one_line(payload, tmp_path):
    state = copy.deepcopy(payload)
    state["config"]["model"]["hidden_size"] = 10**9
    target = tmp_path / "huge.pt"
    torch.save(state, target)
    for command in (["predict", "-m", str(target)], ["export", str(target), str(tmp_path / "x")]):
        done = subprocess.run(
            [sys.executable, "-m", "crftag", *command],
            input="Berlin\n",
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.startswith(f"crftag: error: {target}: model.hidden_size")
        assert done.stderr.count("\n") == 1


def test_a_fifo_as_the_model_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "model.pt"
    os.mkfifo(fifo)
    done = subprocess.run(
        [sys.executable, "-m", "crftag", "predict", "-m", str(fifo)],
        input="Berlin\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "not a regular file" in done.stderr
