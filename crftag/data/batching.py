"""From sentences to padded tensors, and length-bucketed minibatches.

Sentences are turned into index lists once (:func:`encode`), then each minibatch is padded to
its own longest sentence and word (:func:`collate`). Batches group sentences of similar length so
padding, and the time steps the CRF and LSTM loop over, stay few. What a batch holds of the text
is each registered feature's values (:mod:`crftag.features`): this module names none of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from crftag.data.vocab import Vocabularies
from crftag.features.base import TextBatch
from crftag.features.registry import FEATURES

__all__ = [
    "Batch",
    "Encoded",
    "build_batch",
    "collate",
    "encode",
    "encode_batch",
]

_NAMES = frozenset(feature.name for feature in FEATURES)


class _FeatureValues:
    """Attribute access to the registered features' values kept in ``inputs``:
    ``batch.words`` is ``batch.inputs["words"]``, None for a feature the batch lacks."""

    def __getattr__(self, name: str) -> Any:
        if name in _NAMES:
            return self.__dict__.get("inputs", {}).get(name)
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")


@dataclass(frozen=True)
class Encoded(_FeatureValues):
    """One sentence as index tensors, made once so collating a batch copies whole rows.

    inputs  each feature's values of the sentence by name (:meth:`Feature.encode`): ``words``
            (T,) long, ``chars`` (T, C) long, ...; read as attributes (``encoded.words``)
    tags    (T,) long, or None when unlabelled
    allowed (T, K) bool, the tags each token may take, for a sentence with unknown tags
            (:mod:`crftag.data.partial`); None when fully labelled
    """

    inputs: dict[str, Any]
    tags: torch.Tensor | None
    allowed: torch.Tensor | None = None

    def __len__(self) -> int:
        return len(self.inputs["words"])


@dataclass
class Batch(_FeatureValues):
    """A padded minibatch.

    inputs   each feature's values by name (:meth:`Feature.collate`), read as attributes:
             ``words`` (B, T) long, 0 = padding; ``chars`` (B, T, C) long, C the batch's
             longest word; ``groups`` (B, T) document group ids for a model with document
             context; ... (:mod:`crftag.features`)
    mask     (B, T) bool, true on real tokens
    lengths  (B,) long, on the CPU (what packing the LSTM needs)
    tags     (B, T) long, 0 where masked, or None when unlabelled
    allowed_tags (B, T, K) bool, or None: the tags each token may take when some sentence has
             unknown tags; a fully labelled row allows its own tag only, padding every tag
    """

    mask: torch.Tensor
    lengths: torch.Tensor
    tags: torch.Tensor | None
    allowed_tags: torch.Tensor | None = None
    inputs: dict[str, Any] = field(default_factory=dict)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _NAMES:  # a feature's values (training's word dropout replaces the words)
            self.inputs[name] = value
        else:
            object.__setattr__(self, name, value)

    def to(self, device: torch.device) -> Batch:
        return Batch(
            mask=self.mask.to(device, non_blocking=True),
            lengths=self.lengths,
            tags=None if self.tags is None else self.tags.to(device, non_blocking=True),
            allowed_tags=(
                None
                if self.allowed_tags is None
                else self.allowed_tags.to(device, non_blocking=True)
            ),
            inputs={
                feature.name: feature.to(self.inputs[feature.name], device)
                for feature in FEATURES
                if feature.name in self.inputs
            },
        )


def _encoded_features(vocabularies: Vocabularies, per_sentence: bool = True) -> list:
    """The features a model with these vocabularies carries in its batches."""
    return [
        feature
        for feature in FEATURES
        if feature.per_sentence == per_sentence and feature.encodes(vocabularies)
    ]


def encode(
    tokens: Sequence[str],
    vocabularies: Vocabularies,
    tags: Sequence[str] | None = None,
    permitted: Sequence[Collection[str] | None] | None = None,
) -> Encoded:
    """Indices of one sentence. ``tags`` must all be in the tag vocabulary (KeyError if not),
    except where ``permitted`` is given (a sentence with unknown tags): there each token's tags
    are :func:`crftag.data.partial.permitted_tags` (None: any), and the tag index of a token is
    the first of its permitted tags the vocabulary has."""
    if permitted is not None:
        return _encode_partial(tokens, vocabularies, permitted)
    text = TextBatch([tokens], vocabularies)
    return Encoded(
        inputs={f.name: f.encode(text) for f in _encoded_features(vocabularies)},
        tags=None if tags is None else torch.tensor(vocabularies.tags.indices(tags)),
    )


def _encode_partial(
    tokens: Sequence[str], vocabularies: Vocabularies, permitted: Sequence[Collection[str] | None]
) -> Encoded:
    num_tags = len(vocabularies.tags)
    allowed = torch.ones(len(tokens), num_tags, dtype=torch.bool)
    for position, tags in enumerate(permitted):
        found = (vocabularies.tags.get(tag) for tag in tags or ())
        indices = sorted(index for index in found if index is not None)
        if indices:  # a set the vocabulary cannot write at all constrains nothing
            allowed[position] = False
            allowed[position, indices] = True
    encoded = encode(tokens, vocabularies)
    tags = allowed.to(torch.uint8).argmax(1)  # (T,) the first allowed tag of each token
    return dataclasses.replace(encoded, tags=tags, allowed=allowed)


def collate(items: Sequence[Encoded]) -> Batch:
    """Pad a list of encoded sentences (each at least one token) into a :class:`Batch`."""
    lengths = torch.tensor([len(item) for item in items], dtype=torch.long)
    max_length = int(lengths.max())
    tags = None
    if items[0].tags is not None:
        tags = torch.zeros(len(items), max_length, dtype=torch.long)
        for row, item in enumerate(items):
            tags[row, : len(item)] = item.tags
    mask = torch.arange(max_length).unsqueeze(0) < lengths.unsqueeze(1)
    inputs = {
        feature.name: feature.collate([item.inputs[feature.name] for item in items], max_length)
        for feature in FEATURES
        if feature.name in items[0].inputs
    }
    return Batch(mask, lengths, tags, _allowed_tags(items, tags), inputs)


def _allowed_tags(items: Sequence[Encoded], tags: torch.Tensor | None) -> torch.Tensor | None:
    """(B, T, K) bool when some item has unknown tags: its ``allowed`` rows, the one-hot of the
    gold tags for the others, every tag at padding. None when every item is fully labelled."""
    partial = [item.allowed for item in items if item.allowed is not None]
    if not partial or tags is None:
        return None
    num_tags = partial[0].size(1)
    allowed = torch.nn.functional.one_hot(tags, num_tags).bool()  # (B, T, K)
    for row, item in enumerate(items):
        allowed[row, len(item) :] = True
        if item.allowed is not None:
            allowed[row, : item.allowed.size(0)] = item.allowed
    return allowed


def encode_batch(
    sentences: Sequence[Sequence[str]],
    vocabularies: Vocabularies,
    documents: Sequence[Hashable] | None = None,
) -> Batch:
    """Unlabelled sentences (each at least one token) straight into a padded :class:`Batch`.

    The same tensors as ``collate([encode(s, vocabularies) for s in sentences])``, each feature
    made for the whole batch (:meth:`Feature.arrays`) in a few array operations instead of
    small tensors per sentence: at predict time those cost more than the tagging they feed.
    """
    text = TextBatch(sentences, vocabularies, documents)
    lengths = torch.tensor([len(tokens) for tokens in sentences], dtype=torch.long)
    mask = torch.arange(int(lengths.max())).unsqueeze(0) < lengths.unsqueeze(1)
    inputs = {f.name: f.tensors(f.arrays(text)) for f in _encoded_features(vocabularies)}
    batch = Batch(mask, lengths, None, None, inputs)
    _add_batch_features(batch, text)
    return batch


def _add_batch_features(batch: Batch, text: TextBatch) -> None:
    """The values made for a whole batch (document groups), where the batch gives them."""
    for feature in _encoded_features(text.vocabularies, per_sentence=False):
        value = feature.tensors(feature.arrays(text))
        if value is not None:
            batch.inputs[feature.name] = value


def build_batch(
    sentences: Sequence[Sequence[str]],
    vocabularies: Vocabularies,
    *,
    encoded: Sequence[Encoded] | None = None,
    documents: Sequence[Hashable] | None = None,
) -> Batch:
    """The one way a batch is made, for training, evaluation and predict alike.

    sentences  the batch's token lists (each at least one token)
    encoded    their :func:`encode` rows when already made (training, with tags); else the
               sentences are encoded here, unlabelled
    documents  one key per sentence, equal within a document: given, ``batch.groups`` is filled
               for a model with document context (:func:`crftag.data.indices.group_ids`)
    """
    if encoded is None:
        return encode_batch(sentences, vocabularies, documents)
    batch = collate(encoded)
    _add_batch_features(batch, TextBatch(sentences, vocabularies, documents))
    return batch
