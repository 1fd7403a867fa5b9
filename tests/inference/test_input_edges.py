"""Predict's and eval's input edges through the CLI: an endless line, CR-only line ends,
invisible characters in errors, CoNLL-U's FORM column, and ``--on-error skip`` on column input,
each with its one-line error and exit status 2, and with no record lost or altered."""

import dataclasses
import json
import os
import subprocess
import sys
import time

import pytest

from crftag.data import lines
from crftag.errors import CrftagError
from crftag.modelfiles.checkpoint import load_model, save_model

CONLL = "UN B-ORG\nbacks O\nDutch B-MISC\nplans O\n\nAnna B-PER\nLindqvist I-PER\n"
ROW = "_\t_\t_\t_\t_\t_\t_\t_"  # CoNLL-U's columns after FORM


def predict(invoke, model, *args, stdin=b""):
    return invoke(["predict", "-m", str(model), *args], stdin=stdin)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize(
    ("args", "stdin", "error"),
    [
        (["eval", "/dev/zero"], None, "/dev/zero:1: line longer than 4194304 bytes"),
        (["predict", "/dev/zero"], None, "/dev/zero:1: line longer than 4194304 bytes"),
        (
            ["predict", "--input-format", "doc", "-"],
            "/dev/zero",
            "<stdin>: longer than 67108864 bytes, the most a document may hold",
        ),
    ],
)
def test_dev_zero_is_a_quick_one_line_error(sample_model, args, stdin, error):
    started = time.monotonic()
    with open(stdin or os.devnull, "rb") as source:
        done = subprocess.run(
            [sys.executable, "-m", "crftag", *args, "-m", str(sample_model)],
            stdin=source,
            capture_output=True,
            timeout=120,
        )
    assert time.monotonic() - started < 60
    assert b"MemoryError" not in done.stderr
    assert (done.returncode, done.stdout, done.stderr.decode()) == (
        2,
        b"",
        f"crftag: error: {error}\n",
    )


def test_a_too_long_line_stops_after_the_records_before_it(invoke, sample_model, monkeypatch):
    before = "Anna lives in Oslo .\n" * 3
    clean = predict(invoke, sample_model, "--format", "jsonl", stdin=before)
    monkeypatch.setattr(lines, "MAX_LINE_BYTES", 64)
    for on_error in ("stop", "skip"):
        result = predict(
            invoke,
            sample_model,
            "--format",
            "jsonl",
            "--on-error",
            on_error,
            stdin=before + "x" * 65 + "\nmore\n",
        )
        assert result.status == 2
        assert result.stdout == clean.stdout
        assert result.stderr == "crftag: error: <stdin>:4: line longer than 64 bytes\n"


def test_cr_only_files_are_refused_by_predict_eval_and_train(
    invoke, sample_model, tiny_config, tmp_path
):
    from crftag.training.corpus import read_training_files

    cr_only = tmp_path / "mac.conll"
    cr_only.write_bytes(CONLL.replace("\n", "\r").encode())
    error = f"crftag: error: {cr_only}:1: old Mac (CR-only) line ends; convert to \\n\n"
    for args in (
        ["predict", "--input-format", "conll", str(cr_only)],
        ["predict", "--input-format", "tokens", str(cr_only)],
        ["eval", str(cr_only)],
    ):
        result = invoke([*args, "-m", str(sample_model)])
        assert (result.status, result.stdout, result.stderr) == (2, "", error)
    with pytest.raises(CrftagError, match="old Mac"):
        read_training_files(tiny_config(data__train=str(cr_only)))


def test_crlf_column_input_gives_the_records_of_lf_input(invoke, sample_model, tmp_path):
    lf, crlf = tmp_path / "lf.conll", tmp_path / "crlf.conll"
    lf.write_bytes(CONLL.encode())
    crlf.write_bytes(CONLL.replace("\n", "\r\n").encode())
    outputs = [predict(invoke, sample_model, "--input-format", "conll", str(f)) for f in (lf, crlf)]
    assert outputs[0].status == outputs[1].status == 0
    assert outputs[0].stdout == outputs[1].stdout
    assert [line.rsplit(" ", 1)[0] for line in outputs[0].stdout.splitlines()] == (
        CONLL.splitlines() + [""]
    )


def test_errors_about_an_invisible_line_show_it(invoke, sample_model, tmp_path):
    ending = tmp_path / "ending.conll"
    ending.write_bytes(CONLL.encode() + "\n\u2060\n".encode())
    result = invoke(["eval", str(ending), "-m", str(sample_model)])
    assert (result.status, result.stdout) == (2, "")
    assert result.stderr == (
        f"crftag: error: {ending}:9: expected 2 columns (line 1 has 2), got 1 column: "
        "'\\u2060' (U+2060)\n"
    )
    spaced = tmp_path / "spaced.conll"
    spaced.write_bytes("\u200b\n".encode() + CONLL.encode())
    result = invoke(["eval", str(spaced), "-m", str(sample_model)])
    assert (result.status, result.stdout) == (2, "")
    assert result.stderr == (
        f"crftag: error: {spaced}:1: expected a word and a tag column, got 1 column: "
        "'\\u200b' (U+200B)\n"
    )


def test_conllu_column_count_error_reads_right(invoke, sample_model):
    result = predict(invoke, sample_model, "--input-format", "conllu", stdin="1\tEU\tPROPN\n")
    assert (result.status, result.stdout) == (2, "")
    assert result.stderr == (
        "crftag: error: <stdin>:1: expected 10 columns (CoNLL-U has 10, tab-separated), "
        "got 3 columns: '1\\tEU\\tPROPN'\n"
    )


@pytest.fixture(scope="module")
def word_first_model(sample_model, tmp_path_factory):
    """The sample model, its config saying word column 0 (as a two-column file's model may)."""
    loaded = load_model(str(sample_model))
    data = dataclasses.replace(loaded.config.data, word_column=0)
    config = dataclasses.replace(loaded.config, data=data)
    path = tmp_path_factory.mktemp("word-first") / "model.pt"
    save_model(str(path), dataclasses.replace(loaded, config=config))
    return path


def test_conllu_input_takes_form_whatever_the_model_word_column(invoke, word_first_model):
    words = ["UN", "backs", "Dutch", "plans", "to", "ban", "Danish", "cheese", "."]
    lines = ["# text = UN backs ...", "1-2\tUNbacks\t" + ROW]
    lines += [f"{number}\t{word}\t{ROW}" for number, word in enumerate(words, 1)]
    source = "\n".join(lines) + "\n\n"
    expected = predict(
        invoke,
        word_first_model,
        "--input-format",
        "tokens",
        "--format",
        "jsonl",
        stdin=" ".join(words) + "\n",
    )
    result = predict(
        invoke, word_first_model, "--input-format", "conllu", "--format", "jsonl", stdin=source
    )
    assert result.status == 0, result.stderr
    assert json.loads(result.stdout)["tokens"] == words
    assert json.loads(result.stdout)["tags"] == json.loads(expected.stdout)["tags"]
    written = predict(invoke, word_first_model, "--input-format", "conllu", stdin=source)
    tags = json.loads(expected.stdout)["tags"]
    assert (
        written.stdout
        == "\n".join(
            [*lines[:2], *(f"{line}\t{tag}" for line, tag in zip(lines[2:], tags, strict=True))]
        )
        + "\n\n"
    )


@pytest.mark.parametrize("output_format", ["conll", "jsonl"])
def test_on_error_skip_gives_back_every_line_of_column_input(
    invoke, sample_model, tmp_path, output_format
):
    good = CONLL.encode().split(b"\n")  # the last is empty: the file ends with a line end
    bad = [b"caf\xe9 O", b"\xff\xfe"]  # in a sentence, and a block of its own
    lines = [*good[:2], bad[0], *good[2:5], bad[1], b"", *good[5:]]
    source, clean = tmp_path / "bad.conll", tmp_path / "clean.conll"
    source.write_bytes(b"\n".join(lines))
    clean.write_bytes(b"\n".join(good))
    args = ["--input-format", "conll", "--format", output_format, "--on-error", "skip"]
    result = predict(invoke, sample_model, *args, str(source))
    expected = predict(invoke, sample_model, *args, str(clean))
    assert result.status == expected.status == 0
    assert result.stderr == (
        f"crftag: warning: {source}:3: not valid UTF-8 (byte 4 of the line); skipped\n"
        f"crftag: warning: {source}:7: not valid UTF-8 (byte 1 of the line); skipped\n"
    )
    if output_format == "jsonl":  # the bad lines are no words: the same records
        assert result.stdout == expected.stdout
        return
    # Every line back in its place: words with the clean file's tags, the bad lines untagged.
    tags = iter(line.rsplit(" ", 1)[1] for line in expected.stdout.splitlines() if line)
    written = [
        f"{line.decode()} {next(tags)}"
        if line and line not in bad
        else line.decode(errors="replace")
        for line in lines
    ]
    assert result.stdout == "\n".join(written) + "\n"
    assert "caf\ufffd O\n" in result.stdout


def test_eval_of_conllu_scores_form_whatever_the_model_word_column(
    invoke, word_first_model, tmp_path
):
    words = ["UN", "backs", "Dutch", "plans", "to", "ban", "Danish", "cheese", "."]
    tags = ["B-ORG", "O", "B-MISC", "O", "O", "O", "B-MISC", "O", "O"]
    pairs = list(zip(words, tags, strict=True))
    conll = tmp_path / "gold.conll"
    conll.write_text("".join(f"{word} {tag}\n" for word, tag in pairs) + "\n", "utf-8")
    conllu = tmp_path / "gold.conllu"  # the entity tags in the UPOS column, which eval reads
    rows = [f"{n}\t{word}\t_\t{tag}\t_\t_\t_\t_\t_\t_" for n, (word, tag) in enumerate(pairs, 1)]
    conllu.write_text("\n".join(rows) + "\n\n", "utf-8")
    scores = [
        invoke(["eval", "-m", str(word_first_model), str(path), "--json"])
        for path in (conll, conllu)
    ]
    assert [result.status for result in scores] == [0, 0], scores[1].stderr
    by_file = [json.loads(result.stdout) for result in scores]
    for entry in by_file:
        entry.pop("file", None)
    assert by_file[0] == by_file[1]
