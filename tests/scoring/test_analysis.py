"""Error analysis: the SemEval-2013 modes equal nervaluate's, the confusion table adds up to
seqeval's counts, and each error record says what went wrong, on a fixture with every kind of
error (hand-counted) and on random tags."""

import pathlib
import random
from collections import Counter

import pytest
from nervaluate import Evaluator
from seqeval.metrics.sequence_labeling import get_entities

from crftag.data.conll import Sentence
from crftag.data.schemes import Span, convert
from crftag.scoring.analysis import (
    MATCH_MODES,
    confusion,
    error_records,
    pair_spans,
    semeval,
    sentence_spans,
    tag_confusions,
)
from crftag.scoring.evaluate import Tagged

FIXTURE = pathlib.Path(__file__).parents[1] / "fixtures" / "analysis" / "errors.conll"
NERVALUATE_MODES = {"strict": "strict", "exact": "exact", "partial": "partial", "type": "ent_type"}
COUNTS = ("correct", "incorrect", "partial", "missed", "spurious")


def read_fixture() -> tuple[list[Sentence], list[list[str]]]:
    """Sentences with their gold tags, and the predicted tags: `token gold predicted` lines."""
    blocks = FIXTURE.read_text(encoding="utf-8").split("\n\n")
    sentences, predicted = [], []
    for block in blocks:
        rows = [line.split() for line in block.splitlines() if not line.startswith("#")]
        tokens, gold, tags = zip(*rows, strict=True)
        sentences.append(Sentence(tokens, gold, line=1 + len(sentences)))
        predicted.append(list(tags))
    return sentences, predicted


def random_tags(generator: random.Random, length: int) -> list[str]:
    """Any sequence of B-/I- tags over two types and O, malformed ones too."""
    return [generator.choice(["O", "O", "B-A", "I-A", "B-B", "I-B"]) for _ in range(length)]


def random_corpus(seed: int) -> tuple[list[list[str]], list[list[str]]]:
    generator = random.Random(seed)
    lengths = [generator.randint(0, 12) for _ in range(300)]
    return (
        [random_tags(generator, n) for n in lengths],
        [random_tags(generator, n) for n in lengths],
    )


def nervaluate_results(gold, predicted) -> dict:
    """nervaluate's results over spans read as crftag reads them (its ends are inclusive)."""

    def documents(tag_lists):
        return [
            [{"label": s.label, "start": s.start, "end": s.end - 1} for s in sentence_spans(tags)]
            for tags in tag_lists
        ]

    labels = sorted({s.label for tags in [*gold, *predicted] for s in sentence_spans(tags)})
    return Evaluator(documents(gold), documents(predicted), tags=labels, loader="dict").evaluate()


def assert_equals_nervaluate(ours: dict, theirs) -> None:
    for key in COUNTS:
        assert ours[key] == getattr(theirs, key), key
    for key in ("precision", "recall", "f1"):
        assert ours[key] == pytest.approx(getattr(theirs, key)), key


@pytest.mark.parametrize("mode", MATCH_MODES)
def test_semeval_modes_equal_nervaluate_on_the_fixture(mode):
    sentences, predicted = read_fixture()
    gold = [s.tags for s in sentences]
    ours = semeval(gold, predicted, mode)
    theirs = nervaluate_results(gold, predicted)
    assert_equals_nervaluate(ours["overall"], theirs["overall"][NERVALUATE_MODES[mode]])
    assert set(ours["types"]) == set(theirs["entities"]) == {"LOC", "MISC", "ORG", "PER"}
    for label, counts in ours["types"].items():
        assert_equals_nervaluate(counts, theirs["entities"][label][NERVALUATE_MODES[mode]])
    # Every outcome of the mode occurs in the fixture.
    outcome = "partial" if mode == "partial" else "incorrect"
    for key in ("correct", "missed", "spurious", outcome):
        assert ours["overall"][key] > 0, key


@pytest.mark.parametrize("seed", range(3))
def test_semeval_modes_equal_nervaluate_on_random_tags(seed):
    gold, predicted = random_corpus(seed)
    theirs = nervaluate_results(gold, predicted)
    for mode in MATCH_MODES:
        ours = semeval(gold, predicted, mode)
        assert_equals_nervaluate(ours["overall"], theirs["overall"][NERVALUATE_MODES[mode]])
        for label, counts in ours["types"].items():
            assert_equals_nervaluate(counts, theirs["entities"][label][NERVALUATE_MODES[mode]])


def test_semeval_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match="expected a match mode strict|exact|partial|type"):
        semeval([["O"]], [["O"]], "loose")


def seqeval_counts(gold, predicted) -> tuple[int, int, int]:
    """(gold, predicted, correct) entity counts, as seqeval reads IOB2 tags."""
    totals = Counter()
    for gold_tags, predicted_tags in zip(gold, predicted, strict=True):
        gold_set = set(get_entities(convert(gold_tags, "iob2")))
        predicted_set = set(get_entities(convert(predicted_tags, "iob2")))
        totals.update(gold=len(gold_set), predicted=len(predicted_set))
        totals["correct"] += len(gold_set & predicted_set)
    return totals["gold"], totals["predicted"], totals["correct"]


@pytest.mark.parametrize("seed", range(3))
def test_spans_are_seqeval_entities(seed):
    for tags in [*random_corpus(seed)[0], *random_corpus(seed)[1]]:
        ours = [(s.label, s.start, s.end - 1) for s in sentence_spans(tags)]
        assert ours == get_entities(convert(tags, "iob2"))


def test_confusion_of_the_fixture_by_hand():
    sentences, predicted = read_fixture()
    result = confusion([s.tags for s in sentences], predicted)
    assert result["labels"] == ["LOC", "MISC", "ORG", "PER"]
    # Anna and Li right; Tom Hanks PER as LOC, Oslo LOC as ORG, United Nations ORG as MISC.
    assert result["pairs"] == {"LOC": {"ORG": 1}, "ORG": {"MISC": 1}, "PER": {"LOC": 1, "PER": 2}}
    # Boris Ivanov and Ana Bo cut or stretched; Mets and Bank of England; Paris (Hilton).
    assert result["boundary"] == {"LOC": 1, "ORG": 2, "PER": 2}
    assert result["missed"] == {"LOC": 1, "ORG": 1, "PER": 3}  # New York; Reuters; Jo, Cy, Hilton
    assert result["spurious"] == {"LOC": 1, "MISC": 2}  # England; Monday, Just noise
    assert (result["gold"], result["predicted"], result["correct"]) == (15, 13, 2)
    assert (result["false_positives"], result["false_negatives"]) == (11, 13)


@pytest.mark.parametrize("seed", range(3))
def test_confusion_adds_up_to_seqeval_counts(seed):
    gold, predicted = random_corpus(seed)
    result = confusion(gold, predicted)
    gold_count, predicted_count, correct = seqeval_counts(gold, predicted)
    assert (result["gold"], result["predicted"], result["correct"]) == (
        gold_count,
        predicted_count,
        correct,
    )
    off_diagonal = sum(n for g, row in result["pairs"].items() for p, n in row.items() if g != p)
    boundary = sum(result["boundary"].values())
    assert result["false_positives"] == predicted_count - correct
    assert result["false_positives"] == sum(result["spurious"].values()) + boundary + off_diagonal
    assert result["false_negatives"] == gold_count - correct
    assert result["false_negatives"] == sum(result["missed"].values()) + boundary + off_diagonal


def test_pair_spans_pairs_every_span_once_and_prefers_exact_then_extent_then_type():
    gold = [Span(0, 2, "PER"), Span(3, 4, "LOC"), Span(5, 7, "ORG"), Span(9, 10, "PER")]
    predicted = [Span(0, 2, "PER"), Span(3, 4, "ORG"), Span(5, 6, "ORG"), Span(6, 8, "LOC")]
    pairs = pair_spans(gold, predicted)
    assert [(p.gold, p.predicted, p.kind) for p in pairs] == [
        (Span(0, 2, "PER"), Span(0, 2, "PER"), "correct"),
        (Span(3, 4, "LOC"), Span(3, 4, "ORG"), "type"),
        (Span(5, 7, "ORG"), Span(5, 6, "ORG"), "boundary"),
        (None, Span(6, 8, "LOC"), "spurious"),
        (Span(9, 10, "PER"), None, "missed"),
    ]
    # An overlap of another type and extent pairs when nothing better is left.
    assert pair_spans([Span(0, 3, "ORG")], [Span(1, 2, "MISC")])[0].kind == "type_and_boundary"


@pytest.mark.parametrize("seed", range(3))
def test_pair_spans_uses_each_span_exactly_once(seed):
    for gold_tags, predicted_tags in zip(*random_corpus(seed), strict=True):
        gold, predicted = sentence_spans(gold_tags), sentence_spans(predicted_tags)
        pairs = pair_spans(gold, predicted)
        assert sorted((p.gold for p in pairs if p.gold), key=str) == sorted(gold, key=str)
        assert sorted((p.predicted for p in pairs if p.predicted), key=str) == sorted(
            predicted, key=str
        )


def fixture_tagged(sentences, predicted) -> Tagged:
    """The fixture's predictions as a tagger gives them, each span with a made-up confidence."""
    spans = [
        [
            {"start": s.start, "end": s.end, "label": s.label, "confidence": 0.5 + s.start / 100}
            for s in sentence_spans(tags)
        ]
        for tags in predicted
    ]
    return Tagged(predicted, spans)


def test_error_records_count_and_describe_every_error():
    sentences, predicted = read_fixture()
    records = list(
        error_records(sentences, fixture_tagged(sentences, predicted), tags_are_spans=True)
    )
    kinds = Counter(record["kind"] for record in records)
    assert kinds == {"false_positive": 11, "false_negative": 13}
    oslo = [r for r in records if r["span"]["text"] == "Oslo"]
    assert [(r["kind"], r["error"], r["span"]["label"]) for r in oslo] == [
        ("false_positive", "type", "ORG"),
        ("false_negative", "type", "LOC"),
    ]
    predicted_oslo, gold_oslo = oslo
    assert predicted_oslo["span"] == {
        "start": 5,
        "end": 6,
        "label": "ORG",
        "text": "Oslo",
        "confidence": 0.55,
    }
    assert predicted_oslo["paired"] == {"start": 5, "end": 6, "label": "LOC", "text": "Oslo"}
    assert predicted_oslo["sentence"] == 0 and predicted_oslo["line"] == 1
    assert predicted_oslo["tokens"][5] == "Oslo"
    # Around the span: gold Boris Ivanov (ending 1 token before Oslo's start) and Oslo itself;
    # predicted Boris (2 tokens before); not Anna, 4 tokens before.
    assert [s["text"] for s in predicted_oslo["gold"]] == ["Boris Ivanov", "Oslo"]
    assert [s["text"] for s in predicted_oslo["predicted"]] == ["Boris"]
    assert "confidence" not in gold_oslo["span"] and gold_oslo["paired"]["confidence"] == 0.55
    errors = Counter((r["kind"], r["error"]) for r in records)
    assert errors[("false_positive", "spurious")] == 3
    assert errors[("false_negative", "missed")] == 5
    assert errors[("false_positive", "boundary")] == errors[("false_negative", "boundary")] == 5
    assert errors[("false_positive", "type_and_boundary")] == 1


def test_tag_confusions_and_token_errors_for_tags_that_are_not_spans():
    sentences = [
        Sentence(("a", "b", "c"), ("NOUN", "VERB", "NOUN"), 1),
        Sentence(("d", "e"), ("NOUN", "ADJ"), 5),
    ]
    predicted = [["PROPN", "VERB", "PROPN"], ["NOUN", "NOUN"]]
    result = tag_confusions([s.tags for s in sentences], predicted)
    assert result == {
        "tokens": 5,
        "mistagged": 3,
        "confusions": [
            {"gold": "NOUN", "predicted": "PROPN", "count": 2},
            {"gold": "ADJ", "predicted": "NOUN", "count": 1},
        ],
    }
    records = list(error_records(sentences, Tagged(predicted), tags_are_spans=False))
    assert [(r["kind"], r["sentence"], r["line"], r["position"], r["token"]) for r in records] == [
        ("wrong_tag", 0, 1, 0, "a"),
        ("wrong_tag", 0, 1, 2, "c"),
        ("wrong_tag", 1, 5, 1, "e"),
    ]
    assert (records[2]["gold"], records[2]["predicted"]) == ("ADJ", "NOUN")
