"""Splitting a document's text into sentences, as character offsets into the text.

Paragraphs first: a blank line (a line holding only white space, between two line breaks as
``str.splitlines`` counts them, ``\\r\\n`` being one) always ends a sentence. Each paragraph is
then split by segtok's rule-based segmenter (``segtok.segmenter.split_multi``), which lets a
sentence run over a single line break, as in hard-wrapped text. segtok never ends a sentence at a
terminal written after a space (``... over . Next``), which is how tokenized text is written, so
such spaces are dropped from what segtok sees. docs/sentences.md says why segtok and how well it
does on CoNLL-2003 and UD English-EWT.

The text is never changed: the segmenter returns sentence strings, and each is placed back by
counting the non-space characters (``str.isspace``) it holds, in order. Should a segmenter return
characters that are not the text's, its sentences are aligned to the text
(``difflib.SequenceMatcher``), so no character of the text is lost or doubled either way.
"""

from __future__ import annotations

import bisect
import difflib
import itertools
import re
from collections.abc import Callable, Iterable

from crftag.errors import CrftagError

__all__ = ["SplitParagraph", "paragraphs", "split_sentences", "split_sentences_with"]

SplitParagraph = Callable[[str], Iterable[str]]
"""A segmenter: one paragraph's text in, its sentences' strings out, in order."""

# A line break as str.splitlines sees one; "\r\n" is one break, never a blank line.
_LINE_BREAK = r"(?:\r\n|\r(?!\n)|[\n\v\f\x1c\x1d\x1e\x85\u2028\u2029])"
_LINE_SPACE = r"[^\S\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]"
_BLANK_LINE = re.compile(f"{_LINE_BREAK}{_LINE_SPACE}*{_LINE_BREAK}")
# White space before a run of terminals that ends a word ("over ." but not "a .5").
_SPACE_BEFORE_TERMINAL = re.compile(r"(?<=\S)\s+(?=[.!?]+(?:\s|\Z))")
# re's \s is str.isspace for str patterns, so "non-space" means the same here and in str.split().
_NON_SPACE_RUN = re.compile(r"\S+")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """[start, end) character offsets (Python str indices) of the sentences of text, in order.

    Each ``text[start:end]`` is non-empty with no white space at either end; every non-space
    character of ``text`` lies in exactly one range; a blank line always ends a sentence; empty
    or all-space text gives ``[]``. Raises CrftagError when segtok is not installed."""
    try:
        from segtok.segmenter import split_multi
    except ImportError:
        raise CrftagError(
            "sentence splitting needs the segtok package: pip install segtok"
        ) from None

    def split_paragraph(paragraph: str) -> Iterable[str]:
        # Dropping white space is free: offsets are found by counting the other characters.
        return split_multi(_SPACE_BEFORE_TERMINAL.sub("", paragraph))

    return split_sentences_with(text, split_paragraph)


def split_sentences_with(text: str, split_paragraph: SplitParagraph) -> list[tuple[int, int]]:
    """:func:`split_sentences` with any segmenter: ``split_paragraph`` is called on each
    paragraph's text, and whatever strings it returns become offsets under the same contract."""
    sentences = []
    for start, end in paragraphs(text):
        paragraph = text[start:end]
        for first, last in _place(paragraph, split_paragraph(paragraph)):
            sentences.append((start + first, start + last))
    return sentences


def paragraphs(text: str) -> list[tuple[int, int]]:
    """[start, end) offsets of the paragraphs of text: the pieces between blank lines, without
    white space at either end, empty ones left out."""
    found = []
    start = 0
    for blank_line in itertools.chain(_BLANK_LINE.finditer(text), [None]):
        end = blank_line.start() if blank_line else len(text)
        piece = text[start:end]
        stripped = piece.strip()
        if stripped:
            first = start + len(piece) - len(piece.lstrip())
            found.append((first, first + len(stripped)))
        start = blank_line.end() if blank_line else len(text)
    return found


def _place(paragraph: str, sentences: Iterable[str]) -> list[tuple[int, int]]:
    """Offsets into ``paragraph`` of the segmenter's ``sentences`` of it.

    Positions are first counted in the paragraph's non-space characters: a sentence that holds
    n of them ends n characters after the one before. The paragraph's first sentence starts at
    its start and its last ends at its end, whatever the segmenter left out there."""
    runs = list(_NON_SPACE_RUN.finditer(paragraph))
    characters = "".join(run.group() for run in runs)
    pieces = ["".join(sentence.split()) for sentence in sentences]
    ends = list(itertools.accumulate(len(piece) for piece in pieces[:-1]))
    returned = "".join(pieces)
    if returned != characters:
        ends = _aligned_ends(ends, returned, characters)
    bounds = [0, *sorted({end for end in ends if 0 < end < len(characters)}), len(characters)]
    # run_starts[k]: how many non-space characters come before run k.
    run_starts = list(itertools.accumulate((len(run.group()) for run in runs[:-1]), initial=0))

    def position(count: int) -> int:
        """Where in the paragraph the non-space character number ``count`` (from 0) stands."""
        run = bisect.bisect_right(run_starts, count) - 1
        return runs[run].start() + count - run_starts[run]

    return [(position(first), position(last - 1) + 1) for first, last in itertools.pairwise(bounds)]


def _aligned_ends(ends: list[int], returned: str, characters: str) -> list[int]:
    """``ends``, counted in the ``returned`` characters, as counts of the text's ``characters``,
    through the blocks the two have in common. An end inside a block, or at its end, keeps its
    place in it; one between blocks moves to the start of the next block, so the ends stay in
    order. Only a segmenter that rewrites text needs this; segtok returns slices of it."""
    matcher = difflib.SequenceMatcher(None, returned, characters, autojunk=False)
    blocks = matcher.get_matching_blocks()  # ends with (len(returned), len(characters), 0)
    block_starts = [block.a for block in blocks]
    aligned = []
    for end in ends:
        after = bisect.bisect_left(block_starts, end)
        before = blocks[after - 1] if after else None
        if before is not None and end <= before.a + before.size:
            aligned.append(before.b + end - before.a)
        else:
            aligned.append(blocks[after].b)
    return aligned
