"""Checkpoints that load safely but are wrong: each is a one-line ``MODEL: ...`` error before
anything is built from it (no traceback, no hang, no huge allocation), through the Python API
and the command line."""

import copy
import math
import os
import subprocess
import sys
import zipfile

import pytest
import torch

from crftag.errors import CrftagError
from crftag.modelfiles.checkpoint import load_model, model_payload
from crftag.modelfiles.checkpoint_schema import MAX_ITEMS


@pytest.fixture(scope="module")
def payload(sample_model):
    return model_payload(load_model(str(sample_model)))


def nested(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


def wrapped(value, times):
    for _ in range(times):
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
    "word cap zero": (["vocabularies", "max_word_chars"], 0, "max_word_chars: expected 2"),
    "word cap a string": (["vocabularies", "max_word_chars"], "64", "max_word_chars"),
    "version negative": (["format_version"], -1, "format_version"),
    "version a bool": (["format_version"], True, "format_version"),
    "train scheme none": (["train_scheme"], "none", "both or neither none"),
    "train scheme iob1": (["train_scheme"], "iob1", "train_scheme 'iob1'"),
    "huge lstm": (["config", "model", "hidden_size"], 10**9, "hidden_size"),
    "nan dropout": (["config", "model", "dropout"], math.nan, "dropout"),
    "deep nesting": (["config", "model", "bomb"], nested(60), "nested more than"),
    "shared nesting": (["metrics", "bomb"], shared(12, 8), "larger than"),
    "huge list": (["metrics", "history"], [0] * (MAX_ITEMS + 1), "larger than"),
    # Lists of strings are counted at once (vocabularies): the same limits hold.
    "long strings": (["metrics", "history"], ["x" * 1000] * 2500, "larger than"),
    "strings one level too deep": (["metrics", "bomb"], wrapped(["a", "b"], 15), "nested more"),
    "lexicons without the config's": (
        ["vocabularies", "lexicons"],
        {"LOC": "berlin"},
        "vocabularies.lexicons: types ['LOC'], model.lexicons has []",
    ),
    "lexicon entries a list": (["vocabularies", "lexicons"], {"LOC": ["berlin"]}, "strings"),
    # A distilled student's record of its teacher (crftag distill).
    "distillation a list": (["distillation"], ["teacher"], "distillation: expected a mapping"),
    "distillation without its teacher": (
        ["distillation"],
        {"teacher_digest": "ab", "text": ["t.txt"], "text_digest": "cd", "objective": "exact"},
        "distillation.teacher: expected a string",
    ),
    "distillation text a string": (
        ["distillation"],
        {
            "teacher": "t",
            "teacher_digest": "ab",
            "text": "t.txt",
            "text_digest": "cd",
            "objective": "exact",
        },
        "distillation.text: expected a list of file names",
    ),
    "distillation nested deep": (["distillation"], {"bomb": nested(60)}, "nested more than"),
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


def test_strings_at_the_depth_limit_are_plain(payload, tmp_path):
    # metrics.bomb is at depth 1: fourteen lists around it put the strings at depth 16.
    state = copy.deepcopy(payload)
    state["metrics"]["bomb"] = wrapped(["a", "b"], 14)
    torch.save(state, tmp_path / "deep.pt")
    assert load_model(str(tmp_path / "deep.pt")).metrics["bomb"] == state["metrics"]["bomb"]


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


def predict_with(model):
    """``crftag predict -m MODEL`` on one word, in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "crftag", "predict", "-m", str(model)],
        input="Berlin\n",
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_fifo_as_the_model_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "model.pt"
    os.mkfifo(fifo)
    done = predict_with(fifo)
    assert done.returncode == 2 and "not a regular file" in done.stderr


def with_a_deflated_record(source, target, padding):
    """``source``'s zip records, the largest one followed by ``padding`` zero bytes and
    deflated: a file of kilobytes that declares megabytes or more."""
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w") as crafted:
        records = original.infolist()
        largest = max(records, key=lambda record: record.file_size)
        for record in records:
            data = original.read(record)
            if record is largest:
                crafted.writestr(record.filename, data + bytes(padding), zipfile.ZIP_DEFLATED)
            else:
                crafted.writestr(record, data)


@pytest.mark.parametrize("exported", [False, True], ids=["checkpoint", "npz"])
def test_a_record_declaring_more_than_the_file_holds_is_refused_uninflated(
    invoke, sample_model, tmp_path, exported
):
    source = tmp_path / "model.npz" if exported else sample_model / "model.pt"
    if exported:
        export = ["export", str(sample_model), str(source), "--format", "numpy"]
        assert invoke(export).status == 0
    crafted = tmp_path / ("crafted.npz" if exported else "crafted.pt")
    with_a_deflated_record(source, crafted, padding=64 << 20)
    assert os.path.getsize(crafted) < 4 << 20
    done = predict_with(crafted)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"crftag: error: {crafted}: its records declare ")
    assert done.stderr.endswith(
        "store their records uncompressed, so this one is damaged or crafted\n"
    )
    assert done.stderr.count("\n") == 1


def test_a_recompressed_model_within_the_bound_still_loads(sample_model, tmp_path):
    recompressed = tmp_path / "deflated.pt"
    with (
        zipfile.ZipFile(sample_model / "model.pt") as original,
        zipfile.ZipFile(recompressed, "w", zipfile.ZIP_DEFLATED) as copy_,
    ):
        for record in original.infolist():
            copy_.writestr(record.filename, original.read(record))
    loaded, original = load_model(str(recompressed)), load_model(str(sample_model))
    assert loaded.vocabularies.tags.symbols == original.vocabularies.tags.symbols
    for name, weight in original.model.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[name], weight)
