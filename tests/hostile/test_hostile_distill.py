"""Hostile input to `crftag distill`: unlabelled text that is empty, binary, holds NUL bytes or
a line over the limit; a teacher that is missing, damaged, or the student's own run directory; a
student whose labels are not the teacher's; and a run directory holding the labels of another
teacher or text. Each refusal is one line naming the file, exit status 2, and nothing of what
was there is overwritten."""

import shutil
from pathlib import Path

import pytest
from hostile_files import PNG, assert_refused, snapshot

from crftag.config import load_config
from crftag.data.lines import MAX_LINE_BYTES
from crftag.inference.teacher import load_teacher
from crftag.inference.teacher_store import label_text

TEXT = b"John Smith lives in Berlin .\nShares in Siemens rose on Friday .\n"
TEXTS = {
    "empty": (b"", "no text"),
    "blank": (b"\n  \n", "no text"),
    "png": (PNG, ""),
    "nul bytes": (b"Berlin\x00Paris\n", ":1:"),
    "huge line": (b"Berlin\n" + b"x" * (MAX_LINE_BYTES + 1) + b"\n", ":2: line longer than"),
}


@pytest.fixture
def distill(invoke, tiny_args):
    """`crftag distill TEACHER CONFIG --text TEXT -o OUTPUT` with the tiny model's options."""

    def run(teacher, text, output, *extra, config="configs/sample.yaml"):
        options = tiny_args(train__epochs=1)
        args = ["distill", str(teacher), config, "--text", str(text), "-o", str(output)]
        result = invoke([*args, *options, *extra])
        assert result.status == 2, result.stderr
        return result

    return run


@pytest.mark.parametrize("case", TEXTS)
def test_a_hostile_text_is_one_line_naming_it(distill, tmp_path, sample_model, case):
    data, message = TEXTS[case]
    text = tmp_path / "text.txt"
    text.write_bytes(data)
    before = snapshot(tmp_path)
    assert_refused(distill(sample_model, text, tmp_path / "student"), text, message)
    assert snapshot(tmp_path) == before  # nothing written: no store, no model


@pytest.mark.parametrize("case", ["missing", "damaged", "empty"])
def test_a_missing_or_damaged_teacher_is_one_line_naming_it(distill, tmp_path, case):
    text = tmp_path / "text.txt"
    text.write_bytes(TEXT)
    teacher = tmp_path / "teacher.pt"
    if case != "missing":
        teacher.write_bytes(b"" if case == "empty" else PNG)
    before = snapshot(tmp_path)
    assert_refused(distill(teacher, text, tmp_path / "student"), teacher)
    assert snapshot(tmp_path) == before


def test_the_teacher_as_the_students_run_directory_is_refused(distill, tmp_path, sample_model):
    teacher = tmp_path / "teacher"
    shutil.copytree(sample_model, teacher)
    text = tmp_path / "text.txt"
    text.write_bytes(TEXT)
    before = snapshot(tmp_path)
    for output in (teacher, tmp_path):  # the teacher's folder, or one it lies in
        result = distill(teacher, text, output, "--overwrite")
        assert_refused(result, teacher, "the teacher is the student's run directory")
    assert snapshot(tmp_path) == before


def test_a_student_of_other_labels_is_one_line_naming_them(distill, tmp_path, sample_model):
    renamed = tmp_path / "renamed.conll"
    data = Path("data/ner_sample.train.conll").read_text(encoding="utf-8")
    renamed.write_text(data.replace("-LOC", "-PLACE"), encoding="utf-8")
    text = tmp_path / "text.txt"
    text.write_bytes(TEXT)
    result = distill(sample_model, text, tmp_path / "student", "--set", f"data.train={renamed}")
    assert_refused(
        result, sample_model, "only the teacher has LOC", "only the student's data has PLACE"
    )
    # Renamed by train.label_map, the same labels are taken (checked here up to the text).
    mapped = distill(
        sample_model,
        tmp_path / "none.txt",
        tmp_path / "mapped",
        "--set",
        f"data.train={renamed}",
        "--set",
        "train.label_map={PLACE: LOC}",
    )
    assert_refused(mapped, tmp_path / "none.txt")
    pos = distill(sample_model, text, tmp_path / "pos", config="configs/sample_pos.yaml")
    assert_refused(pos, sample_model, "not spans")


def test_a_store_of_another_teacher_or_text_is_refused(distill, invoke, tmp_path, sample_model):
    """Labels left in DIR/teacher by a stopped run of one teacher and text: a run with another
    teacher or text refuses them, and --overwrite labels afresh."""
    text, other_text = tmp_path / "text.txt", tmp_path / "other.txt"
    text.write_bytes(TEXT)
    other_text.write_bytes(TEXT + b"Paris is big .\n")
    other_teacher = tmp_path / "other.npz"
    assert (
        invoke(["export", str(sample_model), str(other_teacher), "--format", "numpy"]).status == 0
    )
    student = tmp_path / "student"
    store = student / "teacher"
    config = load_config("configs/sample.yaml")
    exclude = {
        s.tokens for path in (config.data.dev, config.data.test) for s in config.data.read(path)
    }
    label_text(
        load_teacher(str(sample_model)),
        [str(text)],
        str(store),
        exclude=exclude,
        show_progress=False,
    )
    before = snapshot(student)
    assert_refused(distill(other_teacher, text, student), store, "teacher")
    assert_refused(distill(sample_model, other_text, student), store, "text")
    assert snapshot(student) == before
