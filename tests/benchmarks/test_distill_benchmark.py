"""benchmarks/distill.py end to end on the bundled sample (--tiny): a teacher trained, the text
labelled once, every row's runs, the teacher's scores and the alternating tagging speeds; then
run again, it redoes nothing."""

import argparse
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from crftag.modelfiles import load_model

SCRIPT = os.path.join("benchmarks", "distill.py")


def distill_benchmark():
    """benchmarks/distill.py as a module."""
    spec = importlib.util.spec_from_file_location("distill", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_tiny(out, results):
    argv = [sys.executable, SCRIPT, "--tiny", "--seeds", "1", "--out", str(out)]
    argv += ["--jobs", "2", "--per-epoch", "100"]  # two runs at once; 100 of ~200 an epoch
    done = subprocess.run([*argv, "--json", str(results)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(results.read_text())["sample"]


@pytest.mark.slow
def test_the_tiny_benchmark_runs_every_row_and_resumes(tmp_path):
    results = tmp_path / "distill.json"
    entry = run_tiny(tmp_path / "runs", results)
    assert set(entry["rows"]) == {"scratch", "hard", "exact"}
    for row in entry["rows"].values():
        assert len(row["runs"]) == 1 and 0 < row["test_f1"] <= 100
    assert 0 < entry["teacher"]["test_f1"] <= 100
    assert entry["teacher_sentences_per_epoch"] == 100 and entry["jobs"] == 2
    for row in ("hard", "exact"):  # the students drew 100 of the store an epoch
        student = load_model(str(tmp_path / "runs" / "sample" / f"{row}-1"))
        assert student.config.distill.sentences == 100
    labelling = entry["labelling"]
    assert labelling["sentences"] > 0 and labelling["tokens_per_second"] > 0
    speed = entry["speed"]
    students = {"hard", "exact", "hard npz", "exact npz"}  # torch and the NumPy exports
    assert set(speed["tokens_per_second"]) == {"teacher", *students}
    assert set(speed["over_teacher"]) == students
    assert speed["npz_tags_as_torch"] == {"hard npz": 1.0, "exact npz": 1.0}
    rendered = distill_benchmark().table(entry)  # as docs/distillation.md quotes a corpus
    for row in ("scratch", "hard", "exact", "teacher"):
        assert f"| {row} | " in rendered
    store = tmp_path / "runs" / "sample" / "store"
    for row in ("hard", "exact"):  # every student read the one store
        link = tmp_path / "runs" / "sample" / f"{row}-1" / "teacher"
        assert link.is_symlink() and os.path.samefile(link, store)
    model = tmp_path / "runs" / "sample" / "exact-1" / "model.pt"
    stamp = os.stat(model).st_mtime_ns
    again = run_tiny(tmp_path / "runs", results)
    assert again["rows"] == entry["rows"] and again["labelling"] == labelling
    assert os.stat(model).st_mtime_ns == stamp  # nothing trained again


def test_a_store_labelled_in_parts_has_its_rate_timed_on_the_texts_first_lines(
    teacher_path, tmp_path
):
    module = distill_benchmark()
    text = tmp_path / "text.txt"
    text.write_text("John lives in Berlin .\nAnna Lindqvist visited Oslo .\nMore text .\n")
    config = module.student_config(argparse.Namespace(tiny=True))  # the sample's files
    found = module.labelling_rate(teacher_path, str(text), config, str(tmp_path), 2)
    assert found["sentences"] == 2 and found["sentences_per_second"] > 0
    assert found["measured_on"] == "the text's first 2 lines, labelled again"
    assert not (tmp_path / "rate").exists()  # the timed store is removed


@pytest.mark.parametrize(
    ("labelling", "retime", "timed"),
    [
        ({"sentences_per_second": 48.6}, False, False),  # labelled whole here: its own rate
        ({"sentences_per_second": 48.6}, True, True),  # beside other work: timed again
        (None, False, True),  # labelled in parts, or elsewhere
        ({"timed": {"sentences_per_second": 120.0}}, False, False),  # timed already
        ({"timed": {"sentences_per_second": 120.0}}, True, True),
    ],
)
def test_the_labelling_is_timed_apart_when_asked_or_when_no_one_run_labelled_it(
    labelling, retime, timed
):
    assert distill_benchmark().needs_timing(labelling, retime) is timed
