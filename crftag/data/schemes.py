"""Tag schemes for spans: IOB1, IOB2 (BIO) and BIOES, detected, converted and read as spans.

Spans are read with the rules of the CoNLL ``conlleval`` script, which accept every scheme (and
malformed sequences) alike: a chunk starts at B-X, S-X, or any I-X/E-X whose type differs from the
previous tag's or that follows O, E-X or S-X; it ends before such a start, at E-X, at S-X, or before
O. Converting through spans therefore scores any scheme exactly as conlleval would. Tags that are
not span tags at all (part-of-speech tags) form the scheme ``none``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "Span",
    "allowed_transitions",
    "convert",
    "detect_scheme",
    "from_spans",
    "is_span_tagset",
    "span_pattern",
    "to_spans",
]

_SPAN_TAG = re.compile(r"^([BIES])-(.+)$")


@dataclass(frozen=True)
class Span:
    """Tokens ``start`` to ``end`` (exclusive) labelled ``label``."""

    start: int
    end: int
    label: str


def _split(tag: str) -> tuple[str, str]:
    """``B-PER`` -> (``B``, ``PER``); ``O`` -> (``O``, ``""``)."""
    match = _SPAN_TAG.match(tag)
    return (match.group(1), match.group(2)) if match else ("O", "")


def is_span_tagset(tags: Iterable[str]) -> bool:
    """True when every tag is ``O`` or ``B-/I-/E-/S-`` followed by a label."""
    return all(tag == "O" or _SPAN_TAG.match(tag) for tag in tags)


def detect_scheme(sentences: Iterable[Sequence[str]]) -> str:
    """The scheme of some tag sequences: ``bioes``, ``iob1``, ``iob2`` or ``none``.

    ``iob1`` is told from ``iob2`` by a chunk that opens with I-X, which IOB2 never writes.
    """
    saw_end_or_single = False
    saw_inside_opening = False
    for tags in sentences:
        previous = "O"
        for tag in tags:
            if tag != "O" and not _SPAN_TAG.match(tag):
                return "none"
            prefix, label = _split(tag)
            if prefix in ("E", "S"):
                saw_end_or_single = True
            elif prefix == "I":
                previous_prefix, previous_label = _split(previous)
                if previous_prefix not in ("B", "I") or previous_label != label:
                    saw_inside_opening = True
            previous = tag
    if saw_end_or_single:
        return "bioes"
    return "iob1" if saw_inside_opening else "iob2"


def to_spans(tags: Sequence[str]) -> list[Span]:
    """The chunks of one tag sequence, by conlleval's rules (see the module docstring)."""
    spans: list[Span] = []
    start: int | None = None
    previous_prefix, previous_label = "O", ""
    for position, tag in enumerate(tags):
        prefix, label = _split(tag)
        if start is not None and _chunk_ends(previous_prefix, previous_label, prefix, label):
            spans.append(Span(start, position, previous_label))
            start = None
        if _chunk_starts(previous_prefix, previous_label, prefix, label):
            start = position
        previous_prefix, previous_label = prefix, label
    if start is not None:
        spans.append(Span(start, len(tags), previous_label))
    return spans


def _chunk_ends(previous: str, previous_label: str, prefix: str, label: str) -> bool:
    if previous in ("E", "S"):
        return True
    if previous in ("B", "I") and prefix in ("B", "S", "O"):
        return True
    return previous != "O" and previous_label != label


def _chunk_starts(previous: str, previous_label: str, prefix: str, label: str) -> bool:
    if prefix in ("B", "S"):
        return True
    if prefix in ("I", "E") and previous in ("E", "S", "O"):
        return True
    return prefix != "O" and previous_label != label


def from_spans(spans: Iterable[Span], length: int, scheme: str) -> list[str]:
    """Write spans as ``length`` tags in ``scheme`` (``iob1``, ``iob2`` or ``bioes``)."""
    if scheme not in ("iob1", "iob2", "bioes"):
        raise ValueError(f"expected a span scheme iob1|iob2|bioes, got {scheme!r}")
    tags = ["O"] * length
    previous_end, previous_label = -1, ""
    for span in sorted(spans, key=lambda s: s.start):
        size = span.end - span.start
        if scheme == "bioes" and size == 1:
            tags[span.start] = f"S-{span.label}"
            continue
        if scheme == "iob1":
            # IOB1 writes B- only where a chunk directly follows another chunk of the same type.
            adjacent = previous_end == span.start and previous_label == span.label
            first = "B" if adjacent else "I"
        else:
            first = "B"
        tags[span.start] = f"{first}-{span.label}"
        for position in range(span.start + 1, span.end):
            tags[position] = f"I-{span.label}"
        if scheme == "bioes":
            tags[span.end - 1] = f"E-{span.label}"
        previous_end, previous_label = span.end, span.label
    return tags


def iob2_tag(tag: str) -> str:
    """The IOB2 tag a tag of a well-formed sequence stands for on its own: ``B-``, ``S-`` ->
    ``B-``; ``I-``, ``E-`` -> ``I-``; ``O`` and tags that are not spans unchanged."""
    prefix, label = _split(tag)
    if prefix == "O":
        return tag
    return f"{'B' if prefix in ('B', 'S') else 'I'}-{label}"


def to_iob2(tags: Sequence[str], well_formed: bool) -> list[str]:
    """A predicted span sequence in IOB2. ``well_formed`` (constrained decoding only writes
    well-formed sequences) lets each tag follow from itself alone (:func:`iob2_tag`)."""
    if well_formed:
        return [iob2_tag(tag) for tag in tags]
    return convert(tags, "iob2")


def convert(tags: Sequence[str], target: str) -> list[str]:
    """Rewrite one tag sequence, of any span scheme, in ``target``."""
    return from_spans(to_spans(tags), len(tags), target)


def allowed_transitions(
    scheme: str, labels: Sequence[str]
) -> tuple[list[list[bool]], list[bool], list[bool]]:
    """Which moves a tag sequence in ``scheme`` may make, over the tag list ``labels``.

    Returns (allowed, allowed_start, allowed_end): ``allowed[i][j]`` says whether tag i may be
    followed by tag j; the other two say which tags may start and end a sentence. A pure function
    of the scheme, so constraints are the same in training and decoding.
    """
    parts = [_split(tag) for tag in labels]

    def may_follow(previous: tuple[str, str], current: tuple[str, str]) -> bool:
        (p_prefix, p_label), (prefix, label) = previous, current
        inside_same = p_prefix in ("B", "I") and p_label == label
        if scheme == "iob2":
            # I-X only continues a chunk of X; B-X and O may come after anything.
            return prefix != "I" or inside_same
        if scheme == "iob1":
            # B-X only separates two adjacent chunks of X; I-X and O may come after anything.
            return prefix != "B" or inside_same
        if scheme == "bioes":
            # I-X and E-X continue an open chunk of X; B-X, S-X and O need no chunk to be open.
            if prefix in ("I", "E"):
                return inside_same
            return p_prefix not in ("B", "I")
        return True

    allowed = [[may_follow(p, c) for c in parts] for p in parts]
    if scheme == "iob2":
        start = [prefix != "I" for prefix, _ in parts]
        end = [True] * len(parts)
    elif scheme == "iob1":
        start = [prefix != "B" for prefix, _ in parts]
        end = [True] * len(parts)
    elif scheme == "bioes":
        start = [prefix in ("B", "S", "O") for prefix, _ in parts]
        end = [prefix in ("E", "S", "O") for prefix, _ in parts]
    else:
        start = [True] * len(parts)
        end = [True] * len(parts)
    return allowed, start, end


def span_pattern(span: Span, scheme: str) -> tuple[list[str], str | None]:
    """How ``scheme`` writes exactly this span: the tags on its tokens, and the one tag that must
    not follow it because it would extend the span (None when the scheme closes spans itself).

    With constrained transitions these fix the span exactly: a tag sequence contains the span iff
    its tags match the pattern, which is what span confidence sums over.
    """
    if scheme == "bioes":
        return from_spans(
            [Span(0, span.end - span.start, span.label)], span.end - span.start, "bioes"
        ), None
    if scheme == "iob2":
        size = span.end - span.start
        return [f"B-{span.label}"] + [f"I-{span.label}"] * (size - 1), f"I-{span.label}"
    raise ValueError(f"expected the training scheme bioes or iob2, got {scheme!r}")
