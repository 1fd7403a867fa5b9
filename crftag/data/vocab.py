"""Vocabularies: words, characters and tags, each a list of strings and the reverse map.

Index 0 of the word and character vocabularies is padding and index 1 the unknown symbol; the tag
vocabulary has neither (padded tag positions are masked out instead).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["PAD", "UNK", "Vocabulary", "normalize_word"]

PAD = "<pad>"
UNK = "<unk>"
_DIGIT = re.compile(r"\d")


def normalize_word(word: str, *, lowercase: bool, normalize_digits: bool) -> str:
    """The form a word is looked up by: optionally lower-cased, every digit optionally ``0``."""
    if lowercase:
        word = word.lower()
    if normalize_digits:
        word = _DIGIT.sub("0", word)
    return word


@dataclass
class Vocabulary:
    """An ordered list of symbols; ``index`` maps a symbol to its position.

    With ``has_unknown`` an unseen symbol maps to 1 (``UNK``); without it, an unseen symbol is a
    ``KeyError`` for the caller to report.
    """

    symbols: list[str]
    has_unknown: bool = True

    def __post_init__(self) -> None:
        self._index = {symbol: i for i, symbol in enumerate(self.symbols)}
        if len(self._index) != len(self.symbols):
            raise ValueError("expected distinct symbols in a vocabulary")

    @classmethod
    def build(cls, counts: Counter[str], *, min_freq: int = 1, specials: bool = True) -> Vocabulary:
        """Symbols seen at least ``min_freq`` times, most frequent first (ties alphabetical)."""
        kept = sorted(
            (symbol for symbol, count in counts.items() if count >= min_freq),
            key=lambda symbol: (-counts[symbol], symbol),
        )
        head = [PAD, UNK] if specials else []
        return cls(head + [s for s in kept if s not in (PAD, UNK)], has_unknown=specials)

    def __len__(self) -> int:
        return len(self.symbols)

    def __contains__(self, symbol: str) -> bool:
        return symbol in self._index

    def index(self, symbol: str) -> int:
        if self.has_unknown:
            return self._index.get(symbol, 1)
        return self._index[symbol]

    def indices(self, symbols: Iterable[str]) -> list[int]:
        return [self.index(symbol) for symbol in symbols]

    def extend(self, symbols: Iterable[str]) -> None:
        """Append symbols not yet present, in order."""
        for symbol in symbols:
            if symbol not in self._index:
                self._index[symbol] = len(self.symbols)
                self.symbols.append(symbol)

    def to_state(self) -> dict:
        return {"symbols": list(self.symbols), "has_unknown": self.has_unknown}

    @classmethod
    def from_state(cls, state: dict) -> Vocabulary:
        return cls(list(state["symbols"]), has_unknown=bool(state["has_unknown"]))
