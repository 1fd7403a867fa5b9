"""Data paths that are not regular files: told apart without being opened, so nothing blocks
on a FIFO, and a pipe's first bytes are never read twice or lost."""

import os
import socket
import threading

import pytest

from crftag.data.conll import detect_format
from crftag.data.labelled import detect_labelled_format, read_labelled
from crftag.data.paths import check_regular_file, not_regular
from crftag.errors import CrftagError

SAMPLE = "data/ner_sample.dev.conll"


def test_each_kind_of_path_is_named(tmp_path):
    regular = tmp_path / "a.conll"
    regular.write_text("EU B-ORG\n")
    os.symlink(regular, tmp_path / "link")
    os.symlink(tmp_path / "gone", tmp_path / "dangling")
    os.mkfifo(tmp_path / "fifo")
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(tmp_path / "sock"))
    try:
        kinds = {name: not_regular(str(tmp_path / name)) for name in os.listdir(tmp_path)}
    finally:
        listening.close()
    assert kinds == {
        "a.conll": None,
        "link": None,
        "dangling": "a dangling symbolic link",
        "fifo": "a FIFO (named pipe)",
        "sock": "a socket",
    }
    assert not_regular("/dev/null") == "a character device"
    assert not_regular(str(tmp_path)) == "a directory"
    assert not_regular(str(tmp_path / "none")) == "no such file"
    with pytest.raises(CrftagError, match=r"^data\.train: .*fifo: a FIFO \(named pipe\), expected"):
        check_regular_file(str(tmp_path / "fifo"), "data.train")


def test_format_detection_never_opens_a_fifo(tmp_path, no_hang):
    fifo = str(tmp_path / "gold")
    os.mkfifo(fifo)
    assert detect_format(fifo) == "conll"
    assert detect_labelled_format(fifo) == "conll"


def test_a_fifo_is_read_once_whole(tmp_path, no_hang):
    fifo = str(tmp_path / "gold")
    os.mkfifo(fifo)

    def write():
        with open(fifo, "wb") as stream, open(SAMPLE, "rb") as sample:
            stream.write(sample.read())

    writer = threading.Thread(target=write)
    writer.start()
    from_pipe = read_labelled(fifo)
    writer.join()
    assert from_pipe == read_labelled(SAMPLE)
