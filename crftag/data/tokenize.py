"""Splitting raw text into tokens the way CoNLL and Penn Treebank data are split.

``Berlin.`` -> ``Berlin .``, ``don't`` -> ``do n't``, ``(Reuters)`` -> ``( Reuters )``, while
abbreviations such as ``U.S.`` or ``Mr.``, numbers such as ``3.5`` or ``1,000`` and hyphenated
words stay whole. The tagger was trained on text split this way, so it tags such tokens best.
"""

from __future__ import annotations

import re

__all__ = ["tokenize"]

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
