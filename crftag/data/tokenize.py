"""Splitting raw text into tokens the way CoNLL and Penn Treebank data are split.

``Berlin.`` -> ``Berlin .``, ``don't`` -> ``do n't``, ``(Reuters)`` -> ``( Reuters )``, while
abbreviations such as ``U.S.`` or ``Mr.``, numbers such as ``3.5`` or ``1,000`` and hyphenated
words stay whole. The tagger was trained on text split this way, so it tags such tokens best.

Tokens are only ever cut out of the text, never rewritten: every token is a substring of the
text, in order, so :func:`token_offsets` finds where each one is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["token_offsets", "tokenize"]

_OPENING = "([{\"'`“‘«"
_CLOSING = ")]},;:!?\"'”’»"
# Abbreviations that end in a period and are not sentence ends.
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st mt co corp inc ltd bros vs etc jan feb mar apr jun jul aug sep "
    "sept oct nov dec gen gov sen rep col lt sgt capt no fig".split()
)
_INITIALS = re.compile(r"^(?:[A-Za-z]\.)+$")  # U.S., e.g., J.
_CONTRACTION = re.compile(r"(?i)^(.+?)(n['’]t|['’](?:s|re|ve|ll|d|m))$")


def tokenize(text: str) -> list[str]:
    """Split one sentence of raw text into tokens."""
    tokens: list[str] = []
    for chunk in text.split():
        tokens.extend(_split_chunk(chunk))
    return tokens


def token_offsets(text: str, tokens: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) character offsets of each token in ``text`` (Python string indices, code
    points), each token found after the one before: ``text[start:end] == token``.

    Raises ValueError when a token is not in ``text`` after the previous one."""
    offsets = []
    position = 0
    for token in tokens:
        start = text.find(token, position)
        if start < 0:
            raise ValueError(f"expected token {token!r} in the text at or after {position}")
        position = start + len(token)
        offsets.append((start, position))
    return offsets


def _split_chunk(chunk: str) -> list[str]:
    leading: list[str] = []
    trailing: list[str] = []
    while len(chunk) > 1 and chunk[0] in _OPENING:
        leading.append(chunk[0])
        chunk = chunk[1:]
    if len(chunk) > 1 and chunk[0] == "$":
        leading.append("$")
        chunk = chunk[1:]
    while len(chunk) > 1:
        if chunk.endswith("..."):
            if chunk == "...":
                break
            trailing.append("...")
            chunk = chunk[:-3]
        elif chunk[-1] in _CLOSING:
            trailing.append(chunk[-1])
            chunk = chunk[:-1]
        elif chunk[-1] == "." and not _is_abbreviation(chunk):
            trailing.append(".")
            chunk = chunk[:-1]
        else:
            break
    middle = [chunk]
    match = _CONTRACTION.match(chunk)
    if match:
        middle = [match.group(1), match.group(2)]
    return leading + middle + trailing[::-1]


def _is_abbreviation(chunk: str) -> bool:
    return bool(_INITIALS.match(chunk)) or chunk[:-1].lower() in _ABBREVIATIONS
