"""Character spans onto tokens: an annotated document becomes tagged sentences.

A document's text is split into sentences (:mod:`crftag.data.sentences`) and tokens
(:mod:`crftag.data.tokenize`), unless the record gave its tokens; then each line of the text is one
sentence, so text written as one tokenized sentence per line keeps its sentences. Each character
span must start where a token starts and end where a token ends. One that does not is never
dropped or stretched silently: ``misaligned`` decides, ``error`` (stop, naming the span),
``warn`` (leave it out and say so) or ``expand`` (stretch it to the tokens it touches, and say
so). A span that crosses a sentence boundary keeps the sentences it touches joined as one.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from crftag.data.annotations import CharSpan, Document, check_overlaps
from crftag.data.conll import Sentence
from crftag.data.labels import check_label
from crftag.data.partial import UNKNOWN, is_unknown
from crftag.data.schemes import Span, from_spans
from crftag.data.sentences import split_sentences
from crftag.data.tokenize import token_offsets, tokenize
from crftag.errors import CrftagError

__all__ = ["MISALIGNED_POLICIES", "AlignedDocument", "align_document", "document_tokens"]

MISALIGNED_POLICIES = ("error", "warn", "expand")


@dataclass(frozen=True)
class AlignedDocument:
    """A document as tagged sentences.

    sentences  tokens with IOB2 tags (or the record's own per-token tags), in text order
    offsets    for each sentence, each token's [start, end) character offsets in the text
    """

    sentences: list[Sentence]
    offsets: list[list[tuple[int, int]]]


def document_tokens(document: Document) -> list[list[tuple[int, int]]]:
    """Each sentence's token offsets into ``document.text``: the record's own tokens, one
    sentence per line of text, or the text split into sentences and tokens."""
    if document.tokens is None:
        sentences = []
        for start, end in split_sentences(document.text):
            piece = document.text[start:end]
            found = token_offsets(piece, tokenize(piece))
            sentences.append([(start + first, start + last) for first, last in found])
        return sentences
    offsets = document.token_offsets
    if offsets is None:
        try:
            offsets = token_offsets(document.text, document.tokens)
        except ValueError as error:
            raise CrftagError(
                f"{document.where()}: the tokens do not match the text: {error}"
            ) from None
    return _split_at_line_breaks(document.text, list(offsets))


def _split_at_line_breaks(text: str, offsets: list[tuple[int, int]]) -> list[list]:
    sentences: list[list[tuple[int, int]]] = []
    previous_end = None
    for start, end in offsets:
        if previous_end is None or "\n" in text[previous_end:start]:
            sentences.append([])
        sentences[-1].append((start, end))
        previous_end = end
    return sentences


def align_document(
    document: Document,
    misaligned: str = "error",
    warn: Callable[[str], None] | None = None,
    number: int = 0,
) -> AlignedDocument:
    """The document's sentences with tags. ``warn`` receives one message per span left out or
    stretched (``misaligned`` ``warn`` or ``expand``); ``number`` becomes each sentence's
    ``document`` (1-based, so every record of a file is a document of its own)."""
    if misaligned not in MISALIGNED_POLICIES:
        raise ValueError(f"expected misaligned in {MISALIGNED_POLICIES}, got {misaligned!r}")
    check_overlaps(document)
    _check_labels(document)
    sentences = document_tokens(document)
    flat = [offset for sentence in sentences for offset in sentence]
    if document.tags is not None:
        if len(document.tags) != len(flat):
            raise CrftagError(
                f"{document.where()}: {len(document.tags)} tags for {len(flat)} tokens"
            )
        tags = list(document.tags)
    else:
        spans = _token_spans(document, flat, misaligned, warn or _no_warning)
        _check_token_overlaps(document, spans)
        sentences = _join_crossed(sentences, spans)
        tags = _tags_of(spans, len(flat))
    result = AlignedDocument([], [])
    position = 0
    for offsets in sentences:
        tokens = tuple(document.text[start:end] for start, end in offsets)
        sentence_tags = tuple(tags[position : position + len(offsets)])
        line = document.line or 0
        result.sentences.append(Sentence(tokens, sentence_tags, line, document=number))
        result.offsets.append(offsets)
        position += len(offsets)
    return result


def _check_labels(document: Document) -> None:
    """Labels and tags become tags of tokens, one field of a column line each."""
    if document.tags is not None:
        for tag in set(document.tags):
            check_label(tag, document.where(), "tag")
    for label in {span.label for span in document.spans}:
        check_label(label, document.where())


def _tags_of(spans: list[Span], length: int) -> list[str]:
    """IOB2 tags of the spans; the tokens of a span labelled ``?`` or ``-``, a region the
    annotator left undecided, are unknown (docs/partial-labels.md)."""
    tags = from_spans([span for span in spans if not is_unknown(span.label)], length, "iob2")
    for span in spans:
        if is_unknown(span.label):
            tags[span.start : span.end] = [UNKNOWN] * (span.end - span.start)
    return tags


def _no_warning(message: str) -> None:
    del message


def _token_spans(
    document: Document,
    offsets: list[tuple[int, int]],
    misaligned: str,
    warn: Callable[[str], None],
) -> list[Span]:
    starts = {start: index for index, (start, _) in enumerate(offsets)}
    ends = {end: index + 1 for index, (_, end) in enumerate(offsets)}
    spans = []
    for span in document.spans:
        if span.start in starts and span.end in ends:
            spans.append(Span(starts[span.start], ends[span.end], span.label))
            continue
        touched = [
            i for i, (start, end) in enumerate(offsets) if start < span.end and span.start < end
        ]
        problem = _misalignment(document, span, offsets, touched)
        if misaligned == "error":
            raise CrftagError(
                f"{problem}; fix the offsets, or set data.misaligned: warn (leave such spans "
                "out) or expand (stretch them to whole tokens)"
            )
        if misaligned == "expand" and touched:
            spans.append(Span(touched[0], touched[-1] + 1, span.label))
            first, last = offsets[touched[0]][0], offsets[touched[-1]][1]
            warn(f"{problem}; stretched to [{first}, {last})")
        else:
            warn(f"{problem}; left out")
    return spans


def _misalignment(
    document: Document, span: CharSpan, offsets: list[tuple[int, int]], touched: list[int]
) -> str:
    described = (
        f"span [{span.start}, {span.end}) {span.label} {document.text[span.start : span.end]!r}"
    )
    if not touched:
        return f"{document.where()}: {described} covers no token"
    words = ", ".join(
        f"{document.text[offsets[i][0] : offsets[i][1]]!r} [{offsets[i][0]}, {offsets[i][1]})"
        for i in touched[:3]
    )
    more = " ..." if len(touched) > 3 else ""
    return (
        f"{document.where()}: {described} does not fall on token boundaries (tokens {words}{more})"
    )


def _check_token_overlaps(document: Document, spans: list[Span]) -> None:
    """Stretched spans may come to share a token, which no tag sequence can say."""
    ordered = sorted(spans, key=lambda span: (span.start, span.end))
    for before, after in itertools.pairwise(ordered):
        if after.start < before.end:
            raise CrftagError(
                f"{document.where()}: spans {before.label} and {after.label} share token "
                f"{after.start} after stretching to whole tokens; a linear-chain CRF gives each "
                "token one tag, so it cannot represent overlapping spans"
            )


def _join_crossed(sentences: list[list], spans: list[Span]) -> list[list]:
    """Sentences merged wherever a span starts in one and ends in a later one."""
    sentence_of = [index for index, sentence in enumerate(sentences) for _ in sentence]
    joined_to_next = [False] * len(sentences)
    for span in spans:
        for index in range(sentence_of[span.start], sentence_of[span.end - 1]):
            joined_to_next[index] = True
    merged: list[list] = []
    open_previous = False
    for index, sentence in enumerate(sentences):
        if open_previous:
            merged[-1] = merged[-1] + sentence
        else:
            merged.append(list(sentence))
        open_previous = joined_to_next[index]
    return merged
