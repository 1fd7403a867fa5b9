"""Vocabularies: words, characters and tags, each a list of strings and the reverse map, and the
one rule by which a word is looked up.

Index 0 of the word and character vocabularies is padding and index 1 the unknown symbol; the tag
vocabulary has neither (padded tag positions are masked out instead).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["PAD", "UNK", "Vocabularies", "Vocabulary", "look_up", "normalize_word"]

PAD = "<pad>"
UNK = "<unk>"
UNKNOWN_INDEX = 1  # of UNK, in vocabularies with specials
# Look-ups scan a vocabulary's list until they have compared this many times its length, then
# build the index: a few look-ups (one sentence) cost less than indexing, many cost at most
# this many scans more.
SCANS_BEFORE_INDEX = 4
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
        self._built: dict[str, int] | None = None
        self._scanned = 0  # symbols compared by look-ups before the index was built

    @property
    def _index(self) -> dict[str, int]:
        """symbol -> position, built on first need: a 100,000-word vocabulary takes about
        12 ms to index (zip in C, half the time of a comprehension), most of a one-sentence
        ``crftag predict`` that needs a handful of look-ups."""
        if self._built is None:
            self._built = dict(zip(self.symbols, range(len(self.symbols)), strict=True))
            if len(self._built) != len(self.symbols):
                self._built = None
                raise ValueError("expected distinct symbols in a vocabulary")
        return self._built

    def _position(self, symbol: str) -> int | None:
        """The symbol's index: by scanning the list (0.7 ms for 100,000 words, less for the
        frequent ones at its head) until the scans have compared as many symbols as
        ``SCANS_BEFORE_INDEX`` full scans, then by the index. A scan finds a symbol's first
        place; symbols are distinct (checked where a model is read, and when indexing)."""
        if self._built is not None:
            return self._built.get(symbol)
        if self._scanned >= SCANS_BEFORE_INDEX * len(self.symbols):
            return self._index.get(symbol)
        try:
            position = self.symbols.index(symbol)
        except ValueError:
            self._scanned += len(self.symbols)
            return None
        self._scanned += position + 1
        return position

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
        return self._position(symbol) is not None

    def get(self, symbol: str) -> int | None:
        """The symbol's index, or None when it is not in the vocabulary."""
        return self._position(symbol)

    def index(self, symbol: str) -> int:
        position = self._position(symbol)
        if position is not None:
            return position
        if self.has_unknown:
            return UNKNOWN_INDEX
        raise KeyError(symbol)

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
    ``resources`` holds what an input feature keeps of its own (a model's dictionaries, the
    characters of its language models, its encoder's files), under the feature's key of the
    state (``Feature.vocabulary_key``); each has ``to_state()``, and the feature decodes it
    (:func:`crftag.features.registry.vocabularies_from_state`).
    """

    words: Vocabulary
    chars: Vocabulary
    tags: Vocabulary
    lowercase: bool = False
    normalize_digits: bool = True
    feature_buckets: int = 0
    # Characters of a word the character encoder reads (``model.max_word_chars``).
    max_word_chars: int = 64
    resources: dict[str, Any] = field(default_factory=dict)

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
        # Absent, a model's state is what it was before the resource's feature existed.
        for key, resource in self.resources.items():
            state[key] = resource.to_state()
        return state

    @classmethod
    def from_state(
        cls, state: dict, decoders: Mapping[str, Callable[[Any], Any]] | None = None
    ) -> Vocabularies:
        """The vocabularies of a state; each entry that ``decoders`` names (a feature's key
        -> how it reads its state back) becomes a resource, others are not read."""
        decoders = decoders or {}
        return cls(
            words=Vocabulary.from_state(state["words"]),
            chars=Vocabulary.from_state(state["chars"]),
            tags=Vocabulary.from_state(state["tags"]),
            lowercase=bool(state["lowercase"]),
            normalize_digits=bool(state["normalize_digits"]),
            feature_buckets=int(state.get("feature_buckets", 0)),
            # Models written before the key read 64 characters of a word.
            max_word_chars=int(state.get("max_word_chars", 64)),
            resources={key: decode(state[key]) for key, decode in decoders.items() if key in state},
        )
