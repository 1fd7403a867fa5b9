"""Arguments as the command line reads them: after ``--`` every argument is a file, and a shard
that cannot be read twice is named for what it is, not "no such file"."""

import json
import os


def test_a_file_named_like_an_option_after_the_double_dash(
    invoke, sample_model, tmp_path, monkeypatch
):
    named = tmp_path / "--probs"
    named.write_text("Berlin\n")
    monkeypatch.chdir(tmp_path)
    result = invoke(["predict", "-m", str(sample_model), "--format", "jsonl", "--", "--probs"])
    assert result.status == 0 and result.stderr == ""
    record = json.loads(result.stdout)
    assert record["tokens"] == ["Berlin"] and "probs" not in record


def test_probs_alone_before_the_double_dash_still_means_tag(
    invoke, sample_model, tmp_path, monkeypatch
):
    (tmp_path / "in.txt").write_text("Berlin\n")
    monkeypatch.chdir(tmp_path)
    model = str(sample_model)
    result = invoke(["predict", "-m", model, "--format", "jsonl", "--probs", "--", "in.txt"])
    assert result.status == 0, result.stderr
    assert len(json.loads(result.stdout)["probs"]) == 1


def test_a_missing_file_after_the_double_dash_is_named(invoke, sample_model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke(["predict", "-m", str(sample_model), "--", "--probs"])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr == "crftag: error: --probs: no such file\n"


def test_merge_names_a_folder_and_a_stream_for_what_they_are(invoke, tmp_path):
    fifo = tmp_path / "shard.fifo"
    os.mkfifo(fifo)
    for path, message in (
        (tmp_path, "is a directory, expected a shard file"),
        (fifo, "not a regular file; merge reads each shard twice"),
        (tmp_path / "missing", "no such file"),
    ):
        result = invoke(["merge", str(path)])
        assert result.status == 2 and result.stdout == ""
        assert result.stderr.startswith(f"crftag: error: {path}: {message}")
        assert result.stderr.count("\n") == 1
