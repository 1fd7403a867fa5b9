"""Hostile `model.char_lm` folders for `train`: a damaged `char_lm.pt`, an empty folder, a
file, a run directory. Each is one line naming the folder, before any training, and the folder
is left as it was."""

import os
import shutil

import pytest
from hostile_files import DAMAGES, assert_refused, snapshot

from crftag import cli


@pytest.fixture(scope="module")
def char_lm_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("char_lm")
    text = folder / "text.txt"
    text.write_text("".join(f"Line {i} of some text about Berlin .\n" for i in range(40)))
    args = ["pretrain", str(text), "-o", str(folder / "lm"), "--epochs", "1", "--hidden", "8"]
    assert cli.run([*args, "--char-dim", "4", "--device", "cpu", "--quiet"]) == 0
    return folder / "lm"


def train_with_char_lm(invoke, tiny_args, tmp_path, char_lm):
    settings = [*tiny_args(train__epochs=1), "--set", f"model.char_lm={char_lm}"]
    return invoke(["train", "configs/sample.yaml", "-o", str(tmp_path / "run"), *settings])


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_char_lm_file_is_one_line(invoke, tiny_args, char_lm_dir, tmp_path, damage):
    folder = tmp_path / "lm"
    shutil.copytree(char_lm_dir, folder)
    model = folder / "char_lm.pt"
    model.write_bytes(DAMAGES[damage](model.read_bytes()))
    before = snapshot(folder)
    result = train_with_char_lm(invoke, tiny_args, tmp_path, folder)
    if damage != "flipped" or result.status != 0:
        assert_refused(result, folder)
    assert snapshot(folder) == before


@pytest.mark.parametrize("kind", ["empty folder", "a file", "a run directory"])
def test_a_char_lm_that_is_not_a_char_lm_folder_is_one_line(
    invoke, tiny_args, sample_model, tmp_path, kind
):
    target = {"empty folder": tmp_path / "empty", "a file": tmp_path / "file.txt"}.get(
        kind, sample_model
    )
    if kind == "empty folder":
        target.mkdir()
    elif kind == "a file":
        target.write_text("not a folder\n")
    assert_refused(train_with_char_lm(invoke, tiny_args, tmp_path, target), target)


def test_a_fifo_as_the_char_lm_file_is_refused_not_waited_on(invoke, tiny_args, tmp_path, no_hang):
    folder = tmp_path / "lm"
    folder.mkdir()
    os.mkfifo(folder / "char_lm.pt")
    assert_refused(train_with_char_lm(invoke, tiny_args, tmp_path, folder), folder)
