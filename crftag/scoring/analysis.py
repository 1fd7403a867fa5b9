"""Error analysis of predicted tags against gold tags: which spans are wrong and how, the
entity-type confusion table, the SemEval-2013 matching modes, and the tag confusions of
part-of-speech models.

Spans are read as :mod:`crftag.scoring.evaluate` scores them (conlleval's chunks of the tags
rewritten in IOB2, which are seqeval's), so a span is correct exactly when seqeval counts it
correct: false positives are predicted spans less correct ones, false negatives gold spans less
correct ones. To say how each error went wrong, the gold and predicted spans of a sentence are
paired one to one (:func:`pair_spans`): a pair of the same extent but another type is a type error,
a pair of the same type overlapping with another extent a boundary error, an overlapping pair of
another type and extent both; a gold span left alone is missed, a predicted one spurious.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from crftag.data.conll import Sentence
from crftag.data.schemes import Span, convert, to_spans
from crftag.scoring.evaluate import Tagged, precision_recall_f1

__all__ = [
    "MATCH_MODES",
    "Pair",
    "confusion",
    "error_records",
    "pair_spans",
    "semeval",
    "sentence_spans",
    "tag_confusions",
]

# SemEval-2013 task 9.1's ways of matching a predicted span to a gold one (nervaluate's strict,
# exact, partial and ent_type): strict needs extent and type, exact the extent only, partial an
# overlap (half a point when the extent differs), type an overlap and the type.
MATCH_MODES = ("strict", "exact", "partial", "type")
NEAR = 3  # tokens: an error record lists the spans overlapping its span or this close to it


@dataclass(frozen=True)
class Pair:
    """A gold span and a predicted span paired by :func:`pair_spans`, either of them None when
    left alone, and what the pair is: ``correct``, ``type``, ``boundary``,
    ``type_and_boundary``, ``missed`` (gold alone) or ``spurious`` (predicted alone)."""

    gold: Span | None
    predicted: Span | None
    kind: str


def sentence_spans(tags: Sequence[str]) -> list[Span]:
    """The spans of one tag sequence as they are scored (in IOB2, by conlleval's rules)."""
    return to_spans(convert(tags, "iob2"))


def _overlap(a: Span, b: Span) -> int:
    return min(a.end, b.end) - max(a.start, b.start)


# The passes of pair_spans, in order: whether a gold and a predicted span may pair in it.
_PASSES = (
    ("correct", lambda g, p: (g.start, g.end, g.label) == (p.start, p.end, p.label)),
    ("type", lambda g, p: (g.start, g.end) == (p.start, p.end)),
    ("boundary", lambda g, p: g.label == p.label and _overlap(g, p) > 0),
    ("type_and_boundary", lambda g, p: _overlap(g, p) > 0),
)


def pair_spans(gold: Sequence[Span], predicted: Sequence[Span]) -> list[Pair]:
    """Pair one sentence's gold and predicted spans, each span in exactly one pair.

    Pass by pass (exact matches, then the same extent, then the same type overlapping, then any
    overlap), each gold span still alone, in order, takes the predicted span still alone that
    overlaps it most (the first on a tie). Returns the pairs in the order of their first token.
    """
    pairs: list[Pair] = []
    free = list(predicted)
    alone = list(gold)
    for kind, may_pair in _PASSES:
        still_alone = []
        for g in alone:
            candidates = [p for p in free if may_pair(g, p)]
            if candidates:
                best = max(candidates, key=lambda p: (_overlap(g, p), -p.start))
                free.remove(best)
                pairs.append(Pair(g, best, kind))
            else:
                still_alone.append(g)
        alone = still_alone
    pairs += [Pair(g, None, "missed") for g in alone]
    pairs += [Pair(None, p, "spurious") for p in free]
    return sorted(pairs, key=lambda pair: min(s.start for s in (pair.gold, pair.predicted) if s))


def confusion(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> dict:
    """The entity-type confusion of span tags (lists of tag lists, aligned), from
    :func:`pair_spans`.

    ``pairs[g][p]``: gold spans of type g paired with a predicted span of type p, of the same
    extent when g == p (correct) and overlapping otherwise; ``boundary[t]``: type-t spans paired
    with a type-t span of another extent; ``missed[g]`` and ``spurious[p]``: spans left alone.
    Each gold span is counted once in its row, each predicted span once in its column, so
    ``false_positives`` (predicted - correct) is spurious + boundary + the pairs off the
    diagonal, and ``false_negatives`` (gold - correct) is missed + boundary + the same pairs.
    """
    pairs: dict[str, Counter] = {}
    boundary: Counter = Counter()
    missed: Counter = Counter()
    spurious: Counter = Counter()
    labels: set[str] = set()
    for gold_tags, predicted_tags in zip(gold, predicted, strict=True):
        for pair in pair_spans(sentence_spans(gold_tags), sentence_spans(predicted_tags)):
            labels.update(span.label for span in (pair.gold, pair.predicted) if span)
            if pair.kind == "missed":
                missed[pair.gold.label] += 1
            elif pair.kind == "spurious":
                spurious[pair.predicted.label] += 1
            elif pair.kind == "boundary":
                boundary[pair.gold.label] += 1
            else:
                pairs.setdefault(pair.gold.label, Counter())[pair.predicted.label] += 1
    paired = sum(sum(row.values()) for row in pairs.values()) + sum(boundary.values())
    correct = sum(row[label] for label, row in pairs.items())
    gold_total = paired + sum(missed.values())
    predicted_total = paired + sum(spurious.values())
    return {
        "labels": sorted(labels),
        "pairs": {g: dict(sorted(row.items())) for g, row in sorted(pairs.items())},
        "boundary": dict(sorted(boundary.items())),
        "missed": dict(sorted(missed.items())),
        "spurious": dict(sorted(spurious.items())),
        "correct": correct,
        "gold": gold_total,
        "predicted": predicted_total,
        "false_positives": predicted_total - correct,
        "false_negatives": gold_total - correct,
    }


def tag_confusions(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> dict:
    """For tags that are not spans (part of speech): ``tokens``, ``mistagged`` tokens and every
    ``confusions`` entry (``gold``, ``predicted``, ``count``), the most frequent first."""
    counts = Counter(
        (g, p)
        for gold_tags, predicted_tags in zip(gold, predicted, strict=True)
        for g, p in zip(gold_tags, predicted_tags, strict=True)
        if g != p
    )
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return {
        "tokens": sum(len(tags) for tags in gold),
        "mistagged": sum(counts.values()),
        "confusions": [{"gold": g, "predicted": p, "count": n} for (g, p), n in ranked],
    }


def error_records(
    sentences: Sequence[Sentence], tagged: Tagged, *, tags_are_spans: bool
) -> Iterator[dict]:
    """One record per error, sentence by sentence: for span tags each false positive and false
    negative (:func:`_span_errors`), else each mistagged token (:func:`_token_errors`). Every
    record has the ``sentence``'s index in the file (from 0), its first ``line`` and its
    ``tokens``."""
    for index, (sentence, tags) in enumerate(zip(sentences, tagged.tags, strict=True)):
        where = {"sentence": index, "line": sentence.line, "tokens": list(sentence.tokens)}
        if not tags_are_spans:
            yield from _token_errors(sentence, tags, where)
            continue
        confidences = {
            (span["start"], span["end"], span["label"]): span["confidence"]
            for span in (tagged.spans[index] if tagged.spans is not None else [])
        }
        yield from _span_errors(sentence, tags, confidences, where)


def _token_errors(sentence: Sentence, tags: Sequence[str], where: dict) -> Iterator[dict]:
    """The mistagged tokens of one sentence: ``kind`` wrong_tag, the token's ``position`` and
    text (``token``), and its ``gold`` and ``predicted`` tags."""
    for position, (gold, predicted) in enumerate(zip(sentence.tags, tags, strict=True)):
        if gold != predicted:
            yield {
                "kind": "wrong_tag",
                **where,
                "position": position,
                "token": sentence.tokens[position],
                "gold": gold,
                "predicted": predicted,
            }


def _span_errors(
    sentence: Sentence, tags: Sequence[str], confidences: dict, where: dict
) -> Iterator[dict]:
    """The false positives and negatives of one sentence. ``kind``: false_positive (a predicted
    span) or false_negative (a gold one); ``error``: its pair's kind (:class:`Pair`); ``span``
    (``start``, ``end``, ``label``, ``text``, and ``confidence`` for predicted spans);
    ``paired``: the span it was paired with, or None; ``gold`` and ``predicted``: the other
    spans of the sentence that overlap it or end within ``NEAR`` tokens of it."""
    gold = sentence_spans(sentence.tags)
    predicted = sentence_spans(tags)

    def described(span: Span | None, is_predicted: bool) -> dict | None:
        if span is None:
            return None
        record = {"start": span.start, "end": span.end, "label": span.label}
        record["text"] = " ".join(sentence.tokens[span.start : span.end])
        if is_predicted:
            record["confidence"] = confidences.get((span.start, span.end, span.label))
        return record

    def near(span: Span, spans: list[Span], is_predicted: bool) -> list[dict]:
        return [
            described(other, is_predicted)
            for other in spans
            if other != span and other.start < span.end + NEAR and span.start < other.end + NEAR
        ]

    for pair in pair_spans(gold, predicted):
        sides = [(pair.predicted, pair.gold, True), (pair.gold, pair.predicted, False)]
        for span, paired, is_predicted in sides:
            if pair.kind == "correct" or span is None:
                continue
            yield {
                "kind": "false_positive" if is_predicted else "false_negative",
                "error": pair.kind,
                **where,
                "span": described(span, is_predicted),
                "paired": described(paired, not is_predicted),
                "gold": near(span, gold, False),
                "predicted": near(span, predicted, True),
            }


def semeval(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]], mode: str) -> dict:
    """SemEval-2013 counts and scores of span tags in matching ``mode`` (:data:`MATCH_MODES`),
    as nervaluate computes them: ``overall`` and, per type, ``types`` (that type's spans alone).
    Each has ``correct``, ``incorrect``, ``partial``, ``missed``, ``spurious``, ``actual``,
    ``possible``, ``precision``, ``recall`` and ``f1``; strict ``correct`` is seqeval's."""
    if mode not in MATCH_MODES:
        raise ValueError(f"expected a match mode {'|'.join(MATCH_MODES)}, got {mode!r}")
    overall: Counter = Counter()
    types: dict[str, Counter] = {}
    for gold_tags, predicted_tags in zip(gold, predicted, strict=True):
        gold_spans, predicted_spans = sentence_spans(gold_tags), sentence_spans(predicted_tags)
        overall.update(_match(gold_spans, predicted_spans, mode))
        for label in {s.label for s in gold_spans} | {s.label for s in predicted_spans}:
            types.setdefault(label, Counter()).update(
                _match(
                    [s for s in gold_spans if s.label == label],
                    [s for s in predicted_spans if s.label == label],
                    mode,
                )
            )
    return {
        "mode": mode,
        "overall": _match_scores(overall),
        "types": {label: _match_scores(counts) for label, counts in sorted(types.items())},
    }


def _match(gold: Sequence[Span], predicted: Sequence[Span], mode: str) -> Counter:
    """nervaluate's greedy matching of one sentence: each predicted span in turn takes the
    first gold span still free that it matches (type mode: of those of its type that it
    overlaps, the one with the closest boundaries), else the first free one it overlaps, as
    ``incorrect`` (``partial`` in partial mode), else is spurious; free gold spans are missed."""
    counts = Counter(correct=0, incorrect=0, partial=0, missed=0, spurious=0)
    taken: set[int] = set()
    for p in predicted:
        match = overlapping = None
        closest = None
        for index, g in enumerate(gold):
            if index in taken:
                continue
            overlaps = _sufficient_overlap(g, p)
            same_extent = (g.start, g.end) == (p.start, p.end)
            if mode == "type":
                if overlaps and g.label == p.label:
                    distance = abs(g.start - p.start) + abs(g.end - p.end)
                    if closest is None or distance < closest:
                        match, closest = index, distance
                elif overlaps and overlapping is None:
                    overlapping = index
                continue
            if same_extent and (mode != "strict" or g.label == p.label):
                match = index
                break
            if overlaps and overlapping is None:
                overlapping = index
        if match is not None:
            counts["correct"] += 1
            taken.add(match)
        elif overlapping is not None:
            counts["partial" if mode == "partial" else "incorrect"] += 1
            taken.add(overlapping)
        else:
            counts["spurious"] += 1
    counts["missed"] += len(gold) - len(taken)
    return counts


def _sufficient_overlap(gold: Span, predicted: Span) -> bool:
    """Overlap by nervaluate's default threshold: at least 1% of the gold span's tokens."""
    shared = _overlap(gold, predicted)
    return shared > 0 and 100 * shared >= gold.end - gold.start


def _match_scores(counts: Counter) -> dict:
    actual = counts["correct"] + counts["incorrect"] + counts["partial"] + counts["spurious"]
    possible = counts["correct"] + counts["incorrect"] + counts["partial"] + counts["missed"]
    credit = counts["correct"] + 0.5 * counts["partial"]  # partial is 0 outside partial mode
    precision, recall, f1 = precision_recall_f1(credit, actual, possible)
    return {
        **{key: counts[key] for key in ("correct", "incorrect", "partial", "missed", "spurious")},
        "actual": actual,
        "possible": possible,
        "precision": precision,
        "recall": recall,
        "f1": f1,
    }
