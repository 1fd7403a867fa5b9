"""The registered input features, in the order their vectors enter the BiLSTM (the order of a
checkpoint's weights and of the random draws that initialise them). Adding a feature is one new
module of :mod:`crftag.features` and one line here (docs/architecture.md, "Adding a feature").
"""

from __future__ import annotations

from collections.abc import Mapping

from crftag.features.base import INPUT, SPARSE, STATES, Feature
from crftag.features.casing import Casing
from crftag.features.char_lm import CharLM
from crftag.features.chars import Chars
from crftag.features.document import DocumentContext
from crftag.features.hashed import Hashed
from crftag.features.lexicon import Lexicon
from crftag.features.transformer import Transformer
from crftag.features.words import Words

__all__ = ["FEATURES", "active_features", "carried_features", "feature_named"]

FEATURES: tuple[Feature, ...] = (
    Words(),
    Chars(),
    Casing(),
    Lexicon(),
    CharLM(),
    Transformer(),
    DocumentContext(),
    Hashed(),
)


def active_features(model: Mapping, stage: str | None = None) -> list[Feature]:
    """The features a model with this config ``model`` section (a dict) has, in order; only
    those of ``stage`` (``INPUT``, ``STATES``, ``SPARSE``) when given."""
    return [f for f in FEATURES if f.active(model) and stage in (None, f.stage)]


def carried_features(model: Mapping) -> list[Feature]:
    """The features with values of their own that a batch for this model holds: the model's,
    and those every batch carries (words, characters)."""
    return [f for f in FEATURES if f.has_values and (f.active(model) or f.in_every_batch)]


def feature_named(name: str) -> Feature:
    """The feature whose batch field is ``name``; KeyError if none."""
    for feature in FEATURES:
        if feature.name == name:
            return feature
    raise KeyError(name)


assert len({feature.name for feature in FEATURES}) == len(FEATURES), "feature names must differ"
assert {feature.stage for feature in FEATURES} <= {INPUT, STATES, SPARSE}
