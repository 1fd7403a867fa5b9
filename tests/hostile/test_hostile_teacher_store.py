"""Hostile input to the teacher's labelling of unlabelled text: damaged, binary, empty or
over-long text, text that is all dev and test sentences, a teacher that is missing, damaged or
inside the store's folder, and a store folder that holds something else. Each refusal is one
line naming the file (and line), and nothing is written or changed."""

import gzip
import os

import pytest
from hostile_files import DAMAGES, PNG, flipped, snapshot, truncated

from crftag.data.lines import MAX_LINE_BYTES
from crftag.errors import CrftagError
from crftag.inference.teacher import load_teacher
from crftag.inference.teacher_store import label_text

LINES = "".join(f"Line {i} of a text about Berlin and Paris .\n" for i in range(20)).encode()
TEXTS = {
    "png": (PNG, ":1: not valid UTF-8"),
    "latin-1": ("Zürich\nBerlin\n".encode("latin-1"), ":1: not valid UTF-8"),
    "NUL byte": (b"Berlin\nBer\x00lin\n", ":2: contains a NUL byte"),
    "huge line": (b"Berlin\n" + b"x" * (MAX_LINE_BYTES + 1) + b"\n", ":2: line longer than"),
    "CR line ends": (b"Berlin\rParis\r", ":1: old Mac (CR-only) line ends"),
    "truncated gzip": (truncated(gzip.compress(LINES)), "gzip"),
    "flipped gzip": (flipped(gzip.compress(LINES)), "gzip"),
    "empty": (b"", ": no text"),
    "blank": (b"\n  \n\t\n", ": no text"),
    "all dev and test": (b"Anna Lindqvist\n\nAnna Lindqvist\n", "no text is left: all 2"),
}
DEV_AND_TEST = {("Anna", "Lindqvist")}


@pytest.fixture(scope="module")
def teacher(teacher_path):
    return load_teacher(teacher_path)


def assert_one_line(error, path, *texts):
    """The refusal is one line naming ``path`` and holding each of ``texts``."""
    message = str(error.value)
    assert "\n" not in message and str(path) in message, message
    for text in texts:
        assert text in message, message


@pytest.mark.parametrize("case", TEXTS)
def test_a_hostile_text_is_one_line_naming_it(teacher, tmp_path, case):
    data, message = TEXTS[case]
    text = tmp_path / "text.txt"
    text.write_bytes(data)
    before = snapshot(tmp_path)
    with pytest.raises(CrftagError) as error:
        label_text(teacher, [str(text)], str(tmp_path / "store"), exclude=DEV_AND_TEST)
    assert_one_line(error, text, message)
    assert snapshot(tmp_path) == before and not (tmp_path / "store").exists()


@pytest.mark.parametrize("kind", ["missing", "folder", "fifo"])
def test_a_text_that_is_no_file_is_one_line(teacher, tmp_path, kind, no_hang):
    text = tmp_path / "text.txt"
    if kind == "folder":
        text.mkdir()
    elif kind == "fifo":
        os.mkfifo(text)
    with pytest.raises(CrftagError) as error:
        label_text(teacher, [str(text)], str(tmp_path / "store"), exclude=set())
    expected = {"missing": "no such file", "folder": "a directory", "fifo": "a FIFO"}[kind]
    assert_one_line(error, text, expected)
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_teacher_is_one_line(teacher_path, tmp_path, damage):
    model = tmp_path / "model.pt"
    with open(teacher_path, "rb") as handle:
        model.write_bytes(DAMAGES[damage](handle.read()))
    with pytest.raises(CrftagError) as error:
        load_teacher(str(model))
    assert_one_line(error, model)


def test_a_missing_or_onnx_teacher_is_one_line(tmp_path):
    with pytest.raises(CrftagError) as error:
        load_teacher(str(tmp_path / "run"))
    assert_one_line(error, tmp_path / "run", "no such model")
    graph = tmp_path / "model.onnx"
    graph.write_bytes(b"\x08\x07")
    with pytest.raises(CrftagError) as error:
        load_teacher(str(graph))
    assert_one_line(error, graph, "an ONNX graph cannot teach")


def test_a_teacher_inside_the_store_folder_is_one_line(teacher_path, tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    model = folder / "model.pt"
    with open(teacher_path, "rb") as handle:
        model.write_bytes(handle.read())
    text = tmp_path / "text.txt"
    text.write_bytes(LINES)
    before = snapshot(tmp_path)
    for store in (folder, model):
        with pytest.raises(CrftagError) as error:
            label_text(load_teacher(str(folder)), [str(text)], str(store), exclude=set())
        assert_one_line(error, model, "inside the teacher store's folder")
    assert snapshot(tmp_path) == before


def test_a_store_folder_of_other_files_is_one_line(teacher, tmp_path):
    text = tmp_path / "text.txt"
    text.write_bytes(LINES)
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine\n")
    before = snapshot(tmp_path)
    with pytest.raises(CrftagError) as error:
        label_text(teacher, [str(text)], str(folder), exclude=set())
    assert_one_line(error, folder, "no teacher store")
    with pytest.raises(CrftagError) as error:
        label_text(teacher, [str(text)], str(text), exclude=set())
    assert_one_line(error, text, "is a file")
    assert snapshot(tmp_path) == before
