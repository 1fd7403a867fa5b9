"""Prediction records: what the tagger says about one sentence, as plain values.

A :class:`Prediction` is what :meth:`Tagger.predict` returns and what ``predict --format jsonl``
writes. A sentence longer than the tagger's ``max_length`` is tagged in pieces, whose records
:func:`join_pieces` joins into one; :func:`drop_unlikely_spans` removes the spans below a
confidence threshold, and :func:`locate_spans` places the rest in the sentence's text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crftag.data.schemes import Span, from_spans
from crftag.data.tokenize import token_offsets

__all__ = ["Prediction", "drop_unlikely_spans", "join_pieces", "locate_spans"]


@dataclass
class Prediction:
    """What the model says about one sentence.

    tokens       the tokens tagged
    tags         the best tag sequence (IOB2 for entity tags)
    spans        entities: ``start``, ``end`` (token offsets, end exclusive), ``start_char``,
                 ``end_char`` (character offsets into the sentence's text, see
                 :func:`locate_spans`), ``label``, ``text`` (that text's slice) and
                 ``confidence``, the probability that exactly this span is in the output
    score        the best sequence's score; ``probability`` = p(tags | tokens)
    token_probs  with ``probs``: each token's marginal probability of its predicted tag
    marginals    with ``probs='all'``: each token's distribution over all output tags
    nbest        with ``nbest > 1``: the best sequences, each ``tags``, ``score``, ``probability``
    token_offsets  on request: each token's [start, end) character offsets in the text
    sentences    for a whole document: each sentence's token range (``start``, ``end``) and
                 character range (``start_char``, ``end_char``) in it
    """

    tokens: list[str]
    tags: list[str]
    spans: list[dict] = field(default_factory=list)
    score: float = 0.0
    probability: float = 1.0
    token_probs: list[float] | None = None
    marginals: list[dict[str, float]] | None = None
    nbest: list[dict] | None = None
    token_offsets: list[list[int]] | None = None
    sentences: list[dict] | None = None

    def to_dict(self) -> dict:
        record = {
            "tokens": self.tokens,
            "tags": self.tags,
            "spans": self.spans,
            "score": self.score,
            "probability": self.probability,
        }
        if self.token_probs is not None:
            record["probs"] = self.token_probs
        if self.marginals is not None:
            record["marginals"] = self.marginals
        if self.nbest is not None:
            record["nbest"] = self.nbest
        if self.token_offsets is not None:
            record["token_offsets"] = self.token_offsets
        if self.sentences is not None:
            record["sentences"] = self.sentences
        return record


def join_pieces(parts: list[Prediction]) -> Prediction:
    """One prediction from those of consecutive pieces (of a long sentence, or the sentences of
    a document). The n best of the whole are not the n best of each piece combined, so only the
    best sequence is listed. Character offsets, where the parts have them, must already be
    offsets into one text."""
    joined = Prediction(tokens=[], tags=[], score=0.0, probability=1.0)
    for part in parts:
        offset = len(joined.tokens)
        joined.tokens.extend(part.tokens)
        joined.tags.extend(part.tags)
        joined.spans.extend(
            {**span, "start": span["start"] + offset, "end": span["end"] + offset}
            for span in part.spans
        )
        joined.score += part.score
        joined.probability *= part.probability
        if part.token_probs is not None:
            joined.token_probs = (joined.token_probs or []) + part.token_probs
        if part.marginals is not None:
            joined.marginals = (joined.marginals or []) + part.marginals
        if part.token_offsets is not None:
            joined.token_offsets = (joined.token_offsets or []) + part.token_offsets
    if parts[0].nbest is not None:
        joined.nbest = [
            {"tags": joined.tags, "score": joined.score, "probability": joined.probability}
        ]
    return joined


def drop_unlikely_spans(prediction: Prediction, min_confidence: float) -> None:
    """Remove spans below ``min_confidence`` (their tokens become O)."""
    kept = [span for span in prediction.spans if span["confidence"] >= min_confidence]
    if len(kept) != len(prediction.spans):
        prediction.tags = from_spans(
            [Span(s["start"], s["end"], s["label"]) for s in kept], len(prediction.tags), "iob2"
        )
    prediction.spans = kept


def locate_spans(prediction: Prediction, text: str | None, with_token_offsets: bool) -> None:
    """Give each span its character offsets and text: ``text[start_char:end_char]``, where
    ``text`` is the sentence as given (a text line, say, with its tabs and runs of spaces), or,
    without one, the tokens joined by single spaces. With ``with_token_offsets``, every token's
    offsets too. Raises ValueError when the tokens are not substrings of ``text`` in order."""
    if text is None:
        text = " ".join(prediction.tokens)
    offsets = token_offsets(text, prediction.tokens)
    prediction.spans = [
        {
            "start": span["start"],
            "end": span["end"],
            "start_char": offsets[span["start"]][0],
            "end_char": offsets[span["end"] - 1][1],
            "label": span["label"],
            "text": text[offsets[span["start"]][0] : offsets[span["end"] - 1][1]],
            "confidence": span["confidence"],
        }
        for span in prediction.spans
    ]
    if with_token_offsets:
        prediction.token_offsets = [[start, end] for start, end in offsets]
