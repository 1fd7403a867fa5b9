"""A battery of malformed files and options through every command, and property-based tests
that no input crashes the readers or the CLI: a user mistake is one line `crftag: error: ...`,
a non-zero exit, and no traceback."""

import io
import json
import os
import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crftag.data.conll import ColumnSpec, read_columns
from crftag.errors import CrftagError

BAD_FILES = {
    "ragged.conll": (b"a O\nb X O\n", "ragged.conll:2: expected 2 columns"),
    "no_tags.conll": (b"word\nother\n", "no_tags.conll:1: expected a word and a tag column"),
    "latin1.conll": (b"caf\xe9 O\n", "latin1.conll:1: not valid UTF-8"),
    "nul.conll": (b"a O\n\x00 O\n", "nul.conll:2: contains a NUL byte"),
    "empty.conll": (b"", "empty.conll: no sentences found"),
    "docstart.conll": (b"-DOCSTART- -X- O O\n\n", "docstart.conll: no sentences found"),
    "short.conllu": (b"1\tword\tNOUN\n", "short.conllu:1: expected 10 columns"),
}


def assert_one_line_error(result, message):
    assert result.status != 0, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("crftag: error: ") and message in lines[0], lines[0]


def test_malformed_files_through_eval_and_train(invoke, sample_model, tmp_path):
    for name, (content, message) in BAD_FILES.items():
        path = tmp_path / name
        path.write_bytes(content)
        assert_one_line_error(invoke(["eval", str(path), "-m", str(sample_model)]), message)
        config = tmp_path / "config.yaml"
        config.write_text(f"data:\n  train: {path}\n")
        result = invoke(["train", str(config), "-o", str(tmp_path / "run"), "--device", "cpu"])
        assert_one_line_error(result, message)


def test_config_mistakes_are_found_before_any_work(invoke, tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("data:\n  train: missing.conll\n")
    assert_one_line_error(invoke(["train", str(config)]), "data.train: ")
    config.write_text("data:\n  train: ../data/x\n  tag_scheme: bio\n")
    assert_one_line_error(invoke(["train", str(config)]), "expected one of auto|iob1|iob2|bioes")
    blocked = tmp_path / "file"
    blocked.write_text("")
    config.write_text(f"data:\n  train: {os.path.abspath('data/ner_sample.train.conll')}\n")
    result = invoke(["train", str(config), "-o", str(blocked / "run")])
    assert_one_line_error(result, "cannot create the output directory")
    result = invoke(
        [
            "train",
            str(config),
            "--set",
            "vocab.max_size=10",
            "--device",
            "cpu",
            "-o",
            str(tmp_path / "run"),
        ]
    )
    assert_one_line_error(result, "more than vocab.max_size=10")
    pos = tmp_path / "pos.yaml"
    pos.write_text(
        f"data:\n  train: {os.path.abspath('data/ewt_sample.dev.conllu')}\n  tag_scheme: iob2\n"
    )
    assert_one_line_error(
        invoke(["train", str(pos), "-o", str(tmp_path / "r")]),
        "ewt_sample.dev.conllu:5: tag 'ADP' is not a span tag",
    )


def test_bad_options(invoke, sample_model):
    assert_one_line_error(
        invoke(["predict", "-m", str(sample_model), "--batch-size", "0"]), "--batch-size"
    )
    assert_one_line_error(invoke(["predict", "-m", str(sample_model), "--nbest", "x"]), "--nbest")
    # eval without -m uses the bundled en-ner; -m with no value is the mistake.
    assert_one_line_error(invoke(["eval", "data/ner_sample.dev.conll", "-m"]), "-m")
    assert_one_line_error(invoke(["tag"]), "No such command")


def test_a_closed_pipe_ends_quietly(sample_model, tmp_path):
    source = tmp_path / "big.txt"
    source.write_text("John Smith lives in Berlin.\n" * 5000)
    done = subprocess.run(
        f"{sys.executable} -m crftag predict -m {sample_model} --batch-size 16 < {source} "
        "| head -3",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.splitlines() == ["John\tB-PER", "Smith\tI-PER", "lives\tO"]
    assert done.stderr == ""


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.binary(max_size=300)
    | st.lists(
        st.sampled_from(
            [
                "a O",
                "b\tB-X",
                "-DOCSTART- O",
                "",
                "# c",
                "1\tw\tw\tN\t_\t_\t0\t_\t_\t_",
                "3-4\tx\t_\t_\t_\t_\t_\t_\t_\t_",
                "x y z",
                "\ufeffq O",
                "é I-Y\r",
            ]
        ),
        max_size=12,
    ).map(lambda lines: "\n".join(lines).encode("utf-8")),
    format=st.sampled_from(["conll", "conllu"]),
    tagged=st.booleans(),
)
def test_readers_raise_only_user_errors(data, format, tagged):
    spec = ColumnSpec.for_format(format, tag_column=None if not tagged else None)
    if not tagged:
        spec = ColumnSpec(spec.format, spec.word_column, None)
    try:
        sentences = list(read_columns(io.BytesIO(data), "f", spec, keep_raw=True, keep_markup=True))
    except CrftagError as error:
        assert str(error).startswith("f")
        assert "\n" not in str(error)
        return
    for sentence in sentences:
        assert len(sentence.token_rows) == len(sentence.tokens)
        if sentence.tags is not None:
            assert len(sentence.tags) == len(sentence.tokens)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(lines=st.lists(st.text(max_size=40), max_size=8))
def test_predict_gives_one_record_per_line_for_any_text(invoke, sample_model, lines):
    # Lines as a file would hold them: no line breaks inside a line.
    lines = [line.replace("\n", " ").replace("\r", " ") for line in lines]
    stdin = "".join(line + "\n" for line in lines).encode("utf-8", "surrogatepass")
    try:
        stdin.decode("utf-8")
    except UnicodeDecodeError:
        return  # lone surrogates are not UTF-8; covered by the error tests
    for input_format in ("text", "tokens"):
        result = invoke(
            [
                "predict",
                "-m",
                str(sample_model),
                "--format",
                "jsonl",
                "--input-format",
                input_format,
            ],
            stdin=stdin,
        )
        assert result.status == 0, result.stderr
        records = [json.loads(record) for record in result.stdout.splitlines()]
        assert len(records) == len(lines)
        if input_format == "tokens":
            for line, record in zip(lines, records, strict=True):
                assert record["tokens"] == line.split()


def test_long_sentences_and_a_1mb_line_are_tagged_whole(invoke, sample_model):
    long_sentence = " ".join(["Anna", "lives", "in", "Oslo", "."] * 1000)  # 5,000 tokens
    # About 1.2 MB in 12,000 tokens of 96 characters: the character encoder reads at most
    # model.max_word_chars of each, so the bytes cost little; the tokens are cut in 12 pieces.
    huge_line = " ".join(["Berlin" * 16] * 12_000)
    huge_word = "x" * 1_000_000  # one 1 MB token
    stdin = f"{long_sentence}\nshort one\n{huge_line}\n{huge_word}\n"
    result = invoke(
        ["predict", "-m", str(sample_model), "--format", "jsonl", "--input-format", "tokens"],
        stdin=stdin,
    )
    assert result.status == 0
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [len(r["tokens"]) for r in records] == [5000, 2, 12_000, 1]
    assert records[2]["tokens"] == huge_line.split()
    assert records[0]["tokens"] == long_sentence.split()
    assert records[3]["tokens"] == [huge_word]
    assert all(len(r["tags"]) == len(r["tokens"]) for r in records)
    assert "tagged in pieces of at most 1000 tokens" in result.stderr
