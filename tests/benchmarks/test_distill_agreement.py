"""benchmarks/distill_agreement.py: the teacher scored against itself agrees on every entity, on
the store's sentences and on the unseen lines, and the unseen lines leave out the store's own
sentences."""

import json
import os
import subprocess
import sys

import pytest

from crftag.inference.teacher import load_teacher
from crftag.inference.teacher_store import label_text

SCRIPT = os.path.join("benchmarks", "distill_agreement.py")
sys.path.insert(0, os.path.dirname(SCRIPT))

from distill_agreement import unseen_sentences  # noqa: E402

LINES = [
    "John Smith lives in Berlin .",
    "Anna Lindqvist visited Oslo .",
    "UN praises Danish plan .",
]


@pytest.mark.slow  # a benchmark's check: it starts the script as a process
def test_the_teacher_agrees_with_itself_and_unseen_text_is_unseen(teacher_path, tmp_path):
    text, head = tmp_path / "text.txt", tmp_path / "head.txt"
    text.write_text("\n".join([*LINES[:2], *LINES]) + "\n", encoding="utf-8")  # lines 3-5 after 2
    head.write_text("\n".join(LINES[:2]) + "\n", encoding="utf-8")  # the lines the store took
    store_dir = tmp_path / "store"
    label_text(load_teacher(teacher_path), [str(head)], str(store_dir), exclude=set())
    seen = {tuple(LINES[0].split()), tuple(LINES[1].split())}
    assert unseen_sentences(str(text), 2, 3, seen) == [tuple(LINES[2].split())]
    argv = [sys.executable, SCRIPT, "--teacher", teacher_path, "--store", str(store_dir)]
    argv += ["--text", str(text), "--skip", "2", "--lines", "3", f"self={teacher_path}"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [row["text"] for row in rows] == ["trained on", "unseen"]
    assert rows[1]["sentences"] == 1  # the two lines the store holds are left out
    assert all(row["self"] == 100.0 for row in rows)
