"""Augmentation: each epoch, some training sentences lower-, upper- or title-cased or given
typos (:mod:`crftag.data.perturb`), drawn afresh from the run's seed and the epoch number alone,
so a resumed run sees the text the uninterrupted one saw. ``crftag distill`` changes a teacher's
unlabelled sentences in the same way, from draws of their own (:func:`unlabelled_tokens`).

The sentences changed in an epoch are encoded again when their batch is built; the tags, the
documents and every other sentence stay as encoded once in :class:`TrainingSet`.
"""

from __future__ import annotations

import dataclasses
import random

from crftag.config.augment import AugmentConfig
from crftag.config.sections import Config
from crftag.data.batching import Encoded, encode
from crftag.data.perturb import perturb_tokens
from crftag.data.vocab import Vocabularies
from crftag.training.corpus import TrainingSet

__all__ = ["drawn_tokens", "epoch_changes", "reencoded", "unlabelled_tokens"]


def epoch_changes(training: TrainingSet, config: Config, epoch: int) -> dict[int, tuple[str, ...]]:
    """{sentence index: its tokens as epoch ``epoch`` sees them} for the sentences the epoch
    changes. Each sentence in turn draws from one generator for the epoch
    (:func:`drawn_tokens`)."""
    augment = config.augment
    if not augment.active:
        return {}
    rng = random.Random(f"augment:{config.train.seed}:{epoch}")
    changed = {}
    for index, sentence in enumerate(training.sentences):
        tokens = drawn_tokens(sentence.tokens, augment, rng)
        if tokens != sentence.tokens:
            changed[index] = tokens
    return changed


def unlabelled_tokens(
    tokens: tuple[str, ...], config: Config, epoch: int, index: int
) -> tuple[str, ...]:
    """``tokens``, the unlabelled sentence ``index`` of a teacher's store, as epoch ``epoch``
    sees them: changed as a training sentence is (:func:`drawn_tokens`), from a generator of
    the seed, the epoch and the sentence's index alone, apart from the labelled sentences'
    draws, so the sentences drawn for an epoch, their batches' order and a resume change
    nothing; ``tokens`` themselves when augmentation is off."""
    augment = config.augment
    if not augment.active:
        return tokens
    rng = random.Random(f"augment-unlabelled:{config.train.seed}:{epoch}:{index}")
    return drawn_tokens(tokens, augment, rng)


def drawn_tokens(
    tokens: tuple[str, ...], augment: AugmentConfig, rng: random.Random
) -> tuple[str, ...]:
    """``tokens`` with at most one case change (``augment.lower``, ``augment.upper``,
    ``augment.title``) and, apart, typos (``augment.typos``), drawn from ``rng``; as many
    tokens as before, each changed within itself, so labels by token stay with their token."""
    cases = (("lower", augment.lower), ("upper", augment.upper), ("title", augment.title))
    changes = _case_change(rng.random(), cases)
    if rng.random() < augment.typos:
        changes.append("typos")
    if not changes:
        return tokens
    changed = perturb_tokens(tokens, changes, rng, augment.typo_rate)
    if len(changed) != len(tokens):
        raise AssertionError(f"{changes} made {len(changed)} tokens of {len(tokens)}")
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
