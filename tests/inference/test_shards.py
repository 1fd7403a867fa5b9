"""Merging sharded predict outputs back into input order: on hand-made shard files, and
`crftag predict --shard I/N` outputs merged against an unsharded run."""

import io
from pathlib import Path

import pytest

from crftag.errors import CrftagError
from crftag.inference.shards import ShardWriter, merge_shards


class Record:
    """What ShardWriter.hash_input reads of an input record."""

    def __init__(self, n):
        self.sentence = type("Sentence", (), {"tokens": (f"w{n}",)})()
        self.text, self.markup = None, False


def records_of(numbers, output_format):
    if output_format == "jsonl":
        return [f'{{"tokens": ["w{n}"]}}\n' for n in numbers]
    # CoNLL records end with a blank line; record 3 is an empty sentence (a lone blank line).
    return ["\n" if n == 3 else f"w{n}\tO\nx{n}\tB-PER\n\n" for n in numbers]


def write_shards(tmp_path, output_format, count=3, batch_size=2, total=11, name="shard"):
    """Shards as predict writes them: header, every count-th batch, end line."""
    records = records_of(range(total), output_format)
    batches = [records[i : i + batch_size] for i in range(0, len(records), batch_size)]
    paths = []
    for index in range(count):
        output = io.StringIO()
        writer = ShardWriter(output, index, count, batch_size, output_format)
        for _ in writer.hash_input(Record(n) for n in range(total)):
            pass
        for batch in batches[index::count]:
            writer.write(batch)
        writer.finish()
        path = tmp_path / f"{name}{index}"
        path.write_text(output.getvalue(), encoding="utf-8")
        paths.append(str(path))
    return paths, "".join(records)


@pytest.mark.parametrize("output_format", ["conll", "jsonl"])
def test_shards_of_whole_batches_merge_into_input_order(tmp_path, output_format):
    paths, expected = write_shards(tmp_path, output_format)
    output = io.StringIO()
    assert merge_shards(paths, output_format, output, 2) == 11
    assert output.getvalue() == expected
    output = io.StringIO()  # the headers say the format and batch size
    assert merge_shards(paths, None, output) == 11 and output.getvalue() == expected


def merge_error(paths, output_format=None, batch_size=None) -> str:
    with pytest.raises(CrftagError) as caught:
        merge_shards(paths, output_format, io.StringIO(), batch_size)
    return str(caught.value)


def test_merge_refuses_anything_but_the_full_set(tmp_path):
    paths, _ = write_shards(tmp_path, "conll")
    assert "missing 2/3" in merge_error(paths[:2])
    assert "given 2 times" in merge_error([paths[0], paths[0], paths[2]])
    assert "given in place of 0/3" in merge_error([paths[1], paths[0], paths[2]])
    assert "--format jsonl" in merge_error(paths, "jsonl")
    assert "--batch-size 64" in merge_error(paths, None, 64)
    other, _ = write_shards(tmp_path, "conll", total=12, name="other")
    assert "tagged from other input" in merge_error([paths[0], other[1], paths[2]])
    json_paths, _ = write_shards(tmp_path, "jsonl", name="json")
    assert "format 'jsonl'" in merge_error([paths[0], json_paths[1], paths[2]])


def test_merge_refuses_a_truncated_altered_empty_or_binary_shard(tmp_path):
    paths, _ = write_shards(tmp_path, "conll")
    text = Path(paths[1]).read_text(encoding="utf-8")
    truncated, altered, empty, binary = (tmp_path / name for name in ("t", "a", "e", "b"))
    truncated.write_text(text[: len(text) // 2], encoding="utf-8")
    altered.write_text(text.replace("B-PER", "B-LOC", 1), encoding="utf-8")
    empty.write_text("", encoding="utf-8")
    binary.write_bytes(bytes(range(256)) * 4)
    assert "truncated" in merge_error([paths[0], str(truncated), paths[2]])
    assert "altered" in merge_error([paths[0], str(altered), paths[2]])
    assert "not a shard" in merge_error([paths[0], str(empty), paths[2]])
    assert "not a shard" in merge_error([str(binary)])


def test_a_carriage_return_inside_a_token_survives_the_merge(tmp_path):
    output = io.StringIO()
    writer = ShardWriter(output, 0, 1, 2, "jsonl")
    writer.write(['{"tokens": ["a\rb"]}\n'])
    writer.finish()
    path = tmp_path / "cr"
    path.write_bytes(output.getvalue().encode("utf-8"))
    merged = io.StringIO()
    assert merge_shards([str(path)], "jsonl", merged) == 1
    assert merged.getvalue() == '{"tokens": ["a\rb"]}\n'


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
    assert invoke(["merge", *shards]).stdout == whole  # the headers say format and batch size
    missing = invoke(["merge", *shards[:2]])
    assert missing.status == 2 and "missing 2/3" in missing.stderr and missing.stdout == ""
    jobs = invoke(["predict", *options, "--jobs", "2"], stdin=source.read_bytes())
    assert jobs.status == 0, jobs.stderr
    assert jobs.stdout == whole


def test_bad_shard_is_a_clear_error(invoke, sample_model):
    result = invoke(["predict", "-m", str(sample_model), "--shard", "3/3"])
    assert result.status == 2 and "expected I/N with 0 <= I < N" in result.stderr
