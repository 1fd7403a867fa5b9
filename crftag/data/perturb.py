"""Text as people type it: the words of a sentence lower-cased, upper-cased, title-cased, or with
typing mistakes, the tags kept.

Training draws these changes afresh every epoch (:mod:`crftag.training.augment`) and ``crftag
eval --perturb`` scores a model on perturbed copies of a file. Every function is pure: the
random choices come from the ``random.Random`` handed in, so a seed gives the same text.

The changes work on a sentence's tokens after its file was read, so the tags stay with their
tokens whatever the format; labels read from character spans (jsonl, brat) were already turned
into token tags, and a change of one token touches no other.

- ``lower``, ``upper``, ``title``: every token's case changed (``title``: first character
  upper-cased, the rest lower-cased). A character whose changed case has another length
  (``ß`` upper-cased is ``SS``) is kept as it is, so every token keeps its length.
- ``typos``: each token with at least :data:`TYPO_MIN_LETTERS` letters is edited with
  probability ``typo_rate``, by one of three edits drawn with equal chance: two neighbouring
  characters swapped (two that differ), one character deleted, or one lower-case letter
  ``a``-``z`` inserted (upper-cased when the characters around it are upper-case).
"""

from __future__ import annotations

import dataclasses
import random
import string
from collections.abc import Sequence

from crftag.data.conll import Sentence

__all__ = [
    "CASE_CHANGES",
    "PERTURBATIONS",
    "TYPO_MIN_LETTERS",
    "change_case",
    "perturb_sentences",
    "perturb_tokens",
    "with_typos",
]

CASE_CHANGES = ("lower", "upper", "title")
PERTURBATIONS = (*CASE_CHANGES, "typos")  # the one list of them
TYPO_MIN_LETTERS = 4  # words "longer than 3 letters": shorter ones are mostly function words
TYPO_EDITS = ("swap", "delete", "insert")


def change_case(token: str, change: str) -> str:
    """``token`` lower-cased, upper-cased or title-cased (``change`` one of
    :data:`CASE_CHANGES`), keeping its length."""
    if change == "title":
        return change_case(token[:1], "upper") + change_case(token[1:], "lower")
    method = str.lower if change == "lower" else str.upper
    changed = method(token)
    if len(changed) == len(token):
        return changed
    # The rare characters whose other case is longer (ß, ŉ, İ) stay as they are.
    return "".join(method(char) if len(method(char)) == 1 else char for char in token)


def with_typos(tokens: Sequence[str], rate: float, rng: random.Random) -> tuple[str, ...]:
    """``tokens`` with each word of at least :data:`TYPO_MIN_LETTERS` letters given one edit
    with probability ``rate`` (the module docstring says which). A draw is made for every token,
    eligible or not, so a token's edit depends only on the tokens before it."""
    edited = []
    for token in tokens:
        chosen = rng.random() < rate
        if chosen and sum(char.isalpha() for char in token) >= TYPO_MIN_LETTERS:
            token = _one_edit(token, rng)
        edited.append(token)
    return tuple(edited)


def _one_edit(token: str, rng: random.Random) -> str:
    """``token`` (at least 4 characters) with one swap, deletion or insertion."""
    edit = rng.choice(TYPO_EDITS)
    if edit == "swap":
        pairs = [i for i in range(len(token) - 1) if token[i] != token[i + 1]]
        if pairs:
            i = rng.choice(pairs)
            return token[:i] + token[i + 1] + token[i] + token[i + 2 :]
        edit = "delete"  # "aaaa": no swap changes it
    if edit == "delete":
        i = rng.randrange(len(token))
        return token[:i] + token[i + 1 :]
    i = rng.randrange(len(token) + 1)
    letter = rng.choice(string.ascii_lowercase)
    around = token[max(i - 1, 0) : i + 1]
    return token[:i] + (letter.upper() if around.isupper() else letter) + token[i:]


def perturb_tokens(
    tokens: Sequence[str], changes: Sequence[str], rng: random.Random, typo_rate: float
) -> tuple[str, ...]:
    """``tokens`` with ``changes`` (names of :data:`PERTURBATIONS`) applied in order."""
    changed = tuple(tokens)
    for change in changes:
        if change == "typos":
            changed = with_typos(changed, typo_rate, rng)
        else:
            changed = tuple(change_case(token, change) for token in changed)
    return changed


def perturb_sentences(
    sentences: Sequence[Sentence], change: str, *, seed: int, typo_rate: float
) -> list[Sentence]:
    """A perturbed copy of ``sentences`` (one file's): every sentence's tokens changed by
    ``change``, tags, line numbers and documents kept; the same for the same ``seed``. The
    ``raw`` lines are dropped, for they would no longer match the tokens."""
    if change not in PERTURBATIONS:
        raise ValueError(f"expected one of {', '.join(PERTURBATIONS)}, got {change!r}")
    rng = random.Random(f"{seed}:{change}")
    return [
        dataclasses.replace(
            sentence,
            tokens=perturb_tokens(sentence.tokens, (change,), rng, typo_rate),
            raw=(),
            token_rows=(),
        )
        for sentence in sentences
    ]
