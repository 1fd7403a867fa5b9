"""Tagging with worker processes: the merged output is what one process writes, and a
worker's user error reaches the user as one line."""

import io
import json
import select
import subprocess
import sys

import pytest

from crftag.errors import CrftagError
from crftag.inference.parallel import predict_in_processes
from crftag.inference.streaming import PredictOptions, tag_files


def options_for(model, **changes):
    settings = {
        "model": str(model),
        "device": "cpu",
        "input_format": "text",
        "output_format": "jsonl",
        "batch_size": 4,
        "probs": "tag",
        "nbest": 2,
    }
    return PredictOptions(**{**settings, **changes})


def test_workers_read_stdin_and_merge_to_the_bytes_of_one_process(
    sample_model, tmp_path, monkeypatch
):
    lines = [f"Anna Smith {i} lives in Berlin ." if i % 5 else "" for i in range(30)]
    text = "".join(line + "\n" for line in lines)
    source = tmp_path / "in.txt"
    source.write_text(text, encoding="utf-8")
    options = options_for(sample_model)
    one = io.StringIO()
    tag_files(options, [str(source)], one)
    stdin = io.TextIOWrapper(io.BytesIO(text.encode("utf-8")), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    merged = io.StringIO()
    assert predict_in_processes(2, ["-"], options, merged) == len(lines)
    assert merged.getvalue() == one.getvalue()


def test_a_workers_user_error_comes_after_what_one_process_writes_before_it(sample_model, tmp_path):
    bad = tmp_path / "bad.conll"
    bad.write_bytes(b"Anna B-PER\n\ncaf\xe9 O\n")
    options = options_for(sample_model, input_format="conll")
    one = io.StringIO()
    with pytest.raises(CrftagError, match=r"bad\.conll:3: not valid UTF-8"):
        tag_files(options, [str(bad)], one)
    merged = io.StringIO()
    with pytest.raises(CrftagError, match=r"bad\.conll:3: not valid UTF-8"):
        predict_in_processes(2, [str(bad)], options, merged)
    assert one.getvalue().count("\n") == 1
    assert merged.getvalue() == one.getvalue()


def test_jobs_error_is_one_line_on_stderr_and_a_nonzero_exit(sample_model, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "crftag", "predict", "-m", str(tmp_path), "--jobs", "2"],
        input=b"Anna sings .\n",
        capture_output=True,
        timeout=300,
    )
    stderr = done.stderr.decode("utf-8")
    assert done.returncode == 2 and done.stdout == b""
    assert stderr.splitlines() == [
        f"crftag: error: {tmp_path}: no model.pt in this directory; is it a training run?"
    ]


def test_jobs_and_shard_do_not_combine(invoke, sample_model):
    result = invoke(["predict", "-m", str(sample_model), "--jobs", "2", "--shard", "0/2"])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr == (
        "crftag: error: --jobs and --shard do not combine; run one or the other\n"
    )


def test_jobs_with_files_and_stdin_give_one_process_records_in_order(
    invoke, sample_model, tmp_path
):
    first, last = tmp_path / "b.txt", tmp_path / "c.txt"
    first.write_text("".join(f"Anna Smith visited Berlin {i} .\n" for i in range(7)), "utf-8")
    last.write_text("".join(f"Maria met Paul in Rome {i} .\n" for i in range(6)), "utf-8")
    stdin = "".join(f"Peter lives in Paris {i} .\n" if i % 7 else "\n" for i in range(14))
    stdin = stdin.encode("utf-8")
    # A file, stdin, a file: one pool of workers crosses both kinds of boundary, file to stdin
    # and stdin to file, each inside a batch of 4 (7 = 4 + 3, 7 + 14 = 5 * 4 + 1), and its 7
    # batches are more than the 4 it keeps in flight. Stdin alone is test_jobs_input_error_...
    # and test_jobs_stream_...'s input; a crftag process reading its stdin from a pipe in each
    # order is tests/test_hostile_streams.py's test_parallel_jobs_with_stdin_...
    inputs = [str(first), "-", str(last)]
    args = ["predict", "-m", str(sample_model), "--format", "jsonl", "--batch-size", "4"]
    one = invoke([*args, *inputs], stdin=stdin)
    jobs = invoke([*args, "--jobs", "2", *inputs], stdin=stdin)
    assert one.status == 0 and jobs.status == 0, jobs.stderr
    assert jobs.stdout == one.stdout
    records = [json.loads(line) for line in jobs.stdout.splitlines()]
    assert len(records) == 7 + 14 + 6
    assert [records[i]["tokens"][:2] for i in (6, 8, 20, 21)] == [
        ["Anna", "Smith"],
        ["Peter", "lives"],
        ["Peter", "lives"],
        ["Maria", "met"],
    ]
    assert records[7]["tokens"] == [] and records[20]["tokens"][-2] == "13"


def test_jobs_stream_answers_while_stdin_stays_open(sample_model):
    """Records come out while the input is still being written: stdin is read as it comes,
    not copied whole first, and a pause in it does not hold back answers that are ready."""
    process = subprocess.Popen(
        [sys.executable, "-m", "crftag", "predict", "-m", str(sample_model), "--jobs", "2"]
        + ["--batch-size", "1", "--format", "jsonl"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        process.stdin.write(b"Anna Smith lives in Berlin .\nPeter sings .\n")
        process.stdin.flush()
        ready, _, _ = select.select([process.stdout], [], [], 240)
        assert ready, "no record while stdin stayed open"
        first = json.loads(process.stdout.readline())
        assert first["tokens"] == ["Anna", "Smith", "lives", "in", "Berlin", "."]
    finally:
        process.stdin.close()
        process.wait(timeout=120)
    assert process.returncode == 0
    assert json.loads(process.stdout.read())["tokens"] == ["Peter", "sings", "."]


def test_jobs_input_error_names_stdin_after_the_records_before_it(invoke, sample_model):
    stdin = b"Anna sings .\n" * 20 + b"caf\xe9\n" + b"Peter sings .\n"
    one = invoke(["predict", "-m", str(sample_model), "--batch-size", "4"], stdin=stdin)
    jobs = invoke(["predict", "-m", str(sample_model), "--jobs", "2", "--batch-size", "4"], stdin)
    assert jobs.status == one.status == 2
    assert jobs.stdout == one.stdout and one.stdout.count("\n\n") == 20
    assert jobs.stderr == one.stderr
    assert jobs.stderr.startswith("crftag: error: <stdin>:21: not valid UTF-8")
