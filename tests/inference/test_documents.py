"""Whole documents in, one record out per document, its offsets into the document's text."""

import json

import pytest

from crftag.errors import CrftagError

DOCUMENTS = [
    "John Smith lives in Berlin. He works for Siemens in Munich.\n\nMary Jones visited Paris.",
    "",
    "Peter  Brown\tflew to\u00a0London . Zürich was next.",
]


def predict(invoke, model, args, stdin):
    result = invoke(["predict", "-m", str(model), "--input-format", "doc", *args], stdin=stdin)
    assert result.status == 0, result.stderr
    return result


def test_n_jsonl_documents_give_n_records_whose_spans_slice_each_document(invoke, sample_model):
    stdin = "".join(json.dumps({"text": text, "id": n}) + "\n" for n, text in enumerate(DOCUMENTS))
    result = predict(invoke, sample_model, ["--format", "jsonl", "--token-offsets"], stdin)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(records) == len(DOCUMENTS)
    for text, record in zip(DOCUMENTS, records, strict=True):
        for span in record["spans"]:
            assert text[span["start_char"] : span["end_char"]] == span["text"]
            assert span["text"] == " ".join(record["tokens"][span["start"] : span["end"]]) or (
                text[span["start_char"] : span["end_char"]].split()
                == record["tokens"][span["start"] : span["end"]]
            )
        for token, (start, end) in zip(record["tokens"], record["token_offsets"], strict=True):
            assert text[start:end] == token
        covered = [i for s in record["sentences"] for i in range(s["start"], s["end"])]
        assert covered == list(range(len(record["tokens"])))
    assert len(records[0]["sentences"]) == 3  # the paragraph break ends a sentence too
    assert records[1] == {**records[1], "tokens": [], "spans": [], "sentences": []}


def test_a_plain_text_input_is_one_document(invoke, sample_model, tmp_path):
    path = tmp_path / "story.txt"
    path.write_text(DOCUMENTS[0], encoding="utf-8")
    result = invoke(
        [
            "predict",
            "-m",
            str(sample_model),
            "--input-format",
            "doc",
            "--format",
            "jsonl",
            str(path),
        ]
    )
    (record,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(record["sentences"]) == 3
    for sentence in record["sentences"]:
        assert DOCUMENTS[0][sentence["start_char"] : sentence["end_char"]].strip()


def test_spans_output_is_span_jsonl_that_training_reads_back(invoke, sample_model, tmp_path):
    stdin = json.dumps({"text": DOCUMENTS[0], "meta": {"source": "web"}}) + "\n"
    result = predict(invoke, sample_model, ["--format", "spans"], stdin)
    (record,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert record["text"] == DOCUMENTS[0] and record["meta"] == {"source": "web"}
    jsonl = predict(invoke, sample_model, ["--format", "jsonl"], stdin)
    predicted = json.loads(jsonl.stdout)["spans"]
    assert [(s["start"], s["end"], s["label"]) for s in record["spans"]] == [
        (s["start_char"], s["end_char"], s["label"]) for s in predicted
    ]


def test_conll_output_marks_each_document(invoke, sample_model):
    stdin = "".join(json.dumps({"text": text}) + "\n" for text in DOCUMENTS[:2])
    result = predict(invoke, sample_model, ["--format", "conll"], stdin)
    assert result.stdout.count("-DOCSTART-") == 2
    assert result.stdout.startswith("-DOCSTART-\tO\n\nJohn\t")


def test_document_input_cannot_be_sharded(sample_model):
    from crftag.inference.loading import load
    from crftag.inference.streaming import predict_files

    tagger = load(str(sample_model), "cpu")
    with pytest.raises(CrftagError, match="document input"):
        predict_files(
            tagger,
            ["-"],
            input_format="doc",
            output_format="jsonl",
            batch_size=8,
            output=None,
            shard=(0, 2),
        )


def test_a_bad_jsonl_document_is_a_one_line_error_after_the_good_ones(invoke, sample_model):
    stdin = json.dumps({"text": "John Smith left ."}) + "\n{not json\n"
    result = invoke(
        ["predict", "-m", str(sample_model), "--input-format", "doc", "--format", "jsonl"],
        stdin=stdin,
    )
    assert result.status == 2
    assert json.loads(result.stdout)["tokens"] == ["John", "Smith", "left", "."]
    assert result.stderr.startswith("crftag: error: <stdin>:2:")
    assert len(result.stderr.splitlines()) == 1
