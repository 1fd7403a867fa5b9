"""`crftag eval --errors/--confusion/--match/--plot` end to end on the bundled models: error
lines and tables that add up to seqeval's counts, and one-line errors for misuse."""

import json
import sys

import pytest

NER = ["data/ner_sample.dev.conll", "-m", "en-ner"]
POS = ["data/ewt_sample.dev.conllu", "-m", "en-pos"]


def read_lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def assert_one_line_error(result, message: str) -> None:
    assert result.status == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("crftag: error: "), result.stderr
    assert message in lines[0]


def test_errors_and_confusion_add_up_to_seqeval_counts(invoke, tmp_path):
    out = tmp_path / "errors.jsonl"
    result = invoke(["eval", *NER, "--errors", str(out), "--confusion", "--json"])
    assert result.status == 0, result.stderr
    scores = json.loads(result.stdout)
    table = scores["confusion"]
    # seqeval's micro scores give its correct and predicted counts back.
    micro = scores["entities"]["micro"]
    correct = round(micro["recall"] * micro["support"])
    assert table["gold"] == micro["support"] and table["correct"] == correct
    assert table["predicted"] == round(correct / micro["precision"])
    records = read_lines(out)
    kinds = [record["kind"] for record in records]
    assert kinds.count("false_positive") == table["predicted"] - correct > 0
    assert kinds.count("false_negative") == table["gold"] - correct > 0
    assert {record["file"] for record in records} == {"data/ner_sample.dev.conll"}
    for record in records:
        span = record["span"]
        assert " ".join(record["tokens"][span["start"] : span["end"]]) == span["text"]
        if record["kind"] == "false_positive":
            assert 0 < span["confidence"] <= 1
    told = f"wrote {len(kinds) - kinds.count('false_positive')} false negatives"
    assert told in result.stderr and str(out) in result.stderr


def test_confusion_and_match_tables_when_piped(invoke):
    result = invoke(["eval", *NER, "--confusion", "--match", "partial"])
    assert result.status == 0, result.stderr
    lines = result.stdout.splitlines()
    title = "entity type confusion, gold spans (rows) by predicted spans (columns)"
    header = lines.index(f"data/ner_sample.dev.conll: {title}")
    assert lines[header + 1].split() == [
        "gold", "\\", "predicted", "LOC", "MISC", "ORG", "PER", "missed", "boundary", "total",
    ]  # fmt: skip
    rows = {line.split()[0]: line.split()[1:] for line in lines[header + 2 : header + 7]}
    assert list(rows) == ["LOC", "MISC", "ORG", "PER", "spurious"]
    assert sum(int(cells[-1]) for label, cells in rows.items() if label != "spurious") == 408
    assert lines[header + 7].startswith("correct ")
    assert "data/ner_sample.dev.conll: SemEval-2013 partial match" in lines
    assert result.stderr == ""


def test_match_modes_in_json(invoke):
    strict = json.loads(invoke(["eval", *NER, "--match", "strict", "--json"]).stdout)
    loose = json.loads(invoke(["eval", *NER, "--match", "type", "--json"]).stdout)
    assert strict["match"]["mode"] == "strict" and loose["match"]["mode"] == "type"
    micro = strict["entities"]["micro"]
    assert strict["match"]["overall"]["precision"] == pytest.approx(micro["precision"])
    assert strict["match"]["overall"]["recall"] == pytest.approx(micro["recall"])
    assert loose["match"]["overall"]["correct"] >= strict["match"]["overall"]["correct"]
    assert set(strict["match"]["types"]) == {"LOC", "MISC", "ORG", "PER"}


def test_pos_model_gets_tag_confusions_and_token_errors(invoke, tmp_path):
    out = tmp_path / "errors.jsonl"
    result = invoke(["eval", *POS, "--confusion", "--errors", str(out), "--match", "exact"])
    assert result.status == 0, result.stderr
    assert "most frequent tag confusions" in result.stdout
    assert "SemEval" not in result.stdout
    assert "no spans, so no span matching" in result.stderr
    records = read_lines(out)
    assert records and {record["kind"] for record in records} == {"wrong_tag"}
    assert all(record["gold"] != record["predicted"] for record in records)
    scores = json.loads(invoke(["eval", *POS, "--confusion", "--json"]).stdout)
    confusions = scores["confusion"]
    assert confusions["mistagged"] == len(records)
    assert sum(row["count"] for row in confusions["confusions"]) == len(records)
    assert confusions["mistagged"] == round((1 - scores["accuracy"]) * scores["tokens"])


def test_plot_draws_the_reliability_diagram(invoke, tmp_path):
    picture = tmp_path / "reliability.png"
    result = invoke(["eval", *NER, "--calibration", "--plot", str(picture)])
    assert result.status == 0, result.stderr
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "expected calibration error" in result.stdout
    assert f"drew the reliability diagram to {picture}" in result.stderr


def test_plot_without_matplotlib_says_what_to_install(invoke, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    result = invoke(["eval", *NER, "--calibration", "--plot", str(tmp_path / "r.png")])
    assert_one_line_error(result, "pip install 'crftag[plot]'")
    assert "expected calibration error" in result.stdout  # the table in text is still there
    assert not (tmp_path / "r.png").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--plot", "r.png"], "--plot': it draws what --calibration measures"),
        (["data/ner_sample.test.conll", "--calibration", "--plot", "r.png"], "got 2 files"),
        (["--errors", "no/such/folder/e.jsonl"], "no/such/folder/e.jsonl: cannot write it"),
        (["--match", "loose"], "'loose' is not one of 'strict', 'exact', 'partial', 'type'"),
    ],
)
def test_misuse_is_a_one_line_error(invoke, args, message):
    result = invoke(["eval", *NER, *args])
    assert_one_line_error(result, message)
    assert result.stdout == ""


def test_plot_of_a_pos_model_is_a_one_line_error(invoke, tmp_path):
    result = invoke(["eval", *POS, "--calibration", "--plot", str(tmp_path / "r.png")])
    assert_one_line_error(result, "tags no spans, so it has no span confidence to draw")
