"""Sentences as padded index arrays in NumPy, without torch: what the batch builder
(:mod:`crftag.data.batching`) wraps in tensors and the torch-free runtime feeds its network.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np

from crftag.data.vocab import Vocabularies

__all__ = ["MAX_WORD_CHARS", "index_arrays", "token_cache"]

# Characters of a word the character encoder sees: a word's shape is in its first few dozen
# characters, and a cap keeps one 1 MB "word" from making a (B, T, 1M) tensor.
MAX_WORD_CHARS = 64


class _TokenCache(dict):
    """token -> (word index, character indices), bounded: text repeats its words, so most
    look-ups are found here; the cap keeps an endless stream from growing it without end."""

    limit = 200_000

    def lookup(self, token: str, vocabularies: Vocabularies) -> tuple[int, list[int]]:
        found = self.get(token)
        if found is None:
            if len(self) >= self.limit:
                self.clear()
            found = self[token] = (
                vocabularies.word_index(token),
                vocabularies.chars.indices(token[:MAX_WORD_CHARS]),
            )
        return found


def token_cache(vocabularies: Vocabularies) -> _TokenCache:
    return vocabularies.__dict__.setdefault("_token_cache", _TokenCache())


def index_arrays(
    sentences: Sequence[Sequence[str]], vocabularies: Vocabularies
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """words (B, T), chars (B, T, C) int64, 0 = padding, and lengths (B,) of some sentences
    (each at least one token), built with a few whole-batch array operations."""
    cache = token_cache(vocabularies)
    looked_up = [cache.lookup(token, vocabularies) for tokens in sentences for token in tokens]
    lengths = np.fromiter((len(tokens) for tokens in sentences), np.int64, len(sentences))
    batch_size, max_length = len(sentences), int(lengths.max())
    max_chars = max(1, max(len(chars) for _, chars in looked_up))
    # Flat position of every real token in the (B, T) grid, row after row.
    starts = np.cumsum(lengths) - lengths
    token_rows = np.repeat(np.arange(batch_size), lengths)
    token_cols = np.arange(len(looked_up)) - np.repeat(starts, lengths)
    token_slots = token_rows * max_length + token_cols
    words = np.zeros(batch_size * max_length, np.int64)
    words[token_slots] = np.fromiter((word for word, _ in looked_up), np.int64, len(looked_up))
    # Flat position of every character in the (B, T, C) grid.
    word_chars = np.fromiter((len(chars) for _, chars in looked_up), np.int64, len(looked_up))
    char_starts = np.cumsum(word_chars) - word_chars
    char_slots = np.repeat(token_slots * max_chars - char_starts, word_chars) + np.arange(
        int(word_chars.sum())
    )
    chars = np.zeros(batch_size * max_length * max_chars, np.int64)
    chars[char_slots] = np.fromiter(
        chain.from_iterable(chars for _, chars in looked_up), np.int64, len(char_slots)
    )
    return (
        words.reshape(batch_size, max_length),
        chars.reshape(batch_size, max_length, max_chars),
        lengths,
    )
