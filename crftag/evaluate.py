"""Scoring predicted tags against gold tags.

Entity-level precision, recall and F1 come from seqeval in its default mode, which counts chunks as
the CoNLL conlleval script does. Gold and predicted tags are both rewritten in IOB2 first, so files
in IOB1 (the original CoNLL-2003 release) or BIOES score exactly as conlleval scores them. Token
accuracy is reported for every task and is the figure for part-of-speech tagging.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from crftag.data.schemes import convert, is_span_tagset, to_spans

__all__ = ["calibration", "format_calibration", "format_scores", "score"]


def score(
    gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]], *, spans: bool
) -> dict:
    """Scores of ``predicted`` against ``gold`` (lists of tag lists, aligned).

    Returns a dict with ``sentences``, ``tokens``, ``accuracy`` and, when ``spans``, ``entities``:
    per-type and micro/macro-averaged ``precision``, ``recall``, ``f1`` and ``support``.
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
    if spans:
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
    from seqeval.metrics import classification_report

    report = classification_report(gold, predicted, output_dict=True, zero_division=0)
    entities = {}
    for label, values in report.items():
        key = {"micro avg": "micro", "macro avg": "macro", "weighted avg": "weighted"}.get(
            label, label
        )
        entities[key] = {
            "precision": float(values["precision"]),
            "recall": float(values["recall"]),
            "f1": float(values["f1-score"]),
            "support": int(values["support"]),
        }
    return entities


def looks_like_spans(sentences: Sequence[Sequence[str]]) -> bool:
    return is_span_tagset(tag for tags in sentences for tag in tags)


def format_scores(name: str, scores: dict) -> str:
    """A fixed-width table for people; ``json.dumps(scores)`` is the form for machines."""
    lines = [f"{name}: {scores['sentences']} sentences, {scores['tokens']} tokens"]
    lines.append(f"token accuracy  {100 * scores['accuracy']:6.2f}")
    entities = scores.get("entities")
    if entities:
        lines.append(f"{'type':<12}{'precision':>10}{'recall':>10}{'f1':>10}{'support':>10}")
        order = sorted(k for k in entities if k not in ("micro", "macro", "weighted"))
        for label in [*order, "micro", "macro"]:
            if label not in entities:
                continue
            values = entities[label]
            name_cell = {"micro": "overall", "macro": "macro avg"}.get(label, label)
            lines.append(
                f"{name_cell:<12}{100 * values['precision']:10.2f}{100 * values['recall']:10.2f}"
                f"{100 * values['f1']:10.2f}{values['support']:10d}"
            )
    return "\n".join(lines)


def to_json(scores: dict) -> str:
    return json.dumps(scores, sort_keys=True)


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
    lines = [f"span confidence calibration ({result['spans']} predicted spans)"]
    lines.append(f"{'confidence':<14}{'spans':>8}{'mean conf':>11}{'precision':>11}")
    for row in result["bins"]:
        label = f"[{row['lower']:.1f}, {row['upper']:.1f})"
        if row["spans"]:
            lines.append(
                f"{label:<14}{row['spans']:>8}{100 * row['mean_confidence']:>11.2f}"
                f"{100 * row['precision']:>11.2f}"
            )
        else:
            lines.append(f"{label:<14}{0:>8}{'-':>11}{'-':>11}")
    lines.append(f"expected calibration error  {100 * result['ece']:.2f}")
    lines.append(f"{'min confidence':<16}{'spans':>8}{'precision':>11}{'recall':>9}")
    for row in result["thresholds"]:
        lines.append(
            f"{row['threshold']:<16.2f}{row['spans']:>8}{100 * row['precision']:>11.2f}"
            f"{100 * row['recall']:>9.2f}"
        )
    return "\n".join(lines)
