"""What a label may hold, per format.

A span's label, or a token's tag, becomes one field of a line: a tag column of CoNLL (whose
lines split on white space), a CoNLL-U field (no field holds a tab or a line break, and none but
FORM and LEMMA a space) and the type of a brat ``T`` line (its first space-separated field). A
label with white space or a control character would come back as other tokens or other labels,
so it is refused wherever it is read for training or written to those formats. Span JSONL, where
JSON escapes every character, holds any non-empty label; CoNLL-U's FORM holds spaces but no tab,
line break or control character.
"""

from __future__ import annotations

import re

from crftag.errors import CrftagError

__all__ = ["check_conllu_form", "check_label", "label_problem"]

# White space (Python's, which counts U+0085, U+2028 and the other Unicode spaces) and the C0
# and C1 control characters.
_NOT_IN_A_FIELD = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")
_NOT_IN_A_FORM = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
QUOTED_CHARACTERS = 60


def label_problem(label: str) -> str | None:
    """Why ``label`` cannot be one field of a column file or a brat type; None if it can."""
    if not label:
        return "is empty"
    found = sorted(set(_NOT_IN_A_FIELD.findall(label)))
    if not found:
        return None
    named = ", ".join(f"U+{ord(character):04X}" for character in found)
    return (
        f"holds white space or a control character ({named}), which a tag column of CoNLL or "
        "CoNLL-U and a brat type cannot hold"
    )


def check_label(label: str, where: str, what: str = "label") -> None:
    """A one-line error at ``where`` (``file:line``, or a document) if ``label`` cannot be a
    tag (:func:`label_problem`)."""
    problem = label_problem(label)
    if problem is not None:
        raise CrftagError(f"{where}: {what} {_quoted(label)} {problem}")


def check_conllu_form(token: str, where: str) -> None:
    """A one-line error if ``token`` cannot be a CoNLL-U FORM (a tab, line break or control
    character)."""
    found = sorted(set(_NOT_IN_A_FORM.findall(token)))
    if found:
        named = ", ".join(f"U+{ord(character):04X}" for character in found)
        raise CrftagError(
            f"{where}: token {_quoted(token)} holds a tab, line break or control character "
            f"({named}), which a CoNLL-U field cannot hold"
        )


def _quoted(text: str) -> str:
    return repr(text[:QUOTED_CHARACTERS]) + ("..." if len(text) > QUOTED_CHARACTERS else "")
