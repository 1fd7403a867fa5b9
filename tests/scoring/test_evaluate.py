"""Scoring on hand-computed cases: score_sentences with a stand-in tagger, the headline figure,
unseen labels, and the tables people read; and `crftag eval --calibration` end to end."""

import json

import pytest

from crftag import Prediction
from crftag.data.conll import Sentence, document_keys
from crftag.scoring.evaluate import (
    format_calibration,
    format_scores,
    headline,
    score,
    score_sentences,
    score_tables,
    unseen_labels,
)

# Gold entities PER(0,1), PER(2,4), LOC(0,1); predicted PER(0,1), PER(2,3), ORG(0,1): one of
# three right, so P = R = F1 = 1/3. Tokens right: 3 of 4 and 2 of 3, so accuracy 5/7.
SENTENCES = [
    Sentence(("Anna", "met", "Boris", "Ivanov"), ("B-PER", "O", "B-PER", "I-PER"), 3, document=1),
    Sentence(("Oslo", "is", "cold"), ("B-LOC", "O", "O"), 8, document=1),
]
PREDICTED = [["B-PER", "O", "B-PER", "O"], ["B-ORG", "O", "O"]]
CONFIDENCES = [[0.95, 0.45], [0.55]]  # of PER(0,1), PER(2,3); ORG(0,1)


class StandInTagger:
    """Tags with fixed answers, and records how it was asked."""

    def __init__(self, tags_are_spans=True, tag_symbols=("O", "B-PER", "I-PER")):
        self.tags_are_spans = tags_are_spans
        self.tag_symbols = list(tag_symbols)
        self.calls = []

    def tag(self, sentences, batch_size=64, documents=None):
        self.calls.append(("tag", [list(s) for s in sentences], batch_size, documents))
        return [list(tags) for tags in PREDICTED]

    def predict(self, sentences, *, batch_size=64, documents=None):
        self.calls.append(("predict", [list(s) for s in sentences], batch_size, documents))
        spans = [[(0, 1, "PER"), (2, 3, "PER")], [(0, 1, "ORG")]]
        return [
            Prediction(
                tokens=list(tokens),
                tags=list(tags),
                spans=[
                    {"start": s, "end": e, "label": label, "confidence": c}
                    for (s, e, label), c in zip(row, confidences, strict=True)
                ],
            )
            for tokens, tags, row, confidences in zip(
                sentences, PREDICTED, spans, CONFIDENCES, strict=True
            )
        ]


def test_score_sentences_tags_by_document_and_scores_by_hand():
    tagger = StandInTagger()
    scores = score_sentences(tagger, SENTENCES, batch_size=7)
    assert tagger.calls == [
        ("tag", [list(s.tokens) for s in SENTENCES], 7, document_keys(SENTENCES))
    ]
    assert document_keys(SENTENCES)[0] == document_keys(SENTENCES)[1]  # one document
    assert scores["sentences"] == 2 and scores["tokens"] == 7
    assert scores["accuracy"] == pytest.approx(5 / 7)
    micro = scores["entities"]["micro"]
    assert (micro["precision"], micro["recall"], micro["f1"]) == pytest.approx((1 / 3,) * 3)
    assert scores["entities"]["PER"]["f1"] == pytest.approx(0.5)
    assert scores["entities"]["LOC"]["support"] == 1
    assert "calibration" not in scores
    assert scores == score([s.tags for s in SENTENCES], PREDICTED, tags_are_spans=True)
    assert headline(scores) == pytest.approx(1 / 3)


def test_score_sentences_with_calibration_judges_each_span():
    tagger = StandInTagger()
    scores = score_sentences(tagger, SENTENCES, with_calibration=True)
    assert [call[0] for call in tagger.calls] == ["predict"]
    result = scores["calibration"]
    assert result["spans"] == 3
    # Bins [0.4, 0.5), [0.5, 0.6) and [0.9, 1.0) hold one span each, wrong, wrong and right.
    assert result["ece"] == pytest.approx((0.45 + 0.55 + 0.05) / 3)
    kept = {row["threshold"]: row for row in result["thresholds"]}
    assert (kept[0.5]["spans"], kept[0.5]["precision"], kept[0.5]["recall"]) == pytest.approx(
        (2, 1 / 2, 1 / 3)
    )
    assert (kept[0.9]["spans"], kept[0.9]["precision"]) == (1, 1.0)


def test_one_label_a_token_scores_accuracy_only_and_has_no_calibration():
    tagger = StandInTagger(tags_are_spans=False)
    scores = score_sentences(tagger, SENTENCES, with_calibration=True)
    assert [call[0] for call in tagger.calls] == ["tag"]
    assert set(scores) == {"sentences", "tokens", "accuracy"}
    assert scores["accuracy"] == pytest.approx(5 / 7)
    assert headline(scores) == pytest.approx(5 / 7)


def test_unseen_labels_are_entity_labels_for_spans_and_tags_otherwise():
    spans = StandInTagger(tag_symbols=["O", "B-PER", "I-PER", "E-PER", "S-PER"])
    assert unseen_labels(spans, SENTENCES) == ["LOC"]
    assert unseen_labels(spans, SENTENCES[:1]) == []
    tokens = StandInTagger(tags_are_spans=False, tag_symbols=["O", "B-PER", "NOUN"])
    assert unseen_labels(tokens, SENTENCES) == ["B-LOC", "I-PER"]


def test_plain_tables_keep_their_fixed_width_layout():
    scores = score_sentences(StandInTagger(), SENTENCES, with_calibration=True)
    assert format_scores("f", scores) == (
        "f: 2 sentences, 7 tokens\n"
        "token accuracy   71.43\n"
        "type         precision    recall        f1   support\n"
        "LOC               0.00      0.00      0.00         1\n"
        "ORG               0.00      0.00      0.00         0\n"
        "PER              50.00     50.00     50.00         2\n"
        "overall          33.33     33.33     33.33         3\n"
        "macro avg        16.67     16.67     16.67         3"
    )
    lines = format_calibration(scores["calibration"]).splitlines()
    assert lines[0] == "span confidence calibration (3 predicted spans)"
    assert lines[1] == "confidence       spans  mean conf  precision"
    assert lines[2] == "[0.0, 0.1)           0          -          -"
    assert lines[6] == "[0.4, 0.5)           1      45.00       0.00"
    assert lines[12] == "expected calibration error  35.00"
    assert lines[13] == "min confidence     spans  precision   recall"
    assert lines[15] == "0.50                   2      50.00    33.33"


def test_terminal_tables_carry_the_same_figures():
    scores = score_sentences(StandInTagger(), SENTENCES, with_calibration=True)
    tables = score_tables("f", scores)
    (title, headers, rows), (bins_title, _, bins), (_, _, thresholds) = tables
    assert title == "f: 2 sentences, 7 tokens; token accuracy 71.43"
    assert headers == ["type", "precision", "recall", "f1", "support"]
    assert rows[-2] == ["overall", "33.33", "33.33", "33.33", "3"]
    assert bins_title.endswith("expected calibration error 35.00")
    assert bins[9] == ["[0.9, 1.0)", "1", "95.00", "100.00"]
    assert thresholds[1] == ["0.50", "2", "50.00", "33.33"]
    plain = score_sentences(StandInTagger(tags_are_spans=False), SENTENCES)
    assert score_tables("f", plain) == [
        ("f: 2 sentences, 7 tokens", ["token accuracy"], [["71.43"]])
    ]


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


def test_labels_unseen_in_training_are_errors_not_crashes(tmp_path, sample_model, invoke):
    gold = tmp_path / "gold.conll"
    gold.write_text("Anna B-PER\nsings O\nin O\nBaku B-GPE\n\nBob B-PER\n")
    result = invoke(["eval", str(gold), "-m", str(sample_model), "--json"])
    assert result.status == 0
    assert result.stderr.count("labels never seen in training") == 1
    assert "GPE" in result.stderr
    scores = json.loads(result.stdout)
    assert scores["entities"]["GPE"]["recall"] == 0.0
