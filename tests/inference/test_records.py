"""Prediction records on hand-made cases: joining a long sentence's pieces, dropping spans."""

import pytest

from crftag import Prediction
from crftag.inference.records import drop_unlikely_spans, join_pieces


def span(start, end, label, confidence, text=None):
    record = {"start": start, "end": end, "label": label, "confidence": confidence}
    if text is not None:
        record = {**record, "text": text}
    return record


def test_joined_pieces_shift_spans_add_scores_and_multiply_probabilities():
    first = Prediction(
        tokens=["Anna", "sings"],
        tags=["B-PER", "O"],
        spans=[span(0, 1, "PER", 0.9, "Anna")],
        score=2.0,
        probability=0.5,
        token_probs=[0.9, 0.8],
        nbest=[{"tags": ["B-PER", "O"], "score": 2.0, "probability": 0.5}, {"tags": ["O", "O"]}],
    )
    second = Prediction(
        tokens=["in", "New", "York"],
        tags=["O", "B-LOC", "I-LOC"],
        spans=[span(1, 3, "LOC", 0.7, "New York")],
        score=-1.0,
        probability=0.25,
        token_probs=[1.0, 0.6, 0.5],
        nbest=[{"tags": ["O", "B-LOC", "I-LOC"], "score": -1.0, "probability": 0.25}],
    )
    joined = join_pieces([first, second])
    assert joined.tokens == ["Anna", "sings", "in", "New", "York"]
    assert joined.tags == ["B-PER", "O", "O", "B-LOC", "I-LOC"]
    assert joined.spans == [span(0, 1, "PER", 0.9, "Anna"), span(3, 5, "LOC", 0.7, "New York")]
    assert joined.score == 1.0 and joined.probability == 0.125
    assert joined.token_probs == [0.9, 0.8, 1.0, 0.6, 0.5]
    assert joined.marginals is None
    # The n best of the whole are not the pieces' n best combined: only the best is listed.
    assert joined.nbest == [{"tags": joined.tags, "score": 1.0, "probability": 0.125}]


def test_spans_below_the_threshold_are_dropped_and_their_tokens_become_o():
    prediction = Prediction(
        tokens=["Anna", "met", "Boris", "Ivanov"],
        tags=["B-PER", "O", "B-PER", "I-PER"],
        spans=[span(0, 1, "PER", 0.95), span(2, 4, "PER", 0.4)],
    )
    drop_unlikely_spans(prediction, 0.5)
    assert prediction.tags == ["B-PER", "O", "O", "O"]
    assert prediction.spans == [span(0, 1, "PER", 0.95, "Anna")]


@pytest.mark.parametrize("threshold", [0.0, 0.4])
def test_spans_at_or_above_the_threshold_are_kept_with_their_text(threshold):
    prediction = Prediction(
        tokens=["Boris", "Ivanov"], tags=["B-PER", "I-PER"], spans=[span(0, 2, "PER", 0.4)]
    )
    drop_unlikely_spans(prediction, threshold)
    assert prediction.tags == ["B-PER", "I-PER"]
    assert prediction.spans == [span(0, 2, "PER", 0.4, "Boris Ivanov")]
    assert list(prediction.spans[0]) == ["start", "end", "label", "text", "confidence"]
    assert "probs" not in prediction.to_dict() and "nbest" not in prediction.to_dict()
