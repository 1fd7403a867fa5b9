"""Merging sharded predict outputs back into input order: on hand-made shard files, and
`crftag predict --shard I/N` outputs merged against an unsharded run."""

import io
import subprocess
import sys

import pytest

from crftag.inference.shards import merge_shards, read_records


def records_of(numbers, output_format):
    if output_format == "jsonl":
        return [f'{{"tokens": ["w{n}"]}}\n' for n in numbers]
    # CoNLL records end with a blank line; record 3 is an empty sentence (a lone blank line).
    return ["\n" if n == 3 else f"w{n}\tO\nx{n}\tB-PER\n\n" for n in numbers]


@pytest.mark.parametrize("output_format", ["conll", "jsonl"])
def test_shards_of_whole_batches_merge_into_input_order(tmp_path, output_format):
    batch_size, shards = 2, 3
    records = records_of(range(11), output_format)
    batches = [records[i : i + batch_size] for i in range(0, len(records), batch_size)]
    paths = []
    for index in range(shards):
        path = tmp_path / f"shard{index}"
        path.write_text("".join(r for batch in batches[index::shards] for r in batch), "utf-8")
        paths.append(str(path))
    output = io.StringIO()
    assert merge_shards(paths, output_format, output, batch_size) == 11
    assert output.getvalue() == "".join(records)


def test_conll_records_end_at_blank_lines_and_a_last_one_may_lack_it():
    stream = io.StringIO("a\tO\nb\tO\n\n\nc\tB-LOC\n")
    assert list(read_records(stream, "conll")) == ["a\tO\nb\tO\n\n", "\n", "c\tB-LOC\n"]


def test_an_empty_shard_merges_to_nothing(tmp_path):
    path = tmp_path / "empty"
    path.write_text("", encoding="utf-8")
    output = io.StringIO()
    assert merge_shards([str(path)], "jsonl", output) == 0
    assert output.getvalue() == ""


@pytest.mark.parametrize("output_format", ["conll", "jsonl"])
def test_sharded_predict_merged_equals_unsharded(invoke, sample_model, tmp_path, output_format):
    lines = [f"Anna Smith {i} lives in Berlin ." if i % 7 else "" for i in range(230)]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    options = ["-m", str(sample_model), "--format", output_format, "--batch-size", "16"]
    whole = invoke(["predict", str(source), *options]).stdout
    shards = []
    for index in range(3):
        result = invoke(["predict", str(source), *options, "--shard", f"{index}/3"])
        assert result.status == 0, result.stderr
        path = tmp_path / f"shard{index}"
        path.write_text(result.stdout, encoding="utf-8")
        shards.append(str(path))
    merged = invoke(["merge", *shards, "--format", output_format, "--batch-size", "16"])
    assert merged.stdout == whole
    jobs = subprocess.run(
        [sys.executable, "-m", "crftag", "predict", *options, "--jobs", "2"],
        input=source.read_bytes(),
        capture_output=True,
        check=True,
    )
    assert jobs.stdout.decode("utf-8") == whole


def test_bad_shard_is_a_clear_error(invoke, sample_model):
    result = invoke(["predict", "-m", str(sample_model), "--shard", "3/3"])
    assert result.status == 2 and "expected I/N with 0 <= I < N" in result.stderr
