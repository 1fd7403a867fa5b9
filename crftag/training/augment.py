"""Augmentation: each epoch, some training sentences lower-, upper- or title-cased or given
typos (:mod:`crftag.data.perturb`), drawn afresh from the run's seed and the epoch number alone,
so a resumed run sees the text the uninterrupted one saw.

The sentences changed in an epoch are encoded again when their batch is built; the tags, the
documents and every other sentence stay as encoded once in :class:`TrainingSet`.
"""

from __future__ import annotations

import dataclasses
import random

from crftag.config.sections import Config
from crftag.data.batching import Encoded, encode
from crftag.data.perturb import perturb_tokens
from crftag.data.vocab import Vocabularies
from crftag.training.corpus import TrainingSet

__all__ = ["epoch_changes", "reencoded"]


def epoch_changes(training: TrainingSet, config: Config, epoch: int) -> dict[int, tuple[str, ...]]:
    """{sentence index: its tokens as epoch ``epoch`` sees them} for the sentences the epoch
    changes. Each sentence in turn draws at most one case change (``augment.lower``,
    ``augment.upper``, ``augment.title``) and, apart, typos (``augment.typos``)."""
    augment = config.augment
    if not augment.active:
        return {}
    rng = random.Random(f"augment:{config.train.seed}:{epoch}")
    cases = (("lower", augment.lower), ("upper", augment.upper), ("title", augment.title))
    changed = {}
    for index, sentence in enumerate(training.sentences):
        changes = _case_change(rng.random(), cases)
        if rng.random() < augment.typos:
            changes.append("typos")
        if changes:
            tokens = perturb_tokens(sentence.tokens, changes, rng, augment.typo_rate)
            if tokens != sentence.tokens:
                changed[index] = tokens
    return changed


def _case_change(draw: float, cases: tuple[tuple[str, float], ...]) -> list[str]:
    """The case change whose slice of [0, 1) holds ``draw`` (slices laid end to end, in order),
    or none past them."""
    for name, chance in cases:
        if draw < chance:
            return [name]
        draw -= chance
    return []


def reencoded(encoded: Encoded, tokens: tuple[str, ...], vocabularies: Vocabularies) -> Encoded:
    """``encoded`` (a training sentence's tensors) with every feature's values those of
    ``tokens``, the changed text (each registered feature encodes it again, so none is left
    describing the old text); its tags and allowed tags kept."""
    return dataclasses.replace(encoded, inputs=encode(tokens, vocabularies).inputs)
