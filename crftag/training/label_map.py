"""Labels on a warm start: which old tag each tag of the new model starts from.

The new model's tags are the old model's (all of them, or with ``train.drop_old_labels`` only
those whose label the training data has, and ``O``) followed by the training data's new tags.
Each tag has a *source*, the index of the old tag whose output weights and transitions it starts
from: itself when the old model has it; with ``train.label_map: {new: old}``, the old label's tag
of the same prefix (``B-person`` from ``B-PER``, ``S-person`` from ``S-PER``, in any scheme);
none for a label the old model never had, which starts as a new model's would.
"""

from __future__ import annotations

import difflib

from crftag.errors import CrftagError

__all__ = ["label_of", "plan_tags", "retag", "tag_sources"]

OUTSIDE = "O"


def label_of(tag: str) -> str | None:
    """A span tag's label (``B-PER`` -> ``PER``), a tag without a prefix itself (part of
    speech), ``O``'s none."""
    if tag == OUTSIDE:
        return None
    prefix, dash, label = tag.partition("-")
    return label if dash and len(prefix) == 1 else tag


def retag(tag: str, label: str) -> str:
    """``tag`` with its label replaced: ``retag("E-PER", "person")`` is ``E-person``."""
    prefix, dash, old = tag.partition("-")
    return f"{prefix}-{label}" if dash and len(prefix) == 1 else label


def plan_tags(
    old_tags: list[str],
    data_tags: list[str],
    label_map: dict[str, str] | None,
    *,
    drop_old: bool,
) -> list[str]:
    """The new model's tags: the old ones kept, then the new ones sorted. A mapped label gets
    every tag its old label has (B, I, E and S alike), whether or not the data holds each."""
    label_map = label_map or {}
    _check(label_map, old_tags, data_tags)
    data_labels = {label_of(tag) for tag in data_tags}
    kept = [t for t in old_tags if not drop_old or label_of(t) in data_labels | {None}]
    mapped = {
        retag(tag, new)
        for tag in old_tags
        for new, old in label_map.items()
        if label_of(tag) == old
    }
    return kept + sorted((set(data_tags) | mapped) - set(kept))


def tag_sources(
    tags: list[str], old_tags: list[str], label_map: dict[str, str] | None
) -> list[int | None]:
    """For each of ``tags``, the index in ``old_tags`` of the tag it starts from, or None."""
    label_map = label_map or {}
    index = {tag: position for position, tag in enumerate(old_tags)}
    sources = []
    for tag in tags:
        label = label_of(tag)
        source = index.get(tag)
        if source is None and label in label_map:
            source = index.get(retag(tag, label_map[label]))
        sources.append(source)
    return sources


def _check(label_map: dict[str, str], old_tags: list[str], data_tags: list[str]) -> None:
    """Every new label of ``label_map`` is one of the training data's, every old one the
    model's; one line for each that is not, with the nearest name."""
    problems = []
    for side, names, tags in (("new", label_map, data_tags), ("old", label_map.values(), old_tags)):
        labels = sorted({label for label in map(label_of, tags) if label is not None})
        where = "the training data's" if side == "new" else "the model's"
        for name in names:
            if name not in labels:
                close = difflib.get_close_matches(name, labels, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                problems.append(
                    f"train.label_map: {side} label {name!r} is not one of {where} labels "
                    f"({', '.join(labels) or 'none'}){hint}"
                )
    if problems:
        raise CrftagError("\n".join(problems))
