"""Unlabelled text files: plain and compressed, and one-line errors for bad ones."""

import bz2
import gzip
import lzma

import pytest

from crftag.data.raw_text import read_text_lines
from crftag.errors import CrftagError


@pytest.mark.parametrize("opener", [open, gzip.open, bz2.open, lzma.open])
def test_plain_and_compressed_files_give_their_lines(tmp_path, opener):
    path = tmp_path / "text"
    with opener(path, "wb") as stream:
        stream.write(b"One line .\n\n  Zwei Zeilen  \n")
    assert read_text_lines([str(path)]) == ["One line .", "Zwei Zeilen"]


def test_a_missing_file_names_it(tmp_path):
    with pytest.raises(CrftagError, match=r"missing.txt: no such text file"):
        read_text_lines([str(tmp_path / "missing.txt")])


def test_an_empty_file_names_it(tmp_path):
    (tmp_path / "empty.txt").write_text("\n \n")
    with pytest.raises(CrftagError, match=r"empty.txt: no text"):
        read_text_lines([str(tmp_path / "empty.txt")])


def test_a_line_not_utf8_names_file_and_line(tmp_path):
    (tmp_path / "latin.txt").write_bytes(b"fine\ncaf\xe9\n")
    with pytest.raises(CrftagError, match=r"latin.txt:2: not valid UTF-8"):
        read_text_lines([str(tmp_path / "latin.txt")])
