"""The character vocabulary of the character language models (``crftag pretrain``), and where
each word of a sentence begins and ends in the character sequence the models read.

A line is read as its characters framed by a boundary symbol at both ends, so the forward model
learns how lines begin and the backward model how they end; a sentence of words is read as its
words joined by single spaces (flair's "contextual string embeddings", Akbik et al. 2018).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

__all__ = ["BOUNDARY", "CharCodes", "UNKNOWN"]

PADDING, UNKNOWN, BOUNDARY = 0, 1, 2  # the rows of the symbols that are not characters
_RESERVED = ("<pad>", "<unk>", "<boundary>")


class CharCodes:
    """Characters to codes: ``symbols[code]`` is the character (or a reserved symbol);
    ``sizes``, where a tagger reads the models, their ``char_dim`` and ``hidden_size``."""

    def __init__(self, symbols: list[str], sizes: dict | None = None) -> None:
        self.symbols = symbols
        self.index = {symbol: code for code, symbol in enumerate(symbols)}
        self.sizes = dict(sizes or {})

    def to_state(self) -> dict:
        return {"symbols": list(self.symbols), **self.sizes}

    @classmethod
    def from_state(cls, state: dict) -> CharCodes:
        return cls(list(state["symbols"]), {k: int(v) for k, v in state.items() if k != "symbols"})

    @classmethod
    def counted(cls, lines: Iterable[str], max_symbols: int) -> CharCodes:
        """The ``max_symbols`` most frequent characters of ``lines`` (ties by code point), after
        the reserved symbols; the others read as unknown."""
        counts = Counter(character for line in lines for character in line)
        ranked = sorted(counts, key=lambda character: (-counts[character], character))
        return cls([*_RESERVED, *ranked[: max(0, max_symbols - len(_RESERVED))]])

    def __len__(self) -> int:
        return len(self.symbols)

    def encode(self, text: str) -> list[int]:
        """The codes of ``text`` framed by the boundary symbol: len(text) + 2 codes."""
        codes = [self.index.get(character, UNKNOWN) for character in text]
        return [BOUNDARY, *codes, BOUNDARY]

    def encode_words(self, words: list[str]) -> tuple[list[int], list[int], list[int]]:
        """(codes of the words joined by spaces, framed; ``lasts``: each word's last character's
        position in the codes; ``firsts``: its first character's). The forward model's state at
        ``lasts[i]`` has read word i whole from the left, the backward model's at ``firsts[i]``
        has read it whole from the right."""
        firsts, lasts = [], []
        position = 1  # after the boundary symbol
        for word in words:
            firsts.append(position)
            lasts.append(position + len(word) - 1)
            position += len(word) + 1
        return self.encode(" ".join(words)), lasts, firsts
