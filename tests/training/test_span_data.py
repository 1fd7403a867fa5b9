"""Training from span annotations: the sample data converted to span JSONL trains the same model
as the CoNLL files it came from, and a misaligned span stops or is counted as configured."""

import json

import pytest

from crftag.errors import CrftagError

SAMPLE = {"train": "data/ner_sample.train.conll", "dev": "data/ner_sample.dev.conll"}


@pytest.fixture(scope="module")
def sample_jsonl(tmp_path_factory):
    """The sample's train and dev files converted to span JSONL by `crftag convert`."""
    from crftag import cli

    folder = tmp_path_factory.mktemp("jsonl")
    converted = {}
    for name, path in SAMPLE.items():
        converted[name] = str(folder / f"{name}.jsonl")
        assert cli.run(["convert", path, converted[name]]) == 0
    return converted


def test_jsonl_from_conll_trains_the_same_model(tiny_run, train_tiny, sample_jsonl):
    _, from_conll = tiny_run(train__seed=5)
    _, from_jsonl = train_tiny(
        train__seed=5, data__train=sample_jsonl["train"], data__dev=sample_jsonl["dev"]
    )
    assert [e.dev_score for e in from_jsonl] == [e.dev_score for e in from_conll]
    assert [e.loss for e in from_jsonl] == [e.loss for e in from_conll]


def misaligned_file(tmp_path):
    path = tmp_path / "train.jsonl"
    records = [
        {
            "text": "Angela Merkel visited Paris .",
            "spans": [{"start": 2, "end": 13, "label": "PER"}],
        },
        {"text": "John Smith left .", "spans": [{"start": 0, "end": 10, "label": "PER"}]},
    ]
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return str(path)


def test_a_mid_token_span_stops_training_naming_file_line_and_range(invoke, tiny_args, tmp_path):
    path = misaligned_file(tmp_path)
    args = ["train", "configs/sample.yaml", "-o", str(tmp_path / "run"), *tiny_args()]
    result = invoke([*args, "--set", f"data.train={path}", "--set", "data.dev=null"])
    assert result.status == 2
    assert result.stderr.startswith(f"crftag: error: {path}:1: span [2, 13) PER 'gela Merkel'")
    assert len(result.stderr.splitlines()) == 1


def test_with_warn_it_trains_and_reports_the_count(tiny_config, tmp_path, capsys):
    from crftag.training.corpus import read_training_files

    config = tiny_config(data__train=misaligned_file(tmp_path), data__misaligned="warn")
    ((_, sentences),) = read_training_files(config)
    assert [s.tags for s in sentences] == [("O",) * 5, ("B-PER", "I-PER", "O", "O")]
    err = capsys.readouterr().err
    assert "1 span(s) not on token boundaries (data.misaligned: warn" in err
    assert "left out" in err


def test_overlapping_spans_are_a_config_time_error(tiny_config, tmp_path):
    from crftag.training.corpus import read_training_files

    path = tmp_path / "train.jsonl"
    record = {"text": "New York City", "entities": [[0, 8, "LOC"], [4, 13, "LOC"]]}
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(CrftagError, match="overlap|nested"):
        read_training_files(tiny_config(data__train=str(path)))
