"""Sentences as padded index arrays in NumPy, without torch: what the batch builder
(:mod:`crftag.data.batching`) wraps in tensors and the torch-free runtime feeds its network.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Iterator, Sequence
from itertools import chain

import numpy as np

from crftag.data.vocab import Vocabularies

__all__ = [
    "MAX_DOCUMENT_SENTENCES",
    "batch_rows",
    "bucketed_batches",
    "document_batches",
    "group_ids",
    "index_arrays",
    "pieces",
    "token_cache",
    "word_chars",
]

# Sentences of one document pooled together at most (document context): CoNLL-2003's longest
# document has 197; a file with a single marker at its top must not become one giant batch.
MAX_DOCUMENT_SENTENCES = 256


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
                vocabularies.chars.indices(word_chars(token, vocabularies.max_word_chars)),
            )
        return found


class _GroupKeys(dict):
    """token -> the key :func:`group_ids` compares it by (its word key, lower-cased), bounded
    as :class:`_TokenCache` is: the regular expression of the word key is the costly part."""

    limit = 200_000

    def key(self, token: str, vocabularies: Vocabularies) -> str:
        found = self.get(token)
        if found is None:
            if len(self) >= self.limit:
                self.clear()
            found = self[token] = vocabularies.word_key(token).lower()
        return found


def word_chars(token: str, limit: int) -> str:
    """The characters of ``token`` the character encoder reads: all of them up to ``limit``,
    else the first and the last ``limit // 2`` (one more at the front when odd). A word's shape
    is in its prefix and suffix (``http``, ``.com``, ``-ing``), and the cap keeps one long token
    (a URL, a 1 MB "word") from making every word of its batch that many steps long."""
    if len(token) <= limit:
        return token
    back = limit // 2
    return token[: limit - back] + token[len(token) - back :]


def token_cache(vocabularies: Vocabularies) -> _TokenCache:
    return vocabularies.__dict__.setdefault("_token_cache", _TokenCache())


def index_arrays(
    sentences: Sequence[Sequence[str]], vocabularies: Vocabularies
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """words (B, T), chars (B, T, C) int64, 0 = padding, and lengths (B,) of some sentences
    (each at least one token), built with a few whole-batch array operations."""
    cache = token_cache(vocabularies)
    found = cache.get  # most tokens are found: a plain get, the method call only for new ones
    looked_up = [
        entry if (entry := found(token)) is not None else cache.lookup(token, vocabularies)
        for tokens in sentences
        for token in tokens
    ]
    lengths = np.fromiter(map(len, sentences), np.int64, len(sentences))
    batch_size, max_length = len(sentences), int(lengths.max())
    word_chars = np.fromiter((len(chars) for _, chars in looked_up), np.int64, len(looked_up))
    max_chars = max(1, int(word_chars.max()))
    # Flat position of every real token in the (B, T) grid, row after row.
    starts = np.cumsum(lengths) - lengths
    token_rows = np.repeat(np.arange(batch_size), lengths)
    token_cols = np.arange(len(looked_up)) - np.repeat(starts, lengths)
    token_slots = token_rows * max_length + token_cols
    words = np.zeros(batch_size * max_length, np.int64)
    words[token_slots] = np.fromiter((word for word, _ in looked_up), np.int64, len(looked_up))
    # Flat position of every character in the (B, T, C) grid.
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


def group_ids(
    sentences: Sequence[Sequence[str]], documents: Sequence[Hashable], vocabularies: Vocabularies
) -> np.ndarray:
    """(B, T) long ids, T the longest sentence: the same id for every occurrence of a word in
    one document, compared lower-cased with digits normalised (the unknown words too: two
    occurrences of one unseen name share an id). Padding gets the id after the last word's.
    """
    word_keys = vocabularies.__dict__.setdefault("_group_keys", _GroupKeys())
    found = word_keys.get  # as in index_arrays: the method call only for unseen tokens
    keys: dict[tuple, int] = {}
    ids = [
        keys.setdefault(
            (
                document,
                key if (key := found(token)) is not None else word_keys.key(token, vocabularies),
            ),
            len(keys),
        )
        for tokens, document in zip(sentences, documents, strict=True)
        for token in tokens
    ]
    lengths = np.fromiter(map(len, sentences), np.int64, len(sentences))
    max_length = int(lengths.max())
    # Every real token's flat position in the (B, T) grid, row after row; the rest is padding.
    slots = np.repeat(
        np.arange(len(sentences)) * max_length - (np.cumsum(lengths) - lengths), lengths
    )
    groups = np.full(len(sentences) * max_length, len(keys), dtype=np.int64)
    groups[slots + np.arange(len(ids))] = ids
    return groups.reshape(len(sentences), max_length)


def document_batches(
    documents: Sequence[Hashable],
    batch_size: int,
    rng: random.Random | None = None,
    lengths: Sequence[int] | None = None,
) -> list[list[int]]:
    """Split sentence indices into batches of whole documents.

    A document is a run of consecutive sentences with the same ``documents`` entry. Documents
    are taken in order (shuffled with ``rng``, for training) and packed into a batch until it
    holds at least ``batch_size`` sentences, so a model can pool over a whole document. A
    document of more than ``MAX_DOCUMENT_SENTENCES`` is cut into parts of that many. With the
    sentences' ``lengths``, documents are packed in the order of their longest sentence (ties
    in the shuffled order) and the batches then shuffled: a batch pads every sentence to its
    longest, so at 256 sentences a batch this halves the padding of CoNLL-2003 (73% to 52% of
    the grid).
    """
    runs: list[list[int]] = []
    for index, document in enumerate(documents):
        if runs and documents[runs[-1][0]] == document and len(runs[-1]) < MAX_DOCUMENT_SENTENCES:
            runs[-1].append(index)
        else:
            runs.append([index])
    if rng is not None:
        rng.shuffle(runs)
    if lengths is not None:
        runs.sort(key=lambda run: max(lengths[index] for index in run))  # stable
    batches: list[list[int]] = []
    current: list[int] = []
    for run in runs:
        current.extend(run)
        if len(current) >= batch_size:
            batches.append(current)
            current = []
    if current:
        batches.append(current)
    if lengths is not None and rng is not None:
        rng.shuffle(batches)
    return batches


def bucketed_batches(
    lengths: Sequence[int], batch_size: int, rng: random.Random | None = None
) -> list[list[int]]:
    """Split sentence indices into batches of similar length.

    With ``rng`` (training) the order is sorted by length with random tie-breaking and the batch
    order is shuffled, so every epoch sees different batches; without it (evaluation, predict) the
    batches are deterministic, longest first.
    """
    if rng is None:
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    else:
        keys = [(length, rng.random()) for length in lengths]
        order = sorted(range(len(lengths)), key=lambda i: keys[i])
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    if rng is not None:
        rng.shuffle(batches)
    return batches


def pieces(
    sentences: Sequence[Sequence[str]], max_length: int
) -> tuple[list[Sequence[str]], list[int]]:
    """Sentences cut into pieces of at most ``max_length`` tokens, and each piece's sentence
    (an empty sentence is one empty piece)."""
    cut: list[Sequence[str]] = []
    owners: list[int] = []
    for index, tokens in enumerate(sentences):
        for start in range(0, max(len(tokens), 1), max_length):
            cut.append(tokens[start : start + max_length])
            owners.append(index)
    return cut, owners


def batch_rows(
    sentences: Sequence[Sequence[str]],
    batch_size: int,
    documents: Sequence[Hashable] | None,
    document_context: bool,
) -> Iterator[tuple[list[int], list[Hashable] | None]]:
    """How a tagger batches some sentences: (indices into ``sentences``, and for a model with
    document context each one's document key, else None) per batch of non-empty sentences.

    Longest first; or, for a model with document context given ``documents`` (one entry per
    sentence, equal for the consecutive sentences of one document), whole documents a batch.
    Without ``documents`` each sentence is a document of its own.
    """
    non_empty = [i for i, tokens in enumerate(sentences) if tokens]
    if document_context and documents is not None:
        order = document_batches([documents[i] for i in non_empty], batch_size)
    else:
        order = bucketed_batches([len(sentences[i]) for i in non_empty], batch_size)
    for rows in order:
        indices = [non_empty[row] for row in rows]
        keys = None
        if document_context:
            keys = indices if documents is None else [documents[i] for i in indices]
        yield indices, keys
