"""Vocabularies: words, characters and tags, each a list of strings and the reverse map, and the
one rule by which a word is looked up.

Index 0 of the word and character vocabularies is padding and index 1 the unknown symbol; the tag
vocabulary has neither (padded tag positions are masked out instead).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from crftag.data.char_codes import CharCodes
from crftag.data.lexicons import Lexicons

__all__ = ["PAD", "UNK", "Vocabularies", "Vocabulary", "look_up", "normalize_word"]

PAD = "<pad>"
UNK = "<unk>"
UNKNOWN_INDEX = 1  # of UNK, in vocabularies with specials
_DIGIT = re.compile(r"\d")
T = TypeVar("T")


def normalize_word(word: str, *, lowercase: bool, normalize_digits: bool) -> str:
    """The form a word is looked up by: optionally lower-cased, every digit optionally ``0``."""
    if lowercase:
        word = word.lower()
    if normalize_digits:
        word = _DIGIT.sub("0", word)
    return word


def look_up(key: str, table: Mapping[str, T]) -> T | None:
    """The one word look-up rule: a word's normalised form as it is, else lower-cased (so words
    of pretrained vectors of lower-cased text still match), else None."""
    found = table.get(key)
    return found if found is not None else table.get(key.lower())


@dataclass
class Vocabulary:
    """An ordered list of symbols; ``index`` maps a symbol to its position.

    With ``has_unknown`` an unseen symbol maps to 1 (``UNK``); without it, an unseen symbol is a
    ``KeyError`` for the caller to report.
    """

    symbols: list[str]
    has_unknown: bool = True

    def __post_init__(self) -> None:
        # zip in C: half the time of a comprehension for a 100,000-word vocabulary at load.
        self._index = dict(zip(self.symbols, range(len(self.symbols)), strict=True))
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

    def get(self, symbol: str) -> int | None:
        """The symbol's index, or None when it is not in the vocabulary."""
        return self._index.get(symbol)

    def index(self, symbol: str) -> int:
        if self.has_unknown:
            return self._index.get(symbol, UNKNOWN_INDEX)
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


@dataclass
class Vocabularies:
    """The three vocabularies of a model and how words are normalised for look-up.

    ``feature_buckets`` > 0 makes :func:`encode` add hashed sparse features (the feature CRF).
    """

    words: Vocabulary
    chars: Vocabulary
    tags: Vocabulary
    lowercase: bool = False
    normalize_digits: bool = True
    feature_buckets: int = 0
    # Characters of a word the character encoder reads (``model.max_word_chars``).
    max_word_chars: int = 64
    lexicons: Lexicons | None = None  # ``model.lexicons``' entries, matched as token features
    char_lm: CharCodes | None = None  # the characters ``model.char_lm``'s models read
    truecaser: CharCodes | None = None  # the characters ``model.truecaser`` reads, lower-cased

    def word_key(self, word: str) -> str:
        return normalize_word(
            word, lowercase=self.lowercase, normalize_digits=self.normalize_digits
        )

    def word_index(self, token: str) -> int:
        """A word's index by :func:`look_up` of its normalised form, else the unknown word."""
        index = look_up(self.word_key(token), self.words)
        return UNKNOWN_INDEX if index is None else index

    def to_state(self) -> dict:
        state = {
            "words": self.words.to_state(),
            "chars": self.chars.to_state(),
            "tags": self.tags.to_state(),
            "lowercase": self.lowercase,
            "normalize_digits": self.normalize_digits,
            "feature_buckets": self.feature_buckets,
            "max_word_chars": self.max_word_chars,
        }
        if self.lexicons is not None:  # absent, a model's state is what it was before them
            state["lexicons"] = self.lexicons.to_state()
        if self.char_lm is not None:
            state["char_lm"] = self.char_lm.to_state()
        if self.truecaser is not None:
            state["truecaser"] = self.truecaser.to_state()
        return state

    @classmethod
    def from_state(cls, state: dict) -> Vocabularies:
        return cls(
            words=Vocabulary.from_state(state["words"]),
            chars=Vocabulary.from_state(state["chars"]),
            tags=Vocabulary.from_state(state["tags"]),
            lowercase=bool(state["lowercase"]),
            normalize_digits=bool(state["normalize_digits"]),
            feature_buckets=int(state.get("feature_buckets", 0)),
            # Models written before the key read 64 characters of a word.
            max_word_chars=int(state.get("max_word_chars", 64)),
            lexicons=Lexicons.from_state(state["lexicons"]) if "lexicons" in state else None,
            char_lm=CharCodes.from_state(state["char_lm"]) if "char_lm" in state else None,
            truecaser=(CharCodes.from_state(state["truecaser"]) if "truecaser" in state else None),
        )
