"""Partially labelled sentences: tokens whose tag is unknown, and the tags each token may take.

A tag column may write ``-`` or ``?`` for a token whose tag nobody annotated. Such a token
constrains nothing: training maximises the total probability of every tag sequence consistent
with the known tags (:meth:`crftag.crf.crf.CRF.partial_nll`). This module says which tags of the
training scheme are consistent with them, one set per token.

Files are converted to the training scheme sentence by sentence, and a known tag's form in the
training scheme can depend on its unknown neighbours: a known IOB ``I-PER`` followed by an unknown
token is ``I-PER`` in BIOES when the entity goes on and ``E-PER`` when it stops there. Conversion
(:func:`crftag.data.schemes.convert`) reads a chunk's start from a tag and its predecessor and a
chunk's end from a tag and its successor, so a known tag's form depends on its two neighbours
only; :func:`permitted_tags` enumerates the neighbours' possible tags and collects every form.
The sets are exact per token; a path through them is further limited by the scheme's
transition constraints in the CRF.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from crftag.data.conll import Sentence
from crftag.data.schemes import convert
from crftag.errors import CrftagError

__all__ = [
    "UNKNOWN_TAGS",
    "has_unknown",
    "in_scheme",
    "is_unknown",
    "known",
    "permitted_tags",
    "refuse_unknown",
]

UNKNOWN_TAGS = frozenset({"-", "?"})  # a tag column's marks for "tag not annotated"
UNKNOWN = "?"  # how an unknown tag is written after conversion
_OTHER_LABEL = "\x00"  # stands for every label other than the tag's own in the neighbours


def is_unknown(tag: str) -> bool:
    return tag in UNKNOWN_TAGS


def has_unknown(tags: Sequence[str]) -> bool:
    return any(tag in UNKNOWN_TAGS for tag in tags)


def known(tags: Sequence[str]) -> list[str]:
    """The known tags of a sequence, in order (what scheme detection and vocabularies see)."""
    return [tag for tag in tags if tag not in UNKNOWN_TAGS]


def in_scheme(tags: Sequence[str], scheme: str) -> list[str]:
    """``tags`` rewritten in ``scheme`` (``none``: unchanged), unknown tags written as ``?``.

    A known tag next to an unknown one is written in the form it takes when the unknown tags are
    ``O``: one representative of the forms :func:`permitted_tags` lists."""
    if not has_unknown(tags):
        return list(tags) if scheme == "none" else convert(tags, scheme)
    if scheme == "none":
        return [UNKNOWN if tag in UNKNOWN_TAGS else tag for tag in tags]
    completed = convert(["O" if tag in UNKNOWN_TAGS else tag for tag in tags], scheme)
    return [
        UNKNOWN if tag in UNKNOWN_TAGS else new for tag, new in zip(tags, completed, strict=True)
    ]


def permitted_tags(
    tags: Sequence[str], data_scheme: str, scheme: str
) -> list[frozenset[str] | None] | None:
    """For each token, the tags of ``scheme`` consistent with the known tags of ``tags`` (tags as
    read, in ``data_scheme``: an unknown tag is completed by any tag of that scheme; any tags
    with ``scheme`` ``none``); None for an unknown token (any tag). Returns None when no tag is
    unknown: the sentence is fully labelled."""
    if not has_unknown(tags):
        return None
    permitted: list[frozenset[str] | None] = []
    for position, tag in enumerate(tags):
        if tag in UNKNOWN_TAGS:
            permitted.append(None)
        elif scheme == "none":
            permitted.append(frozenset((tag,)))
        else:
            previous = tags[position - 1] if position > 0 else ""
            following = tags[position + 1] if position + 1 < len(tags) else ""
            neighbours = (_neighbour(previous), _neighbour(following))
            permitted.append(_forms(*neighbours, tag, data_scheme, scheme))
    return permitted


def _neighbour(tag: str) -> str:
    return "?" if tag in UNKNOWN_TAGS else tag


@lru_cache(maxsize=65536)
def _forms(
    previous: str, following: str, tag: str, data_scheme: str, scheme: str
) -> frozenset[str]:
    """The forms in ``scheme`` of ``tag`` between ``previous`` and ``following`` ("" at a
    sentence edge, "?" unknown: every tag of ``data_scheme``)."""
    forms = set()
    for before in _choices(previous, tag, data_scheme):
        for after in _choices(following, tag, data_scheme):
            window = [t for t in (before, tag, after) if t]
            forms.add(convert(window, scheme)[1 if before else 0])
    return frozenset(forms)


def _choices(neighbour: str, tag: str, data_scheme: str) -> tuple[str, ...]:
    """The neighbours that matter for converting ``tag``: conversion compares prefixes, and labels
    only for being equal, so every other label behaves as one."""
    if neighbour != "?":
        return (neighbour,)
    label = tag.split("-", 1)[1] if "-" in tag else _OTHER_LABEL
    labels = {label, _OTHER_LABEL}
    prefixes = "BIES" if data_scheme == "bioes" else "BI"
    return ("O",) + tuple(f"{prefix}-{name}" for prefix in prefixes for name in sorted(labels))


def refuse_unknown(sentences: list[Sentence], path: str) -> list[Sentence]:
    """``sentences`` (read from ``path``), or a CrftagError naming their first unknown tag:
    scoring needs every gold tag, and a gold ``-`` or ``?`` would count as a tag no model
    predicts."""
    for sentence in sentences:
        for position, tag in enumerate(sentence.tags or ()):
            if tag in UNKNOWN_TAGS:
                row = sentence.token_rows[position] if sentence.token_rows else position
                raise CrftagError(
                    f"{path}:{sentence.line + row}: tag {tag!r} of {sentence.tokens[position]!r} "
                    "is unknown; unknown tags are for training data (data.train), and scoring "
                    "needs files with every tag known (docs/partial-labels.md)"
                )
    return sentences
