"""The ``augment`` section of a config: text as people type it, in training and in choosing the
model (docs/robustness.md).

Each epoch, every training sentence draws at most one case change (``lower``, ``upper``,
``title``: the chance of each) and, apart, typos (``typos``); the draws come from
``train.seed`` and the epoch number alone (:mod:`crftag.training.augment`), so a run repeats
and a resumed run sees what the uninterrupted one saw. In ``crftag distill`` the teacher's
sentences are changed at the same chances (docs/distillation.md). ``dev`` adds perturbed copies
of the dev file to the score the model is chosen on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CHANCE_TOLERANCE", "AugmentConfig"]

# How far past 1 the case chances may add up: chances written in decimal that add up to 1 can
# sum to a little more in binary (0.56 + 0.34 + 0.1 is 1.0000000000000002 added in turn).
CHANCE_TOLERANCE = 1e-9


def _chance(default: float, doc: str) -> Any:
    """A probability key (:func:`crftag.config.sections.load_config` checks its range)."""
    return field(default=default, metadata={"doc": doc, "probability": True, "maximum": 1})


@dataclass(frozen=True)
class AugmentConfig:
    """Text as people type it, in training (docs/robustness.md)."""

    lower: float = _chance(
        0.0,
        "The chance of a training sentence (or a teacher's, in `crftag distill`) being "
        "lower-cased; `lower`, `upper` and `title` "
        "add up to at most 1, for a sentence gets one case change at most.",
    )
    upper: float = _chance(0.0, "The chance of a training sentence being upper-cased.")
    title: float = _chance(
        0.0,
        "The chance of a training sentence being title-cased (every word's first letter "
        "upper-cased, the rest lower-cased).",
    )
    typos: float = _chance(
        0.0,
        "The chance of a training sentence getting typos (after any case change): "
        "`augment.typo_rate` of its words of 4 letters or more get one edit each.",
    )
    typo_rate: float = _chance(
        0.2,
        "The share of the words of 4 letters or more given one edit (two neighbouring "
        "characters swapped, one deleted, or one letter inserted) in a sentence with typos, "
        "in training and in the `augment.dev` typos copy.",
    )
    dev: list[str] | None = field(
        default=None,
        metadata={
            "doc": "Perturbed copies of the dev file scored beside it, from `lower`, `upper`, "
            "`title`, `typos`: the model is chosen on the mean of the dev scores, the file as "
            "given and each copy (made once, from `train.seed`); null chooses on the file as "
            "given."
        },
    )

    @property
    def case_chance(self) -> float:
        """The chance of a case change, ``lower + upper + title``, summed without rounding in
        between (:func:`math.fsum`)."""
        return math.fsum((self.lower, self.upper, self.title))

    @property
    def active(self) -> bool:
        """Some training sentence may be changed."""
        return self.lower + self.upper + self.title + self.typos > 0
