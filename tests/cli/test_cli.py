"""The CLI end to end on the bundled sample: train, eval, predict; stdout and stderr apart."""

import json
import os
import subprocess
import sys
from pathlib import Path

from crftag.modelfiles.checkpoint import FORMAT_VERSION, read_checkpoint


def test_train_writes_one_self_contained_checkpoint(sample_model):
    assert sorted(os.listdir(sample_model)) == ["metrics.json", "model.pt"]
    state = read_checkpoint(str(sample_model / "model.pt"))
    assert state["format"] == "crftag" and state["format_version"] == FORMAT_VERSION
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


def test_user_errors_are_one_line_without_traceback(invoke, sample_model, tmp_path):
    ragged = tmp_path / "ragged.conll"
    ragged.write_text("a O\nb O\nc X O\n")
    cases = [
        (["eval", "missing.conll", "-m", str(sample_model)], "missing.conll: no such file"),
        (["eval", str(ragged), "-m", str(sample_model)], f"{ragged}:3: expected 2 columns"),
        (["eval", "data", "-m", str(sample_model)], "data: is a directory, and holds no brat"),
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


def test_train_pos_on_the_ewt_slice_reports_accuracy(invoke, tmp_path, tiny_args):
    args = ["train", "configs/sample_pos.yaml", "-o", str(tmp_path)]
    result = invoke([*args, *tiny_args(train__epochs=1)])
    assert result.status == 0, result.stderr
    state = read_checkpoint(str(tmp_path / "model.pt"))
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


def test_eval_draws_tables_on_a_terminal_and_plain_text_when_piped(
    invoke, sample_model, monkeypatch
):
    import crftag.scoring.tables

    args = ["eval", "data/ner_sample.dev.conll", "-m", str(sample_model), "--calibration"]
    piped = invoke(args)
    assert piped.status == 0, piped.stderr
    assert "type         precision    recall        f1   support" in piped.stdout.splitlines()
    assert "\u2502" not in piped.stdout
    monkeypatch.setattr(crftag.scoring.tables, "is_terminal", lambda stream: True)
    drawn = invoke(args)
    assert drawn.status == 0, drawn.stderr
    assert "\u2502" in drawn.stdout and "type         precision" not in drawn.stdout
    assert "data/ner_sample.dev.conll: 200 sentences, 2169 tokens; token accuracy" in drawn.stdout
    assert "expected calibration error" in drawn.stdout and "[0.9, 1.0)" in drawn.stdout
    overall = next(line for line in piped.stdout.splitlines() if line.startswith("overall"))
    assert all(figure in drawn.stdout for figure in overall.split()[1:])
