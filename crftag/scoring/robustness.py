"""A tagger scored on perturbed copies of labelled sentences (``crftag eval --perturb``): the
text lower-, upper- or title-cased or with typos (:mod:`crftag.data.perturb`), the tags kept,
so the scores say how a model holds up on text as people type it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from crftag.data.conll import Sentence
from crftag.data.perturb import PERTURBATIONS, perturb_sentences
from crftag.scoring.evaluate import score_sentences

if TYPE_CHECKING:
    from crftag.inference.tagger import Tagger

__all__ = [
    "DEFAULT_SEED",
    "DEFAULT_TYPO_RATE",
    "Perturbation",
    "perturbed_scores",
    "parse_perturbations",
    "perturbed_table",
    "score_perturbed",
]

DEFAULT_SEED = 1
DEFAULT_TYPO_RATE = 0.2  # a typo in one word in five of 4 letters or more
PERTURBED_HEADERS = ["text", "precision", "recall", "f1", "token accuracy"]


@dataclass(frozen=True)
class Perturbation:
    """The perturbed copies ``eval --perturb`` scores: the ``changes`` (names of
    :data:`crftag.data.perturb.PERTURBATIONS`), the ``seed`` they are drawn from and the share of
    words given a typo."""

    changes: tuple[str, ...]
    seed: int = DEFAULT_SEED
    typo_rate: float = DEFAULT_TYPO_RATE


def perturbed_scores(
    tagger: Tagger, sentences: Sequence[Sentence], perturbation: Perturbation, batch_size: int
) -> dict:
    """One file's ``perturbed`` scores (:func:`score_perturbed`) and its ``perturbation``
    settings, as keys of the file's scores."""
    settings = {"seed": perturbation.seed, "typo_rate": perturbation.typo_rate}
    copies = score_perturbed(
        tagger, sentences, perturbation.changes, batch_size=batch_size, **settings
    )
    return {"perturbed": copies, "perturbation": settings}


def parse_perturbations(text: str) -> list[str]:
    """``lower,upper,title,typos`` (any of them, in any order, each once) as a list; raises
    ValueError naming the first unknown or repeated name."""
    names = [name.strip() for name in text.split(",")]
    for index, name in enumerate(names):
        if name not in PERTURBATIONS:
            raise ValueError(f"expected names from {','.join(PERTURBATIONS)}, got {name!r}")
        if name in names[:index]:
            raise ValueError(f"{name!r} is named twice")
    return names


def score_perturbed(
    tagger: Tagger,
    sentences: Sequence[Sentence],
    changes: Sequence[str],
    *,
    seed: int,
    typo_rate: float,
    batch_size: int = 64,
) -> dict[str, dict]:
    """{change: the scores (:func:`crftag.scoring.evaluate.score`) of ``tagger`` on the copy of
    ``sentences`` (one file's, with tags) perturbed by it}; each copy made from ``seed``."""
    return {
        change: score_sentences(
            tagger,
            perturb_sentences(sentences, change, seed=seed, typo_rate=typo_rate),
            batch_size=batch_size,
        )
        for change in changes
    }


def perturbed_table(name: str, scores: dict) -> tuple[str, list[str], list[list[str]]]:
    """(title, headers, rows) of one file's ``scores`` with their ``perturbed`` copies: a row
    for the text as given, then one per copy; precision, recall and F1 of the entities (blank
    for tags that are not spans) and token accuracy, in percent."""
    settings = scores["perturbation"]
    title = (
        f"{name}: as given and perturbed (seed {settings['seed']}, typos in "
        f"{100 * settings['typo_rate']:g}% of the words of 4 letters or more)"
    )
    rows = [_row("as given", scores)]
    rows += [_row(change, copy) for change, copy in scores["perturbed"].items()]
    return title, PERTURBED_HEADERS, rows


def _row(label: str, scores: dict) -> list[str]:
    entities = scores.get("entities")
    micro = entities["micro"] if entities else {}
    figures = [micro.get(key) for key in ("precision", "recall", "f1")]
    return [
        label,
        *("" if value is None else f"{100 * value:.2f}" for value in figures),
        f"{100 * scores['accuracy']:.2f}",
    ]
