"""Scoring predicted tags against gold tags, and a tagger on labelled sentences.

Entity-level precision, recall and F1 are seqeval's, in its default mode, which counts chunks as the
CoNLL conlleval script does; crftag computes them itself (importing seqeval imports scikit-learn
and SciPy, seconds at every start), and a test checks them against seqeval's report. Gold and
predicted tags are both rewritten in IOB2 first, so files in IOB1 (the original CoNLL-2003
release) or BIOES score exactly as conlleval scores them. Token accuracy is reported for every
task and is the figure for part-of-speech tagging.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from crftag.data.conll import Sentence, document_keys
from crftag.data.schemes import convert, to_spans
from crftag.scoring.tables import fixed_width

if TYPE_CHECKING:
    from crftag.inference.tagger import Tagger

__all__ = [
    "Tagged",
    "calibration",
    "format_calibration",
    "format_scores",
    "headline",
    "precision_recall_f1",
    "score",
    "score_sentences",
    "score_tagged",
    "score_tables",
    "tag_sentences",
    "to_json",
    "unseen_labels",
]


def score_sentences(
    tagger: Tagger,
    sentences: Sequence[Sentence],
    *,
    batch_size: int = 64,
    with_calibration: bool = False,
) -> dict:
    """Tag labelled ``sentences`` (one file's, read with their tags) with ``tagger`` and score
    the tags against theirs: :func:`score`'s dict, plus ``calibration`` (:func:`calibration`)
    when asked and the tags are spans."""
    calibrated = with_calibration and tagger.tags_are_spans
    tagged = tag_sentences(tagger, sentences, batch_size=batch_size, with_spans=calibrated)
    return score_tagged(
        sentences, tagged, tags_are_spans=tagger.tags_are_spans, with_calibration=calibrated
    )


@dataclass(frozen=True)
class Tagged:
    """What a tagger said about labelled sentences: ``tags`` per sentence and, when asked,
    ``spans`` per sentence with their confidence (as :meth:`Tagger.predict` gives them)."""

    tags: list[list[str]]
    spans: list[list[dict]] | None = None


def tag_sentences(
    tagger: Tagger, sentences: Sequence[Sentence], *, batch_size: int = 64, with_spans: bool = False
) -> Tagged:
    """Tag labelled ``sentences`` with ``tagger``, those of one document together (their keys
    are :func:`~crftag.data.conll.document_keys`) for models with document context; with
    ``with_spans``, through :meth:`Tagger.predict`, so each span comes with its confidence."""
    documents = document_keys(sentences)
    if not with_spans:
        return Tagged(tagger.tag([s.tokens for s in sentences], batch_size, documents))
    predictions = tagger.predict(
        [list(s.tokens) for s in sentences], batch_size=batch_size, documents=documents
    )
    return Tagged([p.tags for p in predictions], [p.spans for p in predictions])


def score_tagged(
    sentences: Sequence[Sentence],
    tagged: Tagged,
    *,
    tags_are_spans: bool,
    with_calibration: bool = False,
) -> dict:
    """:func:`score` of ``tagged`` against the sentences' gold tags, plus ``calibration`` when
    asked and ``tagged`` has spans."""
    gold = [sentence.tags for sentence in sentences]
    scores = score(gold, tagged.tags, tags_are_spans=tags_are_spans)
    if with_calibration and tags_are_spans and tagged.spans is not None:
        scores["calibration"] = calibration(gold, tagged.spans)
    return scores


def headline(scores: dict) -> float:
    """The one number models are selected by: entity micro F1, or token accuracy."""
    entities = scores.get("entities")
    return entities["micro"]["f1"] if entities else scores["accuracy"]


def unseen_labels(tagger: Tagger, sentences: Sequence[Sentence]) -> list[str]:
    """The labels of the sentences' gold tags that ``tagger`` never saw in training, sorted
    (scoring counts every one of them as an error): entity labels (``PER`` of ``B-PER``) when
    the tags are spans, else the tags themselves."""
    gold = [sentence.tags for sentence in sentences]
    if tagger.tags_are_spans:
        known = {tag.split("-", 1)[-1] for tag in tagger.tag_symbols}
        labels = {span.label for tags in gold for span in to_spans(tags)}
    else:
        known = set(tagger.tag_symbols)
        labels = {tag for tags in gold for tag in tags}
    return sorted(labels - known)


def score(
    gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]], *, tags_are_spans: bool
) -> dict:
    """Scores of ``predicted`` against ``gold`` (lists of tag lists, aligned).

    Returns a dict with ``sentences``, ``tokens``, ``accuracy`` and, when ``tags_are_spans``,
    ``entities``: per-type and micro/macro-averaged ``precision``, ``recall``, ``f1`` and
    ``support``.
    """
    if len(gold) != len(predicted):
        raise ValueError(f"expected as many predictions as gold sentences, got {len(predicted)}")
    tokens = sum(len(tags) for tags in gold)
    correct = sum(
        g == p
        for gold_tags, predicted_tags in zip(gold, predicted, strict=True)
        for g, p in zip(gold_tags, predicted_tags, strict=True)
    )
    result: dict = {
        "sentences": len(gold),
        "tokens": tokens,
        "accuracy": correct / tokens if tokens else 0.0,
    }
    if tags_are_spans:
        gold_iob2 = [convert(tags, "iob2") for tags in gold]
        predicted_iob2 = [convert(tags, "iob2") for tags in predicted]
        # Token accuracy in one scheme too, so IOB1 gold is not penalised for its B/I spelling.
        result["accuracy"] = (
            sum(
                g == p
                for gold_tags, predicted_tags in zip(gold_iob2, predicted_iob2, strict=True)
                for g, p in zip(gold_tags, predicted_tags, strict=True)
            )
            / tokens
            if tokens
            else 0.0
        )
        result["entities"] = _entity_scores(gold_iob2, predicted_iob2)
    return result


def _entity_scores(gold: list[list[str]], predicted: list[list[str]]) -> dict:
    """Entity precision, recall, F1 and support per type and micro, macro and support-weighted
    averages, of IOB2 tag lists: exactly seqeval's ``classification_report(gold, predicted,
    output_dict=True, zero_division=0)`` in its default mode (a score whose denominator is 0 is
    0; the macro average of no types is undefined, None), which
    ``tests/scoring/test_entity_scores_reference.py`` checks against seqeval.

    A chunk is a span of :func:`to_spans` in its sentence: on IOB2 (every I-X continues a B-X or
    I-X), that is a B-X and the I-X after it, as seqeval's chunks are.
    """
    counts: dict[str, list[int]] = {}  # type -> [correct, predicted, gold]
    for gold_tags, predicted_tags in zip(gold, predicted, strict=True):
        gold_spans = set(to_spans(gold_tags))
        predicted_spans = set(to_spans(predicted_tags))
        for span in gold_spans:
            counts.setdefault(span.label, [0, 0, 0])[2] += 1
        for span in predicted_spans:
            counts.setdefault(span.label, [0, 0, 0])[1] += 1
            counts[span.label][0] += span in gold_spans
    labels = sorted(counts)
    rows = [_prf(*counts[label]) for label in labels]
    # a type named like an average must not be lost
    averages = ("micro", "macro", "weighted")
    entities = {
        f"type:{label}" if label in averages else label: row
        for label, row in zip(labels, rows, strict=True)
    }
    totals = [sum(column[i] for column in counts.values()) for i in range(3)]
    entities["micro"] = _prf(*totals)
    entities["macro"] = _average(rows, [1] * len(rows), none_weighed=None)
    entities["weighted"] = _average(rows, [row["support"] for row in rows], none_weighed=0.0)
    return entities


def precision_recall_f1(credit: float, predicted: int, gold: int) -> tuple[float, float, float]:
    """Precision, recall and F1 of ``credit`` correct spans among ``predicted`` and ``gold``
    ones, each 0 where undefined (seqeval's ``zero_division=0``)."""
    precision = credit / predicted if predicted else 0.0
    recall = credit / gold if gold else 0.0
    # seqeval's order of operations, so the figures agree to the last bit
    f1 = 2.0 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def _prf(correct: int, predicted: int, gold: int) -> dict:
    """A type's (or the micro) row: precision, recall, F1 and support."""
    precision, recall, f1 = precision_recall_f1(correct, predicted, gold)
    return {"precision": precision, "recall": recall, "f1": f1, "support": gold}


def _average(rows: list[dict], weights: list[int], *, none_weighed: float | None) -> dict:
    """The ``weights``-weighted mean of the rows' precision, recall and F1, or ``none_weighed``
    when the weights sum to 0, as seqeval averages: the macro average of no types is NaN there
    (None here: JSON has no NaN, and a table says why instead), the support-weighted average
    of no gold spans 0."""
    total = sum(weights)
    means = {
        key: sum(row[key] * weight for row, weight in zip(rows, weights, strict=True)) / total
        if total
        else none_weighed
        for key in ("precision", "recall", "f1")
    }
    return {**means, "support": sum(row["support"] for row in rows)}


UNDEFINED_NOTE = "n/a: undefined, as there are no entity types in the gold or predicted tags"
ENTITY_HEADERS = ["type", "precision", "recall", "f1", "support"]
BIN_HEADERS = ["confidence", "spans", "mean conf", "precision"]
THRESHOLD_HEADERS = ["min confidence", "spans", "precision", "recall"]


def format_scores(name: str, scores: dict) -> str:
    """A fixed-width table for people; ``json.dumps(scores)`` is the form for machines."""
    lines = [f"{name}: {scores['sentences']} sentences, {scores['tokens']} tokens"]
    lines.append(f"token accuracy  {100 * scores['accuracy']:6.2f}")
    entities = scores.get("entities")
    if entities:
        lines.append(fixed_width(ENTITY_HEADERS, _entity_rows(entities), (12, 10, 10, 10, 10)))
        if any(value is None for row in entities.values() for value in row.values()):
            lines.append(UNDEFINED_NOTE)
    return "\n".join(lines)


def score_tables(name: str, scores: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """The tables of ``scores`` (and of its ``calibration``, if any) as (title, headers, rows),
    for :func:`crftag.scoring.tables.print_table`: the figures of :func:`format_scores` and
    :func:`format_calibration`, for a terminal."""
    title = f"{name}: {scores['sentences']} sentences, {scores['tokens']} tokens"
    accuracy = f"{100 * scores['accuracy']:.2f}"
    entities = scores.get("entities")
    if entities:
        tables = [(f"{title}; token accuracy {accuracy}", ENTITY_HEADERS, _entity_rows(entities))]
    else:
        tables = [(title, ["token accuracy"], [[accuracy]])]
    result = scores.get("calibration")
    if result:
        tables.append(
            (
                f"span confidence calibration ({result['spans']} predicted spans); "
                f"expected calibration error {100 * result['ece']:.2f}",
                BIN_HEADERS,
                _bin_rows(result),
            )
        )
        tables.append(
            ("with low-confidence spans dropped", THRESHOLD_HEADERS, _threshold_rows(result))
        )
    return tables


def _entity_rows(entities: dict) -> list[list[str]]:
    """Per type, then overall (micro) and macro average: the name, P, R, F1 (%) and support."""
    order = sorted(k for k in entities if k not in ("micro", "macro", "weighted"))
    rows = []
    for label in [*order, "micro", "macro"]:
        if label not in entities:
            continue
        values = entities[label]
        rows.append(
            [
                {"micro": "overall", "macro": "macro avg"}.get(label, label),
                *(_percent(values[key]) for key in ("precision", "recall", "f1")),
                str(values["support"]),
            ]
        )
    return rows


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.2f}"


def to_json(scores: dict) -> str:
    """Strict JSON: an undefined score is null, never NaN."""
    return json.dumps(scores, sort_keys=True, allow_nan=False)


THRESHOLDS = (0.0, 0.5, 0.7, 0.9, 0.95)


def calibration(
    gold: Sequence[Sequence[str]], predicted_spans: Sequence[Sequence[dict]], bins: int = 10
) -> dict:
    """How well span confidence matches span precision.

    gold: gold tag lists (any span scheme); predicted_spans: per sentence, spans with ``start``,
    ``end``, ``label`` and ``confidence`` (as :meth:`Tagger.predict` gives them). Returns the
    reliability table (equal-width confidence bins: span count, mean confidence, precision), the
    expected calibration error (the count-weighted mean of |precision - mean confidence|), and
    micro precision and recall when spans under each of ``THRESHOLDS`` are dropped.
    """
    gold_sets = [
        {(s.start, s.end, s.label) for s in to_spans(convert(tags, "iob2"))} for tags in gold
    ]
    judged = [
        (span["confidence"], (span["start"], span["end"], span["label"]) in gold_spans)
        for spans, gold_spans in zip(predicted_spans, gold_sets, strict=True)
        for span in spans
    ]
    total_gold = sum(len(spans) for spans in gold_sets)
    table = []
    error = 0.0
    for b in range(bins):
        lower, upper = b / bins, (b + 1) / bins
        inside = [(c, ok) for c, ok in judged if lower <= c < upper or (b == bins - 1 and c == 1.0)]
        if inside:
            mean_confidence = sum(c for c, _ in inside) / len(inside)
            precision = sum(ok for _, ok in inside) / len(inside)
            error += len(inside) / len(judged) * abs(precision - mean_confidence)
        else:
            mean_confidence = precision = None
        table.append(
            {
                "lower": lower,
                "upper": upper,
                "spans": len(inside),
                "mean_confidence": mean_confidence,
                "precision": precision,
            }
        )
    thresholds = []
    for threshold in THRESHOLDS:
        kept = [ok for c, ok in judged if c >= threshold]
        correct = sum(kept)
        thresholds.append(
            {
                "threshold": threshold,
                "spans": len(kept),
                "precision": correct / len(kept) if kept else 0.0,
                "recall": correct / total_gold if total_gold else 0.0,
            }
        )
    return {"bins": table, "ece": error, "spans": len(judged), "thresholds": thresholds}


def format_calibration(result: dict) -> str:
    """:func:`calibration`'s reliability table and thresholds as fixed-width text."""
    lines = [f"span confidence calibration ({result['spans']} predicted spans)"]
    lines.append(fixed_width(BIN_HEADERS, _bin_rows(result), (14, 8, 11, 11)))
    lines.append(f"expected calibration error  {100 * result['ece']:.2f}")
    lines.append(fixed_width(THRESHOLD_HEADERS, _threshold_rows(result), (16, 8, 11, 9)))
    return "\n".join(lines)


def _bin_rows(result: dict) -> list[list[str]]:
    """Per confidence bin: its range, span count, mean confidence and precision (%)."""
    rows = []
    for row in result["bins"]:
        label = f"[{row['lower']:.1f}, {row['upper']:.1f})"
        if row["spans"]:
            rows.append(
                [
                    label,
                    str(row["spans"]),
                    f"{100 * row['mean_confidence']:.2f}",
                    f"{100 * row['precision']:.2f}",
                ]
            )
        else:
            rows.append([label, "0", "-", "-"])
    return rows


def _threshold_rows(result: dict) -> list[list[str]]:
    """Per threshold: the spans kept, and their micro precision and recall (%)."""
    return [
        [
            f"{row['threshold']:.2f}",
            str(row["spans"]),
            f"{100 * row['precision']:.2f}",
            f"{100 * row['recall']:.2f}",
        ]
        for row in result["thresholds"]
    ]
