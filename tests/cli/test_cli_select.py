"""`crftag select` as users run it: every strategy on text, tokens, column and document input,
with the bundled NumPy model and a torch checkpoint; records that annotation tools import and
that read back as training data; --exclude; one-line errors with nothing written."""

import json
import os

import pytest

from crftag.data.labelled import read_labelled
from crftag.inference.selection import STRATEGIES, unit_key

SENTENCES = "data/sentences.txt"
CONLL = "data/ner_sample.dev.conll"


def records_of(path):
    with open(path, encoding="utf-8") as stream:
        return [json.loads(line) for line in stream]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_writes_ranked_records_with_offsets(invoke, tmp_path, strategy):
    target = tmp_path / "out.jsonl"
    args = ["select", SENTENCES, "-n", "3", "-o", str(target), "--strategy", strategy]
    result = invoke([*args, "-m", "en-ner"])
    assert result.status == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith(f"crftag: selected 3 of 4 sentences ({strategy})")
    records = records_of(target)
    assert [r["meta"]["rank"] for r in records] == [1, 2, 3]
    scores = [r["meta"]["score"] for r in records]
    assert scores == sorted(scores, reverse=True)
    with open(SENTENCES, encoding="utf-8") as stream:
        lines = stream.read().splitlines()
    for record in records:
        assert record["text"] in lines
        assert record["id"] == unit_key(record["tokens"])
        assert record["data"] == {"text": record["text"]}
        results = record["predictions"][0]["result"]
        assert len(results) == len(record["label"]) == len(record["meta"]["confidence"])
        for (start, end, label), result_ in zip(record["label"], results, strict=True):
            assert result_["value"] == {
                "start": start,
                "end": end,
                "text": record["text"][start:end],
                "labels": [label],
            }
            assert 0.0 < result_["score"] <= 1.0


def test_select_keeps_the_n_best_of_all_the_sentences(invoke, tmp_path):
    everything, best = tmp_path / "all.jsonl", tmp_path / "best.jsonl"
    base = ["select", SENTENCES, "-m", "en-ner", "--strategy", "entropy"]
    assert invoke([*base, "-n", "100", "-o", str(everything)]).status == 0
    assert invoke([*base, "-n", "2", "-o", str(best)]).status == 0
    assert [r["id"] for r in records_of(best)] == [r["id"] for r in records_of(everything)][:2]
    assert len(records_of(everything)) == 4  # the empty line is no sentence


def test_torch_checkpoint_and_its_numpy_export_select_alike(invoke, tmp_path, sample_model):
    exported = tmp_path / "model.npz"
    assert invoke(["export", str(sample_model), str(exported), "--format", "numpy"]).status == 0
    for strategy in ("least-confidence", "margin", "entropy", "span"):
        chosen = {}
        for name, model in (("torch", str(sample_model)), ("numpy", str(exported))):
            target = tmp_path / f"{name}.jsonl"
            args = ["select", CONLL, "--input-format", "conll", "-n", "10", "-m", model]
            result = invoke([*args, "-o", str(target), "--strategy", strategy])
            assert result.status == 0, result.stderr
            chosen[name] = records_of(target)
        assert [r["id"] for r in chosen["torch"]] == [r["id"] for r in chosen["numpy"]]
        for a, b in zip(chosen["torch"], chosen["numpy"], strict=True):
            assert a["meta"]["score"] == pytest.approx(b["meta"]["score"], rel=1e-3, abs=1e-6)


def test_tokens_and_column_input_give_one_id_per_sentence(invoke, tmp_path):
    sentences = read_labelled(CONLL)
    tokens_file = tmp_path / "tokens.txt"
    tokens_file.write_text("".join(" ".join(s.tokens) + "\n" for s in sentences))
    chosen = {}
    for name, path, kind in (("conll", CONLL, "conll"), ("tokens", str(tokens_file), "tokens")):
        target = tmp_path / f"{name}.jsonl"
        args = ["select", path, "--input-format", kind, "-n", "5", "-o", str(target)]
        assert invoke([*args, "-m", "en-ner", "--strategy", "margin"]).status == 0
        chosen[name] = records_of(target)
    assert [r["id"] for r in chosen["conll"]] == [r["id"] for r in chosen["tokens"]]
    assert chosen["conll"][0]["meta"]["source"].startswith(f"{CONLL}:")
    assert chosen["tokens"][0]["meta"]["source"].startswith(f"{tokens_file}:")


def test_whole_documents_are_selected_with_offsets_into_their_text(invoke, tmp_path):
    documents = tmp_path / "docs.jsonl"
    texts = [
        "Angela Merkel met Emmanuel Macron in Paris. They spoke about Siemens.",
        "The weather was fine.",
        "Reuters reported that Toyota sold cars in Brazil. Sales rose.",
    ]
    documents.write_text("".join(json.dumps({"text": text}) + "\n" for text in texts))
    target = tmp_path / "out.jsonl"
    args = ["select", str(documents), "--input-format", "doc", "-n", "2", "-o", str(target)]
    result = invoke([*args, "-m", "en-ner", "--strategy", "margin"])
    assert result.status == 0, result.stderr
    assert "of 3 documents" in result.stderr
    records = records_of(target)
    assert len(records) == 2 and all(r["text"] in texts for r in records)
    assert any(r["label"] for r in records)
    for record in records:
        assert "tokens" not in record  # read back, the text is split as it was
        results = record["predictions"][0]["result"]
        for (start, end, _), result_ in zip(record["label"], results, strict=True):
            assert record["text"][start:end] == result_["value"]["text"] != ""
        assert record["meta"]["source"].startswith(f"{documents}:")


def test_exclude_skips_documents_selected_before(invoke, tmp_path):
    documents = tmp_path / "docs.jsonl"
    texts = [f"Report {i}: Toyota sold cars in Brazil. Sales rose {i} percent." for i in range(6)]
    documents.write_text("".join(json.dumps({"text": text}) + "\n" for text in texts))
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    base = ["select", str(documents), "--input-format", "doc", "-m", "en-ner", "-n", "3"]
    assert invoke([*base, "-o", str(first)]).status == 0
    result = invoke([*base, "-o", str(second), "--exclude", str(first)])
    assert result.status == 0, result.stderr
    assert "of 3 documents" in result.stderr
    assert not {r["text"] for r in records_of(first)} & {r["text"] for r in records_of(second)}


def test_exclude_skips_what_was_selected_or_annotated_before(invoke, tmp_path):
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    base = ["select", CONLL, "--input-format", "conll", "-m", "en-ner", "-n", "4"]
    assert invoke([*base, "-o", str(first)]).status == 0
    result = invoke([*base, "-o", str(second), "--exclude", str(first)])
    assert result.status == 0, result.stderr
    assert not {r["id"] for r in records_of(first)} & {r["id"] for r in records_of(second)}
    total = len(read_labelled(CONLL))
    assert f"of {total - 4} sentences" in result.stderr
    converted = tmp_path / "first.conll"
    assert invoke(["convert", str(first), str(converted)]).status == 0
    result = invoke([*base, "-o", str(second), "--exclude", str(converted)])
    assert not {r["id"] for r in records_of(first)} & {r["id"] for r in records_of(second)}


def test_records_read_back_and_convert_to_conll_and_brat(invoke, tmp_path):
    target = tmp_path / "out.jsonl"
    assert invoke(["select", SENTENCES, "-m", "en-ner", "-n", "5", "-o", str(target)]).status == 0
    records = records_of(target)
    sentences = read_labelled(str(target))
    assert [list(s.tokens) for s in sentences] == [r["tokens"] for r in records]
    for record, sentence in zip(records, sentences, strict=True):
        assert sum(tag.startswith("B-") for tag in sentence.tags) == len(record["label"])
    assert invoke(["convert", str(target), str(tmp_path / "out.conll")]).status == 0
    converted = read_labelled(str(tmp_path / "out.conll"))
    assert [(s.tokens, s.tags) for s in converted] == [(s.tokens, s.tags) for s in sentences]
    assert invoke(["convert", str(target), str(tmp_path / "brat") + "/"]).status == 0
    assert sorted(os.listdir(tmp_path / "brat"))[:2] == sorted(
        f"{name}.{ext}" for name in [min(r["id"] for r in records)] for ext in ("ann", "txt")
    )


def test_a_label_studio_export_of_the_records_reads_back_with_undecided_tokens(tmp_path):
    """An annotator accepts the predictions and marks one region ``?`` (left undecided): the
    export reads back with those tokens unknown, as partial labels."""
    text = "John Smith lives in Berlin"
    predictions = [
        {"value": {"start": 0, "end": 10, "labels": ["PER"]}, "type": "labels"},
        {"value": {"start": 11, "end": 19, "labels": ["?"]}, "type": "labels"},
        {"value": {"start": 20, "end": 26, "labels": ["LOC"]}, "type": "labels"},
    ]
    export = tmp_path / "export.json"
    export.write_text(json.dumps([{"id": 7, "data": {"text": text}, "annotations": [
        {"result": predictions}
    ]}]))  # fmt: skip
    [sentence] = read_labelled(str(export))
    assert sentence.tags == ("B-PER", "I-PER", "?", "?", "B-LOC")


def test_json_output_is_one_array_and_stdout_takes_the_records(invoke, tmp_path):
    target = tmp_path / "tasks.json"
    assert invoke(["select", SENTENCES, "-m", "en-ner", "-n", "2", "-o", str(target)]).status == 0
    tasks = json.loads(target.read_text())
    assert len(tasks) == 2 and all("predictions" in task for task in tasks)
    result = invoke(["select", "-", "-m", "en-ner", "-n", "1", "-o", "-", "-q"], stdin="Hi Bob.\n")
    assert result.status == 0
    assert json.loads(result.stdout)["text"] == "Hi Bob."


def test_bad_input_is_one_line_and_nothing_is_written(invoke, tmp_path):
    target = tmp_path / "out.jsonl"
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"Fine line.\n\xff\xfe broken\n")
    result = invoke(["select", str(bad), "-m", "en-ner", "-n", "1", "-o", str(target)])
    assert result.status == 2
    assert result.stderr.startswith(f"crftag: error: {bad}:2:")
    assert len(result.stderr.splitlines()) == 1
    assert not target.exists()
    missing = tmp_path / "missing.txt"
    result = invoke(["select", str(missing), "-m", "en-ner", "-n", "1", "-o", str(target)])
    assert result.status == 2 and result.stderr.startswith("crftag: error:")
    assert not target.exists()
    result = invoke(["select", SENTENCES, "-n", "0", "-o", str(target)])
    assert result.status == 2 and not target.exists()


def test_conllu_input_with_a_part_of_speech_model(invoke, tmp_path):
    target = tmp_path / "out.jsonl"
    args = ["select", "data/ewt_sample.dev.conllu", "--input-format", "conllu", "-n", "3"]
    result = invoke([*args, "-m", "en-pos", "--strategy", "entropy", "-o", str(target)])
    assert result.status == 0, result.stderr
    records = records_of(target)
    assert len(records) == 3 and all(r["label"] == [] for r in records)  # tags, not spans
    assert all(r["meta"]["score"] > 0 for r in records)
    assert records[0]["meta"]["source"].startswith("data/ewt_sample.dev.conllu:")
