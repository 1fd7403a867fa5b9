"""Hashed token features (``model.encoder: features``): the classic feature CRF's sparse
features of each token and its neighbours, hashed into ``model.feature_buckets`` buckets
(:class:`crftag.data.features.FeatureHasher`), whose weights the feature CRF sums into its
emissions (:class:`crftag.nn.taggers.FeatureCRF`, which owns the weights).

Its values: (B, T, F) long bucket ids, 0 at padding, made with torch (the hasher's cache keeps
each word's ids as a tensor). A feature CRF is neither exported to arrays nor to ONNX: the
export holds a BiLSTM-CRF.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crftag.features.base import SPARSE, Feature, TextBatch

__all__ = ["Hashed"]


class Hashed(Feature):
    name = "hashed"
    key = "model.encoder"
    stage = SPARSE
    onnx_refusal = "takes a BiLSTM-CRF, not the feature CRF"

    def active(self, model: Mapping) -> bool:
        return model["encoder"] == "features"

    def encodes(self, vocabularies) -> bool:
        return bool(vocabularies.feature_buckets)

    def _hasher(self, vocabularies):
        """The vocabularies' hasher, made once (it caches each word's ids)."""
        hasher = vocabularies.__dict__.get("_feature_hasher")
        if hasher is None:
            from crftag.data.features import FeatureHasher

            hasher = FeatureHasher(vocabularies.feature_buckets)
            vocabularies.__dict__["_feature_hasher"] = hasher
        return hasher

    def encode(self, text: TextBatch) -> Any:
        """(T, F) long ids of the one sentence."""
        return self._hasher(text.vocabularies)(text.sentences[0])

    def arrays(self, text: TextBatch) -> list:
        """Each sentence's (T, F) ids: the torch tagger alone reads them."""
        hasher = self._hasher(text.vocabularies)
        return [hasher(tokens) for tokens in text.sentences]

    def tensors(self, arrays: Sequence) -> Any:
        return self.collate(arrays, max(len(ids) for ids in arrays))
