"""Sparse token features for the linear feature CRF, hashed into a fixed number of buckets.

The templates are the classic ones of feature CRFs for named entities and parts of speech
(Collins' notes; CRFsuite's examples): the word, its lower-cased form, its prefixes and suffixes
of one to four characters, its shape and its casing class, for the token itself and for its
neighbours at -2, -1, +1 and +2, plus one bias feature. Every (offset, template, value) triple is
hashed to one bucket in ``1 .. buckets``; bucket 0 is padding. A token has the same number of
features wherever it stands (beyond the sentence edges, neighbours are boundary markers), so a
sentence's features form a dense ``(T, F)`` index tensor and emissions are a sum of ``F`` looked-up
weight rows: no Python loop per token on the hot path.

Hashes are CRC-32, stable across processes and machines (Python's ``hash`` is salted per process),
so a saved model finds its weights again. Each distinct word's ids are computed once and cached.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

import torch

__all__ = ["NUM_FEATURES", "OFFSETS", "FeatureHasher", "token_values"]

OFFSETS = (-2, -1, 0, 1, 2)
TEMPLATES = (
    "word",
    "lower",
    "prefix1",
    "prefix2",
    "prefix3",
    "prefix4",
    "suffix1",
    "suffix2",
    "suffix3",
    "suffix4",
    "shape",
    "casing",
)
# One bias feature, then every template at every offset.
NUM_FEATURES = 1 + len(OFFSETS) * len(TEMPLATES)

_UPPER = re.compile(r"[A-Z]+")
_LOWER = re.compile(r"[a-z]+")
_DIGIT = re.compile(r"[0-9]+")


def _shape(word: str) -> str:
    """'McDonald's' -> 'XxXx'x': runs of upper, lower and digit characters collapsed to one."""
    shape = _UPPER.sub("X", word)
    shape = _LOWER.sub("x", shape)
    return _DIGIT.sub("d", shape)


def _casing(word: str) -> str:
    if word.isdigit():
        return "number"
    if any(c.isdigit() for c in word):
        return "has-digit"
    if word.isupper():
        return "upper"
    if word.istitle():
        return "title"
    if word.islower():
        return "lower"
    if not any(c.isalpha() for c in word):
        return "punct"
    return "mixed"


def token_values(word: str) -> tuple[str, ...]:
    """The value of every template in :data:`TEMPLATES` for one word, in that order."""
    lower = word.lower()
    return (
        word,
        lower,
        *(word[:n] for n in range(1, 5)),
        *(word[-n:] for n in range(1, 5)),
        _shape(word),
        _casing(word),
    )


class FeatureHasher:
    """Sentences to ``(T, NUM_FEATURES)`` long tensors of bucket ids in ``1 .. buckets``."""

    cache_limit = 200_000

    def __init__(self, buckets: int) -> None:
        if buckets < 1:
            raise ValueError(f"expected at least 1 bucket, got {buckets}")
        self.buckets = buckets
        self._cache: dict[str, torch.Tensor] = {}
        self._before = self._boundary("<s>")
        self._after = self._boundary("</s>")
        self._bias = self._hash("bias")

    def _hash(self, feature: str) -> int:
        return zlib.crc32(feature.encode("utf-8", "surrogatepass")) % self.buckets + 1

    def _ids(self, values: Sequence[str]) -> torch.Tensor:
        """(len(OFFSETS), len(TEMPLATES)): the ids one word gives at each offset from a token."""
        return torch.tensor(
            [
                [
                    self._hash(f"{offset}|{name}|{value}")
                    for name, value in zip(TEMPLATES, values, strict=True)
                ]
                for offset in OFFSETS
            ],
            dtype=torch.long,
        )

    def _boundary(self, marker: str) -> torch.Tensor:
        return self._ids([marker] * len(TEMPLATES))

    def _word(self, word: str) -> torch.Tensor:
        found = self._cache.get(word)
        if found is None:
            if len(self._cache) >= self.cache_limit:
                self._cache.clear()
            found = self._cache[word] = self._ids(token_values(word))
        return found

    def __call__(self, tokens: Sequence[str]) -> torch.Tensor:
        """Feature ids (T, NUM_FEATURES) of one sentence of T >= 1 tokens."""
        edge = max(OFFSETS)
        rows = torch.stack(
            [self._before] * edge + [self._word(token) for token in tokens] + [self._after] * edge
        )  # (T + 2 * edge, len(OFFSETS), len(TEMPLATES))
        length = len(tokens)
        # Token i's features at offset o come from the word at i + o, from that word's o-row.
        columns = [rows[edge + o : edge + o + length, k] for k, o in enumerate(OFFSETS)]
        bias = torch.full((length, 1), self._bias, dtype=torch.long)
        return torch.cat([bias, *columns], dim=1)
