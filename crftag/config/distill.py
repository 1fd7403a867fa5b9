"""The ``distill`` section of a config: how ``crftag distill`` trains a student on a teacher's
labels of unlabelled text beside the config's own labelled data (docs/distillation.md).

Each epoch runs the labelled training sentences (the CRF's negative log-likelihood of their
gold tags, as ``crftag train`` does) and the unlabelled sentences the teacher labelled, in one
shuffled order of batches; on those the loss is ``weight`` times the teacher term of
``objective``. A config without a teacher (``crftag train``) ignores the section.
"""

from __future__ import annotations

from dataclasses import dataclass

from crftag.config.keys import MAX_WORDS, _key

__all__ = ["OBJECTIVES", "DistillConfig"]

OBJECTIVES = ("exact", "hard")  # the teacher terms of docs/distillation.md


@dataclass(frozen=True)
class DistillConfig:
    """Training a student on a teacher's labels (`crftag distill`, docs/distillation.md)."""

    objective: str = _key(
        "exact",
        "`exact`: the cross-entropy between the teacher's and the student's distributions over "
        "whole tag sequences, from the teacher's token and transition marginals; `hard`: the "
        "negative log-likelihood of the teacher's Viterbi tags, as if they were gold.",
        choices=OBJECTIVES,
    )
    weight: float = _key(
        1.0,
        "The teacher term's weight beside the gold sentences' loss (1: an unlabelled sentence "
        "counts as a labelled one). Provisional: no pilot on dev has chosen it yet.",
        maximum=1000,
    )
    temperature: float = _key(
        1.0,
        "The teacher's distribution p(y)^(1/temperature), renormalised, when it labels the "
        "text: below 1 sharper, towards its Viterbi path; above 1 flatter. Read once, when the "
        "text is labelled; the stored labels record it.",
        minimum=0.05,
        maximum=100,
    )
    sentences: int | None = _key(
        None,
        "Unlabelled sentences drawn afresh for each epoch (from the seed); null: all of them.",
        minimum=1,
        maximum=MAX_WORDS,
    )
