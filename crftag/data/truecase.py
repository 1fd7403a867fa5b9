"""What the truecaser reads and predicts (Mayhew, Gupta & Roth 2020): text lower-cased, and for
each character whether it was upper-case.

Lower-casing keeps lengths (:func:`crftag.data.perturb.change_case`: a character whose lower
case is longer stays as it is and counts as not upper-case), so character ``i`` of the
lower-cased text is character ``i`` of the original and each target sits at its character.
"""

from __future__ import annotations

from collections.abc import Sequence

from crftag.data.char_codes import CharCodes
from crftag.data.indices import word_chars
from crftag.data.perturb import change_case

__all__ = ["case_targets", "truecaser_words"]


def case_targets(text: str) -> tuple[str, list[int]]:
    """(``text`` lower-cased, for each character 1 where the original differs from its lower
    case, else 0)."""
    lowered = change_case(text, "lower")
    return lowered, [int(original != lower) for original, lower in zip(text, lowered, strict=True)]


def truecaser_words(
    tokens: Sequence[str], codes: CharCodes, max_word_chars: int
) -> tuple[list[int], list[int], list[int]]:
    """:meth:`CharCodes.encode_words` of the tokens as the character encoder reads them
    (:func:`crftag.data.indices.word_chars`), lower-cased: character j of a word's characters
    in the tagger sits at ``firsts[i] + j`` of the codes, whatever the casing of ``tokens``."""
    words = [change_case(word_chars(token, max_word_chars), "lower") for token in tokens]
    return codes.encode_words(words)
