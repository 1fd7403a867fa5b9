"""The CLI end to end on the bundled sample: train, eval, predict; stdout and stderr apart."""

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

from crftag.data.tokenize import tokenize


def test_train_writes_one_self_contained_checkpoint(sample_model):
    assert sorted(os.listdir(sample_model)) == ["metrics.json", "model.pt"]
    state = torch.load(sample_model / "model.pt", weights_only=True)
    assert state["format"] == "crftag" and state["format_version"] == 1
    assert state["train_scheme"] == "bioes" and state["data_scheme"] == "iob2"
    assert "S-PER" in state["vocabularies"]["tags"]["symbols"]
    assert state["config"]["model"]["hidden_size"] == 32
    metrics = json.loads((sample_model / "metrics.json").read_text())
    assert metrics["epochs"] == 3 and 0 <= metrics["test"] <= 1


def test_eval_prints_entity_scores(invoke, sample_model):
    result = invoke(["eval", "data/ner_sample.dev.conll", "-m", str(sample_model)])
    assert result.status == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "data/ner_sample.dev.conll: 200 sentences, 2169 tokens"
    assert any(line.startswith("overall") for line in lines)
    assert {line.split()[0] for line in lines[3:7]} == {"LOC", "MISC", "ORG", "PER"}


def test_eval_json_accepts_the_model_file_and_several_files(invoke, sample_model):
    model = str(sample_model / "model.pt")
    files = ["data/ner_sample.dev.conll", "data/ner_sample.test.conll"]
    result = invoke(["eval", *files, "-m", model, "--json"])
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["file"] for r in records] == files
    micro = records[0]["entities"]["micro"]
    # The F1 in the JSON is the harmonic mean of its own precision and recall.
    p, r = micro["precision"], micro["recall"]
    assert abs(micro["f1"] - (2 * p * r / (p + r) if p + r else 0.0)) < 1e-9


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


def test_user_errors_are_one_line_without_traceback(invoke, sample_model, tmp_path):
    ragged = tmp_path / "ragged.conll"
    ragged.write_text("a O\nb O\nc X O\n")
    cases = [
        (["eval", "missing.conll", "-m", str(sample_model)], "missing.conll: no such file"),
        (["eval", str(ragged), "-m", str(sample_model)], f"{ragged}:3: expected 2 columns"),
        (["eval", "data", "-m", str(sample_model)], "data: is a directory"),
        (["predict", "-m", str(tmp_path)], "no model.pt in this directory"),
        (["train", "no.yaml"], "no.yaml: no such file"),
        (["predict", "--format", "xml", "-m", str(sample_model)], "'--format'"),
        (["train", "configs/sample.yaml", "--set", "train.lrr=1"], "did you mean 'train.lr'"),
    ]
    for args, message in cases:
        result = invoke(args)
        assert result.status == 2, (args, result.stderr)
        assert result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("crftag: error: "), result.stderr
        assert message in lines[0]


def test_train_pos_on_the_ewt_slice_reports_accuracy(invoke, tmp_path):
    result = invoke(
        [
            "train",
            "configs/sample_pos.yaml",
            "-o",
            str(tmp_path),
            "--set",
            "train.epochs=1",
            "--set",
            "model.hidden_size=16",
            "--quiet",
            "--device",
            "cpu",
        ]
    )
    assert result.status == 0, result.stderr
    state = torch.load(tmp_path / "model.pt", weights_only=True)
    assert state["train_scheme"] == "none" and "PROPN" in state["vocabularies"]["tags"]["symbols"]
    scores = invoke(["eval", "data/ewt_sample.dev.conllu", "-m", str(tmp_path), "--json"])
    record = json.loads(scores.stdout)
    assert "entities" not in record and 0 < record["accuracy"] <= 1


def test_console_script_and_module_entry_point(sample_model):
    for command in (["crftag"], [sys.executable, "-m", "crftag"]):
        if command == ["crftag"]:
            command = [os.path.join(os.path.dirname(sys.executable), "crftag")]
        help_text = subprocess.run(
            [*command, "--help"], capture_output=True, text=True, check=True
        ).stdout
        for name in ("train", "eval", "predict"):
            assert name in help_text
    done = subprocess.run(
        [sys.executable, "-m", "crftag", "predict", "-m", str(sample_model)],
        input="Anna lives in Oslo.\n",
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert [line.split("\t")[0] for line in done.stdout.splitlines() if line] == [
        "Anna",
        "lives",
        "in",
        "Oslo",
        ".",
    ]


def test_jsonl_carries_confidence_probability_and_nbest(invoke, sample_model):
    text = "John Smith lives in Berlin.\nShares in Siemens rose in Tokyo.\n\nAnna\n"
    result = invoke(
        ["predict", "-m", str(sample_model), "--format", "jsonl", "--nbest", "3", "--probs"],
        stdin=text,
    )
    assert result.status == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(records) == 4
    for record in records:
        assert 0.0 <= record["probability"] <= 1.0
        for span in record["spans"]:
            assert 0.0 <= span["confidence"] <= 1.0
        assert len(record["probs"]) == len(record["tokens"])
        if record["tokens"]:
            paths = record["nbest"]
            assert len(paths) == 3
            assert len({tuple(p["tags"]) for p in paths}) == 3
            assert paths[0]["score"] >= paths[1]["score"] >= paths[2]["score"]
            assert paths[0]["tags"] == record["tags"]
            assert abs(paths[0]["probability"] - record["probability"]) < 1e-6


def test_probs_all_are_distributions_and_min_confidence_drops_spans(invoke, sample_model):
    text = "Greta Holloway met Boris in Tbilisi.\n"
    full = invoke(
        ["predict", "-m", str(sample_model), "--format", "jsonl", "--probs", "all"], stdin=text
    )
    record = json.loads(full.stdout)
    for distribution, tag, p in zip(
        record["marginals"], record["tags"], record["probs"], strict=True
    ):
        assert abs(sum(distribution.values()) - 1.0) < 1e-4
        assert distribution[tag] == p
    threshold = 1.0 - 1e-12
    strict = invoke(
        [
            "predict",
            "-m",
            str(sample_model),
            "--format",
            "jsonl",
            "--min-confidence",
            str(threshold),
        ],
        stdin=text,
    )
    kept = json.loads(strict.stdout)
    assert all(span["confidence"] >= threshold for span in kept["spans"])
    covered = {i for span in kept["spans"] for i in range(span["start"], span["end"])}
    assert all(tag == "O" for i, tag in enumerate(kept["tags"]) if i not in covered)


def test_eval_calibration_prints_table_and_ece(invoke, sample_model):
    result = invoke(["eval", "data/ner_sample.dev.conll", "-m", str(sample_model), "--calibration"])
    assert result.status == 0, result.stderr
    assert "expected calibration error" in result.stdout
    as_json = invoke(
        ["eval", "data/ner_sample.dev.conll", "-m", str(sample_model), "--calibration", "--json"]
    )
    calibration = json.loads(as_json.stdout)["calibration"]
    assert sum(row["spans"] for row in calibration["bins"]) == calibration["spans"]
    assert 0.0 <= calibration["ece"] <= 1.0
    # With no threshold every predicted span is kept: the figures are eval's own micro P/R.
    micro = json.loads(as_json.stdout)["entities"]["micro"]
    assert abs(calibration["thresholds"][0]["precision"] - micro["precision"]) < 1e-9
    assert abs(calibration["thresholds"][0]["recall"] - micro["recall"]) < 1e-9


def test_constrained_decoding_never_outputs_a_malformed_span(sample_model):
    from crftag import Tagger
    from crftag.data.conll import ColumnSpec, read_columns
    from crftag.data.schemes import convert

    tagger = Tagger.load(str(sample_model))
    with open("data/ner_sample.test.conll", "rb") as stream:
        sentences = [s.tokens for s in read_columns(stream, "test", ColumnSpec())]
    symbols = tagger.tag_symbols
    for indices, batch in tagger._batches(sentences, 64):
        tags, _ = tagger.model.decode(batch)
        for index, row in zip(indices, tags.tolist(), strict=True):
            internal = [symbols[t] for t in row[: len(sentences[index])]]
            assert convert(internal, "bioes") == internal  # well-formed BIOES


def test_readme_python_example_runs(sample_model, tmp_path, monkeypatch, capsys):
    readme = Path("README.md").read_text(encoding="utf-8")
    section = readme.split("## Python API", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "sample").symlink_to(sample_model)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("['John', 'Smith', 'lives', 'in', 'Berlin', '.']")
    assert printed[-1].startswith("  ") or printed[-1].startswith("['Anna'")
