"""examples/tag_sentences.py: a bundled model's entities with their confidences, a POS model's
tags, and a missing model as one line on stderr."""

import subprocess
import sys

SCRIPT = "examples/tag_sentences.py"


def run(*options: str, stdin: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, SCRIPT, *options], input=stdin, capture_output=True, text=True
    )


def test_entities_with_their_confidences():
    done = run(stdin="John Smith lives in Berlin .\n\nNothing here .\n")
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    text, spans = first.split("\t")
    assert text == "John Smith lives in Berlin ."
    assert [span.rsplit(" ", 1)[0] for span in spans.split("; ")] == [
        "John Smith PER",
        "Berlin LOC",
    ]
    assert all(0.0 < float(span.rsplit(" ", 1)[1]) <= 1.0 for span in spans.split("; "))
    assert second == "Nothing here .\t"
    assert done.stderr.strip().endswith("on numpy: LOC, MISC, ORG, PER")


def test_a_pos_model_prints_each_tag():
    done = run("-m", "en-pos", stdin="The cat sat .\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The/DET cat/NOUN sat/VERB ./PUNCT\n"


def test_a_missing_model_is_one_line(tmp_path):
    done = run("-m", str(tmp_path / "nope.pt"), stdin="x\n")
    assert done.returncode == 1 and done.stdout == ""
    assert (
        done.stderr
        == f"tag_sentences.py: error: {tmp_path / 'nope.pt'}: no such model file or directory\n"
    )
