"""Hostile `model.lexicons` dictionaries through `crftag train`: each is one line naming the
file (and its line), before any training, and the file is left as it was; a BOM is read."""

import gzip
import os

import pytest
from hostile_files import PNG, assert_refused, assert_training_refuses, flipped, truncated

from crftag.data.lexicons import read_lexicons
from crftag.data.lines import MAX_LINE_BYTES

ENTRIES = "".join(f"Place {i}\n" for i in range(400)).encode()
CASES = {
    "empty": (b"", "no entries"),
    "blank lines only": (b"\n \n\t\n", "no entries"),
    "latin-1": ("Zürich\n".encode("latin-1"), ":1: not valid UTF-8"),
    "nul": (b"Berlin\n\x00\n", ":2: "),
    "png": (PNG, ""),
    "truncated gzip": (truncated(gzip.compress(ENTRIES)), "gzip"),
    "flipped gzip": (flipped(gzip.compress(ENTRIES)), "gzip"),
    "huge line": (b"Berlin\n" + b"x" * (MAX_LINE_BYTES + 1) + b"\n", ":2: line longer than"),
}


def train_with(invoke, tiny_args, tmp_path, lexicon):
    settings = [*tiny_args(train__epochs=1), "--set", f"model.lexicons={{LOC: {lexicon}}}"]
    return invoke(["train", "configs/sample.yaml", "-o", str(tmp_path / "run"), *settings])


@pytest.mark.parametrize("case", CASES)
def test_a_hostile_dictionary_is_one_line_naming_it(invoke, tiny_args, tmp_path, case):
    data, message = CASES[case]

    def setting(path):
        return [f"model.lexicons={{LOC: {path}}}"]

    assert_training_refuses(invoke, tiny_args(train__epochs=1), tmp_path, data, setting, message)


def test_a_folder_or_a_missing_file_as_a_dictionary_is_one_line(invoke, tiny_args, tmp_path):
    assert_refused(train_with(invoke, tiny_args, tmp_path, tmp_path), tmp_path)
    missing = tmp_path / "missing.txt"
    assert_refused(train_with(invoke, tiny_args, tmp_path, missing), missing)


def test_a_dictionary_with_a_bom_reads_as_without(tmp_path):
    with_bom, without = tmp_path / "bom.txt", tmp_path / "plain.txt"
    with_bom.write_bytes("\ufeffBerlin\nNew York\n".encode())
    without.write_bytes(b"Berlin\nNew York\n")
    read = read_lexicons({"LOC": str(with_bom)}), read_lexicons({"LOC": str(without)})
    assert read[0].to_state() == read[1].to_state()


def test_a_fifo_as_a_dictionary_is_refused_not_waited_on(invoke, tiny_args, tmp_path, no_hang):
    fifo = tmp_path / "places.txt"
    os.mkfifo(fifo)
    assert_refused(train_with(invoke, tiny_args, tmp_path, fifo), fifo, "FIFO")
