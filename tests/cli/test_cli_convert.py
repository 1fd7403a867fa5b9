"""`crftag convert` as users run it: formats from names, stdout streaming, files written whole,
and one-line errors."""

import json
import os

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "annotations")


def test_convert_writes_jsonl_to_stdout_and_iob2_to_a_file(invoke, tmp_path):
    source = tmp_path / "in.conll"
    source.write_text("-DOCSTART- O\n\nUN I-ORG\npraises O\n\n")
    result = invoke(["convert", str(source), "-", "--to", "jsonl"])
    assert result.status == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["spans"] == [{"start": 0, "end": 2, "label": "ORG"}]
    target = tmp_path / "out.conll"
    assert invoke(["convert", str(source), str(target), "--scheme", "bioes"]).status == 0
    assert target.read_text() == "-DOCSTART- O\n\nUN S-ORG\npraises O\n\n"


def test_label_studio_to_brat_and_back_to_conll(invoke, tmp_path):
    folder = tmp_path / "brat"
    result = invoke(["convert", os.path.join(FIXTURES, "label_studio.json"), str(folder) + "/"])
    assert result.status == 0, result.stderr
    assert sorted(os.listdir(folder)) == ["41.ann", "41.txt", "42.ann", "42.txt"]
    result = invoke(["convert", str(folder), "-"])
    assert "Ada B-PER\nLovelace I-PER\n" in result.stdout
    assert "Zürich B-LOC\n" in result.stdout


def test_a_misaligned_span_is_one_line_naming_file_line_and_range(invoke, tmp_path):
    source = tmp_path / "bad.jsonl"
    source.write_text(json.dumps({"text": "Angela Merkel", "spans": [[0, 3, "PER"]]}) + "\n")
    target = tmp_path / "out.conll"
    result = invoke(["convert", str(source), str(target)])
    assert result.status == 2
    assert result.stderr.startswith(f"crftag: error: {source}:1: span [0, 3) PER 'Ang'")
    assert len(result.stderr.splitlines()) == 1
    assert not target.exists()  # written whole or not at all
    assert invoke(["convert", str(source), str(target), "--misaligned", "expand"]).status == 0
    assert target.read_text() == "-DOCSTART- O\n\nAngela B-PER\nMerkel O\n\n"


def test_brat_output_needs_a_folder(invoke):
    result = invoke(["convert", os.path.join(FIXTURES, "spans.jsonl"), "-", "--to", "brat"])
    assert result.status == 2 and "give a folder" in result.stderr
