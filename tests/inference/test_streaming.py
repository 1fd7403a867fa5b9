"""Streaming predict through the CLI and :func:`predict_files`: one record per input sentence,
in input order, in each input and output format."""

import io
import json
import os
import subprocess
import sys

import pytest

from crftag.data.tokenize import tokenize
from crftag.inference.loading import load
from crftag.inference.streaming import PredictOptions, predict_files, tag_files
from crftag.modelfiles.registry import MODELS_DIR


def test_predict_gives_one_record_per_input_line_in_order(invoke, sample_model):
    lines = ["John Smith lives in Berlin.", "", "   ", "Zürich \u00e9t\u00e9 ☃ .", "One"] * 7
    result = invoke(
        ["predict", "-m", str(sample_model), "--format", "jsonl", "--batch-size", "4"],
        stdin="\n".join(lines) + "\n",
    )
    assert result.status == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(records) == len(lines)
    for line, record in zip(lines, records, strict=True):
        assert record["tokens"] == tokenize(line)
        assert len(record["tags"]) == len(record["tokens"])
        for span in record["spans"]:
            assert span["text"] == " ".join(record["tokens"][span["start"] : span["end"]])
    assert result.stderr == ""


def test_predict_conll_keeps_every_column_and_appends_a_tag(invoke, sample_model, tmp_path):
    source = tmp_path / "in.conll"
    source.write_text("-DOCSTART- -X- O\n\nAnna NNP B-PER\nsings VBZ O\n\nOslo NNP B-LOC\n")
    result = invoke(["predict", "-m", str(sample_model), "--input-format", "conll", str(source)])
    assert result.status == 0, result.stderr
    out = result.stdout.splitlines()
    assert out[0] == "-DOCSTART- -X- O O"
    kept = [line.rsplit(" ", 1)[0] for line in out if line]
    assert kept == ["-DOCSTART- -X- O", "Anna NNP B-PER", "sings VBZ O", "Oslo NNP B-LOC"]
    assert all(len(line.split()) == 4 for line in out if line)


def test_predict_tokens_input_keeps_tokens_unchanged(invoke, sample_model):
    result = invoke(
        ["predict", "-m", str(sample_model), "--input-format", "tokens"],
        stdin="Mr.Smith went to Berlin.\n",
    )
    tokens = [line.split("\t")[0] for line in result.stdout.splitlines() if line]
    assert tokens == ["Mr.Smith", "went", "to", "Berlin."]


def test_predict_files_names_the_formats_it_accepts(sample_model, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("Anna sings .\n", encoding="utf-8")
    tagger = load(str(sample_model), "cpu")
    common = {"batch_size": 8, "output": io.StringIO()}
    with pytest.raises(ValueError, match=r"expected input_format in .*'conllu'.*, got 'xml'"):
        predict_files(tagger, [str(source)], input_format="xml", output_format="conll", **common)
    with pytest.raises(ValueError, match=r"expected output_format in .*'jsonl'.*, got 'csv'"):
        predict_files(tagger, [str(source)], input_format="text", output_format="csv", **common)


def test_tag_files_loads_the_model_and_writes_what_predict_writes(invoke, sample_model, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("John Smith lives in Berlin.\n\nShares in Siemens rose.\n", encoding="utf-8")
    options = PredictOptions(
        model=str(sample_model),
        device="cpu",
        input_format="text",
        output_format="jsonl",
        batch_size=2,
        probs="tag",
        nbest=2,
    )
    output = io.StringIO()
    assert tag_files(options, [str(source)], output) == 3
    cli = invoke(
        [
            "predict",
            str(source),
            "-m",
            str(sample_model),
            "--device",
            "cpu",
            "--format",
            "jsonl",
            "--batch-size",
            "2",
            "--probs",
            "--nbest",
            "2",
        ]
    )
    assert cli.status == 0, cli.stderr
    assert output.getvalue() == cli.stdout
    assert [len(json.loads(line)["nbest"]) for line in cli.stdout.splitlines()] == [2, 1, 2]


PEAK_RSS = (
    "import resource, sys\n"
    "from crftag import cli\n"
    "status = cli.run(sys.argv[1:])\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(status)\n"
)


def peak_rss_kb(model, lines, tmp_path, output_format="conll"):
    source = tmp_path / f"in{lines}.txt"
    with open(source, "w", encoding="utf-8") as handle:
        for i in range(lines):
            handle.write(f"Anna Smith {i} lives in Berlin and works for Siemens .\n")
    with open(source, "rb") as stdin:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                PEAK_RSS,
                "predict",
                "-m",
                str(model),
                "--format",
                output_format,
            ],
            stdin=stdin,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=True,
        )
    return int(done.stderr.strip().splitlines()[-1])


def test_predict_streams_in_bounded_memory(sample_model, tmp_path):
    small = peak_rss_kb(sample_model, 1_000, tmp_path, "jsonl")
    large = peak_rss_kb(sample_model, 20_000, tmp_path, "jsonl")
    assert large <= 1.2 * small, (small, large)


@pytest.mark.slow
def test_a_million_sentences_in_bounded_memory(sample_model, tmp_path):
    small = peak_rss_kb(sample_model, 10_000, tmp_path)
    large = peak_rss_kb(sample_model, 1_000_000, tmp_path)
    assert large <= 1.2 * small, (small, large)


HAVE_NER = os.path.exists(os.path.join(MODELS_DIR, "en-ner.npz"))


@pytest.mark.skipif(not HAVE_NER, reason="en-ner not built (make models)")
@pytest.mark.parametrize("input_format", ["text", "tokens"])
def test_span_offsets_slice_the_input_line(invoke, input_format):
    lines = [
        "Angela  Merkel visited\tNew York.",
        "Zürich\u00a0and  東京 :  Angela Merkel met Emmanuel\u3000Macron in Paris .",
    ]
    result = invoke(
        ["predict", "--input-format", input_format, "--format", "jsonl", "--token-offsets"],
        stdin="\n".join(lines) + "\n",
    )
    assert result.status == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(records) == 2 and all(record["spans"] for record in records)
    for line, record in zip(lines, records, strict=True):
        for span in record["spans"]:
            assert line[span["start_char"] : span["end_char"]] == span["text"]
        for token, (start, end) in zip(record["tokens"], record["token_offsets"], strict=True):
            assert line[start:end] == token
    assert records[0]["spans"][0]["text"] == "Angela  Merkel"


def test_column_input_spans_are_placed_in_the_tokens_joined_by_spaces(invoke, sample_model):
    conll = "John\nSmith\nlives\nin\nBerlin\n.\n\n"
    result = invoke(
        ["predict", "-m", str(sample_model), "--input-format", "conll", "--format", "jsonl"],
        stdin=conll,
    )
    record = json.loads(result.stdout)
    joined = " ".join(record["tokens"])
    assert record["spans"]
    for span in record["spans"]:
        assert joined[span["start_char"] : span["end_char"]] == span["text"]
    assert "token_offsets" not in record


def test_a_span_text_with_a_line_separator_keeps_its_record_on_one_line(invoke, sample_model):
    line = "John\u2028Smith lives in\u0085Berlin ."
    args = ["predict", "-m", str(sample_model), "--input-format", "tokens", "--format", "jsonl"]
    result = invoke(args, stdin=line + "\n")
    assert len(result.stdout.splitlines()) == 1  # str.splitlines breaks at U+2028 and U+0085
    record = json.loads(result.stdout)
    assert record["tokens"] == line.split()
    for span in record["spans"]:
        assert line[span["start_char"] : span["end_char"]] == span["text"]
