"""Hostile input to `crftag pretrain`: damaged text, its output onto its input or where it
cannot write, a damaged resume file, and SIGTERM mid-run then `--resume`. Each refusal is one
line naming the file, with a non-zero exit, and the text is left as it was."""

import gzip
import os
import shutil
import signal
import subprocess
import sys

import pytest
import torch
from hostile_files import (
    DAMAGES,
    PNG,
    assert_refused,
    flipped,
    read_only_folder,
    snapshot,
    stopped_pretraining,
    truncated,
)

from crftag.data.lines import MAX_LINE_BYTES

TINY = ["--hidden", "8", "--char-dim", "4", "--batch-size", "4", "--device", "cpu", "--quiet"]
LINES = "".join(f"Line {i} of a text about Berlin and Paris .\n" for i in range(60)).encode()
TEXTS = {
    "png": (PNG, ""),
    "latin-1": ("Zürich\nBerlin\n".encode("latin-1"), ":1: not valid UTF-8"),
    "truncated gzip": (truncated(gzip.compress(LINES)), "gzip"),
    "flipped gzip": (flipped(gzip.compress(LINES)), "gzip"),
    "huge line": (b"Berlin\n" + b"x" * (MAX_LINE_BYTES + 1) + b"\n", ":2: line longer than"),
}


@pytest.mark.parametrize("case", TEXTS)
def test_a_hostile_text_is_one_line_naming_it(invoke, tmp_path, case):
    data, message = TEXTS[case]
    text = tmp_path / "text.txt"
    text.write_bytes(data)
    before = snapshot(text)
    result = invoke(["pretrain", str(text), "-o", str(tmp_path / "lm"), *TINY])
    assert_refused(result, text, message)
    assert snapshot(text) == before
    assert not (tmp_path / "lm" / "char_lm.pt").exists()


def test_the_output_onto_the_text_is_refused(invoke, tmp_path):
    text = tmp_path / "text.txt"
    text.write_bytes(LINES)
    before = snapshot(tmp_path)
    assert_refused(invoke(["pretrain", str(text), "-o", str(text), *TINY]), text)
    assert snapshot(tmp_path) == before


def test_a_read_only_destination_is_one_line(invoke, tmp_path):
    text = tmp_path / "text.txt"
    text.write_bytes(LINES)
    output = os.path.join(read_only_folder(tmp_path), "lm")
    assert_refused(invoke(["pretrain", str(text), "-o", output, *TINY]), output)
    assert text.read_bytes() == LINES


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory):
    """A pretraining stopped after its first batch: (its text, its folder with resume.pt)."""
    return stopped_pretraining(tmp_path_factory.mktemp("stopped"), LINES)


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_resume_file_is_one_line_naming_it(invoke, stopped_run, tmp_path, damage):
    folder = tmp_path / "lm"
    shutil.copytree(stopped_run[1], folder)
    resume = folder / "resume.pt"
    resume.write_bytes(DAMAGES[damage](resume.read_bytes()))
    before = snapshot(folder, stopped_run[0])
    result = invoke(["pretrain", "--resume", str(folder), "--device", "cpu", "--quiet"])
    if damage != "flipped" or result.status != 0:  # a flipped weight may still be a state
        assert_refused(result, resume)
        assert snapshot(folder, stopped_run[0]) == before


def test_sigterm_mid_run_then_resume_finishes_the_pretraining(invoke, tmp_path):
    text = tmp_path / "text.txt"
    text.write_bytes(LINES)
    folder = tmp_path / "lm"
    args = ["--hidden", "8", "--char-dim", "4", "--batch-size", "2", "--device", "cpu"]
    command = [sys.executable, "-m", "crftag", "pretrain", str(text), "-o", str(folder)]
    process = subprocess.Popen(
        [*command, "--epochs", "2", *args], stderr=subprocess.PIPE, text=True
    )
    while "%" not in process.stderr.readline():  # the first progress line: mid-epoch
        assert process.poll() is None, process.stderr.read()
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=120) == 128 + signal.SIGTERM
    message = process.stderr.read()
    assert "Traceback" not in message and f"crftag pretrain --resume {folder}" in message
    assert (folder / "resume.pt").exists() and not (folder / "char_lm.pt").exists()
    resumed = invoke(["pretrain", "--resume", str(folder), "--device", "cpu", "--quiet"])
    assert resumed.status == 0, resumed.stderr
    assert (folder / "char_lm.pt").exists() and not (folder / "resume.pt").exists()
    assert text.read_bytes() == LINES


def test_a_fifo_as_the_text_is_refused_not_waited_on(invoke, tmp_path, no_hang):
    fifo = tmp_path / "text.txt"
    os.mkfifo(fifo)
    result = invoke(["pretrain", str(fifo), "-o", str(tmp_path / "lm"), *TINY])
    assert_refused(result, fifo, "a FIFO (named pipe), expected a regular file")


def _drop_weight(state):
    state["state_dict"].pop(next(iter(state["state_dict"])))


def _set(key, value):
    def change(state):
        state[key] = value

    return change


def _set_in(part, key, value):
    def change(state):
        state[part][key] = value

    return change


CONTENT = {
    "settings a list": (_set("settings", [8, 4]), "settings: expected the settings hidden_size"),
    "a size as text": (
        _set_in("settings", "hidden_size", "8"),
        "settings.hidden_size: expected int, got '8'",
    ),
    "models too large": (_set_in("settings", "hidden_size", 10**6), "parameters; at most"),
    "characters not a list": (_set("symbols", "abc"), "symbols: expected a list of characters"),
    "no text digest": (
        _set("fingerprint", {}),
        "fingerprint.text: expected the digest of the text",
    ),
    "a weight missing": (_drop_weight, "state_dict: missing "),
    "epoch beyond the end": (
        _set_in("run_state", "epoch", 9),
        "run_state.epoch: expected an epoch from 1 to 3 (--epochs + 1), got 9",
    ),
    "step beyond the epoch": (
        _set_in("run_state", "step", 10**6),
        "run_state.step 1000000 is beyond the epoch's 15 batches",
    ),
    "a tagger's resume file": (
        _set("task", "train"),
        "the state of a crftag train run; continue it with crftag train --resume ",
    ),
}


@pytest.mark.parametrize("damage", CONTENT)
def test_a_resume_file_with_hostile_content_is_one_line_naming_it(
    invoke, stopped_run, tmp_path, damage
):
    folder = tmp_path / "lm"
    shutil.copytree(stopped_run[1], folder)
    resume = folder / "resume.pt"
    state = torch.load(resume, weights_only=True)
    change, message = CONTENT[damage]
    change(state)
    torch.save(state, resume)
    before = snapshot(folder, stopped_run[0])
    result = invoke(["pretrain", "--resume", str(folder), "--device", "cpu", "--quiet"])
    assert_refused(result, resume, message)
    assert snapshot(folder, stopped_run[0]) == before
