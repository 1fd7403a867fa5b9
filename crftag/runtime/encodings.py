"""Character encodings of the distinct words a network has seen, kept across batches: news text
repeats its words, so most of a batch's words need no character encoder at all."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["WordEncodings"]


class WordEncodings:
    """Character encodings of distinct words, kept across batches: at most ``capacity`` words,
    forgotten all at once when full (a bound, not a policy: one corpus rarely fills it)."""

    def __init__(self, capacity: int, char_count: int) -> None:
        self.capacity = capacity
        self.index_type = np.min_scalar_type(char_count - 1)  # the narrowest for every index
        self.slots: dict[bytes, int] = {}
        self.store = np.empty((0, 0), dtype=np.float32)  # (capacity, F) from the first word on

    def encode(self, chars: np.ndarray, encoder: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """chars (N, C) -> (N, F): ``encoder`` (M, C') -> (M, F) runs on the unseen words only."""
        distinct, inverse = _distinct_rows(chars.astype(self.index_type))  # (M, C), (N,)
        keys = _row_keys(distinct)
        slots = np.array([self.slots.get(key, -1) for key in keys], dtype=np.int64)
        unseen = np.flatnonzero(slots < 0)
        if not len(unseen):
            return self.store[slots[inverse]]
        rows = distinct[unseen]
        fresh = encoder(rows[:, : max(int((rows != 0).sum(1).max()), 1)])  # (m, F)
        encoded = np.empty((len(distinct), fresh.shape[1]), dtype=np.float32)
        seen = np.flatnonzero(slots >= 0)
        if len(seen):
            encoded[seen] = self.store[slots[seen]]
        encoded[unseen] = fresh
        self._keep([keys[i] for i in unseen], fresh)
        return encoded[inverse]

    def _keep(self, keys: list[bytes], encoded: np.ndarray) -> None:
        """Stores encoded (m, F) under keys, forgetting everything first when they would not fit."""
        if len(self.slots) + len(keys) > self.capacity:
            self.slots.clear()
        if len(keys) > self.capacity:
            return
        if self.store.shape[1] != encoded.shape[1]:
            self.store = np.empty((self.capacity, encoded.shape[1]), dtype=np.float32)
        first = len(self.slots)
        self.store[first : first + len(keys)] = encoded
        self.slots.update(zip(keys, range(first, first + len(keys)), strict=True))


def _distinct_rows(chars: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows (M, C) of chars (N, C) and each row's place among them (N,)."""
    # Each row as one opaque value: sorting compares bytes (np.unique(axis=0) compares the
    # columns one by one, several times slower).
    rows = np.ascontiguousarray(chars)
    opaque = rows.view(np.dtype((np.void, rows.itemsize * rows.shape[1]))).ravel()
    _, firsts, inverse = np.unique(opaque, return_index=True, return_inverse=True)
    return rows[firsts], inverse.reshape(-1)


def _row_keys(chars: np.ndarray) -> list[bytes]:
    """One key per row of chars (M, C), the same for a word whatever the padding width C."""
    data = np.ascontiguousarray(chars).tobytes()
    stride, size = chars.shape[1] * chars.itemsize, chars.itemsize
    return [
        data[row * stride : row * stride + length * size]
        for row, length in enumerate((chars != 0).sum(1).tolist())
    ]
