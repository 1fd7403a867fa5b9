"""Dictionaries of entity names as token features: for each type, the BIOES position of every
token in the longest dictionary entry that covers it.

A dictionary file holds one entry a line (read by :mod:`crftag.data.lines`: UTF-8 with or
without a BOM, plain or compressed; blank lines skipped). An entry of several
words is split into tokens at white space, so write it tokenized as the data is (``Parkinson
's disease`` for Penn Treebank tokens, which is what ``crftag predict`` makes of raw text).
Entries and tokens are compared after Unicode NFKC normalisation and case folding (``Aspirin``,
``ASPIRIN`` and ``aspirin`` are one entry). Matching runs left to right: at each token the
longest entry that starts there is taken and matching resumes after it, so entries of one type
never overlap; each type is matched independently of the others.

The entries travel inside the model (the vocabularies' state), so a model tags with the
dictionaries it was trained with wherever it is loaded, with or without torch.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np

from crftag.data.lines import open_binary, read_lines
from crftag.errors import CrftagError

__all__ = ["FEATURE_SIZE", "POSITIONS", "Lexicon", "Lexicons", "lexicon_arrays", "read_lexicons"]

# A token's value for one type: outside every entry, or its place in the entry matched.
POSITIONS = ("O", "B", "I", "E", "S")
_OUTSIDE, _BEGIN, _INSIDE, _END, _SINGLE = range(len(POSITIONS))
# The size of the learned vector of each type's position: a few numbers say all five positions
# hold, and the BiLSTM's input grows by this much per type.
FEATURE_SIZE = 8


@lru_cache(maxsize=1 << 17)
def token_key(token: str) -> str:
    """The form a token and an entry's tokens are compared in: NFKC, case-folded."""
    return unicodedata.normalize("NFKC", token).casefold()


class Lexicon:
    """The entries of one type (each a tuple of tokens), kept as tuples of token keys, with
    every proper prefix of an entry so a match stops as soon as no longer entry can follow."""

    def __init__(self, entries: Sequence[tuple[str, ...]]) -> None:
        self.entries = {tuple(token_key(token) for token in entry) for entry in entries}
        self.prefixes = {entry[:n] for entry in self.entries for n in range(1, len(entry))}

    def positions(self, keys: Sequence[str]) -> list[int]:
        """The :data:`POSITIONS` index of each token of a sentence (its token keys)."""
        found = [_OUTSIDE] * len(keys)
        start = 0
        while start < len(keys):
            longest = 0
            for stop in range(start + 1, len(keys) + 1):
                piece = tuple(keys[start:stop])
                if piece in self.entries:
                    longest = stop - start
                if piece not in self.prefixes:
                    break
            if longest == 1:
                found[start] = _SINGLE
            elif longest > 1:
                found[start : start + longest] = [_INSIDE] * longest
                found[start], found[start + longest - 1] = _BEGIN, _END
            start += max(longest, 1)
        return found


class Lexicons:
    """The dictionaries of a model: ``types`` in order, each with its :class:`Lexicon`."""

    def __init__(self, entries: Mapping[str, Sequence[tuple[str, ...]]]) -> None:
        self.types = list(entries)
        self.lexicons = [Lexicon(entries[name]) for name in self.types]

    def features(self, tokens: Sequence[str]) -> list[list[int]]:
        """(T, L): each token's position in each type's match."""
        keys = [token_key(token) for token in tokens]
        columns = [lexicon.positions(keys) for lexicon in self.lexicons]
        return [list(row) for row in zip(*columns, strict=True)] if tokens else []

    def to_state(self) -> dict[str, str]:
        """Each type's entries, one a line, tokens joined by spaces (tokens hold none): a few
        long strings, cheap to store and to check."""
        return {
            name: "\n".join(sorted(" ".join(entry) for entry in lexicon.entries))
            for name, lexicon in zip(self.types, self.lexicons, strict=True)
        }

    @classmethod
    def from_state(cls, state: Mapping[str, str]) -> Lexicons:
        return cls(
            {
                name: [tuple(line.split(" ")) for line in text.split("\n") if line]
                for name, text in state.items()
            }
        )


def lexicon_arrays(sentences: Sequence[Sequence[str]], lexicons: Lexicons) -> np.ndarray:
    """(B, T, L) int64 positions of some sentences, T the longest; 0 (outside) at padding."""
    longest = max((len(tokens) for tokens in sentences), default=0)
    found = np.zeros((len(sentences), longest, len(lexicons.types)), dtype=np.int64)
    for row, tokens in enumerate(sentences):
        if tokens:
            found[row, : len(tokens)] = lexicons.features(tokens)
    return found


def read_lexicons(files: Mapping[str, str]) -> Lexicons:
    """The dictionaries of ``model.lexicons`` (type -> file), each file read in full."""
    return Lexicons({name: _read_entries(name, path) for name, path in files.items()})


def _read_entries(name: str, path: str) -> list[tuple[str, ...]]:
    entries = []
    try:
        with open_binary(path) as stream:
            for _, text in read_lines(stream, path):
                tokens = text.split()
                if tokens:
                    entries.append(tuple(tokens))
    except CrftagError as error:
        raise CrftagError(f"model.lexicons.{name}: {error}") from None
    if not entries:
        raise CrftagError(f"model.lexicons.{name}: {path}: no entries (one a line)")
    return entries
