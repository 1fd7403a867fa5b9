"""A record's own copies of its text (a span's ``text``, a token's ``text``, Prodigy's token
numbers) are checked against the offsets, as brat's are: a mismatch names file and line, and
nothing is converted."""

import json

import pytest

GOOD = {"text": "UN praises", "spans": [[0, 2, "ORG"]]}


def _convert(invoke, tmp_path, record, name="in.jsonl"):
    source = tmp_path / name
    source.write_text(json.dumps(GOOD) + "\n" + json.dumps(record) + "\n")
    target = tmp_path / "out.conll"
    result = invoke(["convert", str(source), str(target)])
    return result, source, target


@pytest.mark.parametrize(
    "span",
    [
        {"start": 0, "end": 13, "label": "PER", "text": "Barack Obama"},  # the case
        {"start": 0, "end": 12, "label": "PER", "text": "Barack Obam"},
        {"start": 7, "end": 12, "label": "PER", "text": "Barack"},
        {"start": 0, "end": 6, "label": "PER", "text": 6},
        {"start_offset": 0, "end_offset": 6, "label": "PER", "text": "barack"},  # doccano
    ],
)
def test_a_span_whose_text_is_not_the_text_at_its_offsets_is_refused(invoke, tmp_path, span):
    record = {"text": "Barack Obama .", "spans": [span]}
    result, source, target = _convert(invoke, tmp_path, record)
    assert result.status == 2
    assert result.stderr.startswith(f"crftag: error: {source}:2: span [")
    assert len(result.stderr.splitlines()) == 1
    assert not target.exists()


def test_a_span_whose_text_matches_converts(invoke, tmp_path):
    span = {"start": 0, "end": 12, "label": "PER", "text": "Barack Obama"}
    result, _, target = _convert(invoke, tmp_path, {"text": "Barack Obama .", "spans": [span]})
    assert result.status == 0, result.stderr
    assert "Barack B-PER\nObama I-PER\n" in target.read_text()


TOKENS = [{"text": "Barack", "start": 0, "end": 6}, {"text": "Obama", "start": 7, "end": 12}]


@pytest.mark.parametrize(
    "tokens, problem",
    [
        ([{**TOKENS[0], "text": "Barak"}, TOKENS[1]], "token 0: the text 'Barak' is not"),
        ([{**TOKENS[0], "end": 60}, TOKENS[1]], "token 0 [0, 60) is not within the text"),
        ([TOKENS[1], TOKENS[0]], "token 1 [0, 6) is not within the text after the token"),
    ],
)
def test_token_offsets_are_checked_against_the_text(invoke, tmp_path, tokens, problem):
    record = {"text": "Barack Obama", "tokens": tokens, "spans": []}
    result, source, target = _convert(invoke, tmp_path, record)
    assert result.status == 2
    assert result.stderr.startswith(f"crftag: error: {source}:2: {problem}")
    assert not target.exists()


@pytest.mark.parametrize(
    "first, last, problem",
    [(0, 0, "is not tokens 0 to 0"), (0, 5, "is not tokens 0 to 5"), ("0", 1, "token numbers")],
)
def test_prodigy_token_numbers_must_name_the_spans_tokens(invoke, tmp_path, first, last, problem):
    span = {"start": 0, "end": 12, "label": "PER", "token_start": first, "token_end": last}
    record = {"text": "Barack Obama", "tokens": TOKENS, "spans": [span]}
    result, source, _ = _convert(invoke, tmp_path, record)
    assert result.status == 2
    assert result.stderr.startswith(f"crftag: error: {source}:2: span [0, 12)")
    assert problem in result.stderr


def test_label_studio_value_text_is_checked(invoke, tmp_path):
    value = {"start": 0, "end": 3, "text": "Adx", "labels": ["PER"]}
    task = {"id": 7, "data": {"text": "Ada"}, "annotations": [{"result": [_labels(value)]}]}
    source = tmp_path / "ls.json"
    source.write_text("[\n" + json.dumps(task) + "\n]\n")
    result = invoke(["convert", str(source), "-"])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr == (
        f"crftag: error: {source}:2: span [0, 3): the text 'Adx' is not the text's [0, 3) 'Ada'\n"
    )


def _labels(value):
    return {"type": "labels", "from_name": "label", "to_name": "text", "value": value}


def test_training_refuses_a_mismatched_span_text(invoke, tiny_args, tmp_path):
    source = tmp_path / "train.jsonl"
    span = {"start": 0, "end": 12, "label": "PER", "text": "Barack Obam"}
    source.write_text(json.dumps({"text": "Barack Obama .", "spans": [span]}) + "\n")
    args = ["train", "configs/sample.yaml", "-o", str(tmp_path / "run"), *tiny_args()]
    result = invoke([*args, "--set", f"data.train={source}", "--set", "data.dev=null"])
    assert result.status == 2
    assert result.stderr.startswith(f"crftag: error: {source}:1: span [0, 12): the text ")
