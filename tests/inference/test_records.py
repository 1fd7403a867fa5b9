"""Prediction records on hand-made cases: joining a long sentence's pieces, dropping spans,
and placing spans in the sentence's text by character offsets."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crftag import Prediction
from crftag.data.tokenize import tokenize
from crftag.inference.records import drop_unlikely_spans, join_pieces, locate_spans


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
    assert prediction.spans == [span(0, 1, "PER", 0.95)]


@pytest.mark.parametrize("threshold", [0.0, 0.4])
def test_spans_at_or_above_the_threshold_are_kept(threshold):
    prediction = Prediction(
        tokens=["Boris", "Ivanov"], tags=["B-PER", "I-PER"], spans=[span(0, 2, "PER", 0.4)]
    )
    drop_unlikely_spans(prediction, threshold)
    assert prediction.tags == ["B-PER", "I-PER"]
    assert prediction.spans == [span(0, 2, "PER", 0.4)]
    assert "probs" not in prediction.to_dict() and "nbest" not in prediction.to_dict()


def test_spans_are_placed_in_the_text_as_given():
    text = "Boris\tIvanov  met\u00a0Anna ."
    prediction = Prediction(
        tokens=["Boris", "Ivanov", "met", "Anna", "."],
        tags=["B-PER", "I-PER", "O", "B-PER", "O"],
        spans=[span(0, 2, "PER", 0.4), span(3, 4, "PER", 0.9)],
    )
    locate_spans(prediction, text, with_token_offsets=True)
    assert prediction.spans[0] == {
        "start": 0,
        "end": 2,
        "start_char": 0,
        "end_char": 12,
        "label": "PER",
        "text": "Boris\tIvanov",
        "confidence": 0.4,
    }
    assert prediction.spans[1]["text"] == "Anna" and prediction.spans[1]["start_char"] == 18
    assert prediction.token_offsets == [[0, 5], [6, 12], [14, 17], [18, 22], [23, 24]]
    assert prediction.to_dict()["token_offsets"] == prediction.token_offsets


def test_without_a_text_spans_are_placed_in_the_tokens_joined_by_spaces():
    prediction = Prediction(tokens=["New", "York", "!"], tags=["B-LOC", "I-LOC", "O"])
    prediction.spans = [span(0, 2, "LOC", 1.0)]
    locate_spans(prediction, None, with_token_offsets=False)
    assert prediction.spans[0]["text"] == "New York"
    assert (prediction.spans[0]["start_char"], prediction.spans[0]["end_char"]) == (0, 8)
    assert prediction.token_offsets is None and "token_offsets" not in prediction.to_dict()


def test_tokens_that_are_not_in_the_text_are_a_value_error():
    prediction = Prediction(tokens=["Anna", "Boris"], tags=["B-PER", "B-PER"])
    with pytest.raises(ValueError, match="'Boris'"):
        locate_spans(prediction, "Boris Anna", with_token_offsets=True)


# Letters, combining marks, wide and zero-width characters, punctuation the tokenizer splits
# off, and every kind of space between them.
CHARACTERS = st.sampled_from(
    list("aZé")
    + ["e\u0301", "東京", "\u200b", "\u00ad", "😀", ".", ",", "'", '"', "(", ")"]
    + ["n't", "U.S.", "$", "..."]
)
SPACES = st.sampled_from([" ", "  ", "\t", "\u00a0", "\u3000", " \t "])


@st.composite
def texts(draw):
    words = draw(st.lists(st.lists(CHARACTERS, min_size=1, max_size=4), min_size=1, max_size=8))
    gaps = draw(st.lists(SPACES, min_size=len(words) + 1, max_size=len(words) + 1))
    return gaps[0] + "".join("".join(w) + gap for w, gap in zip(words, gaps[1:], strict=True))


@given(texts(), st.data())
def test_every_span_slices_the_text_to_its_own_text(text, data):
    tokens = tokenize(text)
    starts = sorted(set(data.draw(st.lists(st.integers(0, len(tokens) - 1), max_size=4))))
    spans = [span(start, start + 1 + (start + 1 < len(tokens)), "X", 1.0) for start in starts]
    spans = [s for s in spans if s["end"] <= len(tokens)]
    spans = [s for i, s in enumerate(spans) if i == 0 or s["start"] >= spans[i - 1]["end"]]
    prediction = Prediction(tokens=tokens, tags=["O"] * len(tokens), spans=spans)
    locate_spans(prediction, text, with_token_offsets=True)
    for located in prediction.spans:
        assert text[located["start_char"] : located["end_char"]] == located["text"]
        first, last = (
            prediction.token_offsets[located["start"]],
            prediction.token_offsets[located["end"] - 1],
        )
        assert (located["start_char"], located["end_char"]) == (first[0], last[1])
    for token, (start, end) in zip(tokens, prediction.token_offsets, strict=True):
        assert text[start:end] == token
