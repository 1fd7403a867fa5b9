"""The registered input features, in the order their vectors enter the BiLSTM (the order of a
checkpoint's weights and of the random draws that initialise them). Adding a feature is one new
module of :mod:`crftag.features` and one line here (docs/architecture.md, "Adding a feature").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from crftag.data.vocab import Vocabularies
from crftag.features.base import INPUT, SPARSE, STATES, Feature
from crftag.features.casing import Casing
from crftag.features.char_lm import CharLM
from crftag.features.chars import Chars
from crftag.features.document import DocumentContext
from crftag.features.hashed import Hashed
from crftag.features.lexicon import Lexicon
from crftag.features.transformer import Transformer
from crftag.features.words import Words

__all__ = [
    "FEATURES",
    "active_features",
    "carried_features",
    "feature_modules",
    "feature_named",
    "read_resources",
    "vocabularies_from_state",
]

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


def feature_modules(model: Mapping, network: Any) -> list[tuple[Feature, Any]]:
    """(feature, its module) of each feature of a model with this config ``model`` section
    (a dict) that has a module on ``network`` (the torch tagger), in order."""
    found = []
    for feature in active_features(model):
        module = getattr(network, feature.module_name, None) if feature.module_name else None
        if module is not None:
            found.append((feature, module))
    return found


def read_resources(config: Any) -> dict[str, Any]:
    """What the ``Config``'s model's features keep in its vocabularies, read from the files
    the config names, by :attr:`Feature.vocabulary_key` in registry order."""
    resources = {}
    for feature in active_features(dataclasses.asdict(config.model)):
        resource = feature.read_resource(config)
        if resource is not None:
            resources[feature.vocabulary_key] = resource
    return resources


def vocabularies_from_state(state: dict) -> Vocabularies:
    """:meth:`Vocabularies.from_state`, each feature's entry read back by the feature."""
    decoders = {f.vocabulary_key: f.resource_from_state for f in FEATURES if f.vocabulary_key}
    return Vocabularies.from_state(state, decoders)


def feature_named(name: str) -> Feature:
    """The feature whose batch field is ``name``; KeyError if none."""
    for feature in FEATURES:
        if feature.name == name:
            return feature
    raise KeyError(name)


assert len({feature.name for feature in FEATURES}) == len(FEATURES), "feature names must differ"
assert {feature.stage for feature in FEATURES} <= {INPUT, STATES, SPARSE}
