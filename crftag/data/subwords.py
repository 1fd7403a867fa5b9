"""Words and a pretrained encoder's subwords: which subwords make each word, and the windows a
sentence longer than the encoder reads is split into.

Torch-free: the tokenizer is any Hugging Face fast tokenizer (it only needs to be callable with
``is_split_into_words`` and to give ``word_ids``), and everything returned is plain lists.

A sentence of S subwords, more than the W an encoder window holds, is read as windows of W
subwords that start every W // 2 subwords (the last one ending at the sentence's end), so
neighbouring windows overlap by half. Each subword takes its states from the window in which it
is farthest from an edge: every subword is read with at least W // 4 subwords of context on
each side that the sentence has, and none is ever cut off.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crftag.errors import CrftagError

__all__ = [
    "POOLINGS",
    "EncoderFiles",
    "Subwords",
    "assign_windows",
    "special_frame",
    "subwords_of",
    "window_starts",
]

POOLINGS = ("first", "mean")  # how a word's subwords' states become the word's


@dataclass(frozen=True)
class EncoderFiles:
    """A pretrained encoder's description as a model file keeps it, beside its weights: its
    ``config.json`` as a dict, and its tokenizer's files ``{file name: text}`` as
    ``save_pretrained`` writes them (``tokenizer.json`` and its settings)."""

    config: dict
    tokenizer: dict[str, str]

    def to_state(self) -> dict:
        return {"config": dict(self.config), "tokenizer": dict(self.tokenizer)}

    @classmethod
    def from_state(cls, state: dict) -> EncoderFiles:
        return cls(dict(state["config"]), dict(state["tokenizer"]))


@dataclass(frozen=True)
class Subwords:
    """One sentence's subwords.

    ids     the subword ids, S of them, without the encoder's special tokens
    starts  (T,) each word's first subword's position in ``ids``
    counts  (T,) how many subwords each word has, at least 1
    """

    ids: list[int]
    starts: list[int]
    counts: list[int]


def subwords_of(tokenizer, sentences: Sequence[Sequence[str]]) -> list[Subwords]:
    """Each sentence's subwords, by one call of ``tokenizer`` on the batch. A word the tokenizer
    makes nothing of (a zero-width or control character) is read as the unknown token, so every
    word has a state."""
    words = [list(tokens) for tokens in sentences]
    encodings = tokenizer(words, is_split_into_words=True, add_special_tokens=False)
    # Read once: a bare tokenizer's encodings build the whole batch's list on each read.
    batch_ids = encodings["input_ids"]
    found = []
    for row, tokens in enumerate(words):
        ids, word_ids = batch_ids[row], encodings.word_ids(row)
        if len(set(word_id for word_id in word_ids if word_id is not None)) < len(tokens):
            ids, word_ids = _with_unknown_words(tokenizer, tokens, word_ids)
        found.append(_aligned(ids, word_ids, len(tokens)))
    return found


def _with_unknown_words(tokenizer, tokens: list[str], word_ids: list) -> tuple[list, list]:
    """(ids, word_ids) of ``tokens`` with each word that has no subword replaced by the
    tokenizer's unknown token."""
    present = set(word_ids)
    if tokenizer.unk_token is None:
        missing = next(token for i, token in enumerate(tokens) if i not in present)
        raise CrftagError(
            f"model.transformer: its tokenizer makes nothing of the token {missing[:40]!r} and "
            "has no unknown token to read it as"
        )
    replaced = [token if i in present else tokenizer.unk_token for i, token in enumerate(tokens)]
    encoding = tokenizer(replaced, is_split_into_words=True, add_special_tokens=False)
    return encoding["input_ids"], encoding.word_ids()


def _aligned(ids: list[int], word_ids: list, num_words: int) -> Subwords:
    starts = [-1] * num_words
    counts = [0] * num_words
    for position, word in enumerate(word_ids):
        if word is None:
            continue
        if starts[word] < 0:
            starts[word] = position
        counts[word] += 1
    if min(counts, default=1) == 0:
        raise ValueError("the tokenizer gave a word no subwords, even as its unknown token")
    return Subwords(list(ids), starts, counts)


def special_frame(tokenizer) -> tuple[list[int], list[int]]:
    """(the special-token ids before a sentence's subwords, those after): what the tokenizer's
    own post-processing puts round one sequence (``[CLS] ... [SEP]`` for BERT, ``<s> ... </s>``
    for RoBERTa), found by encoding one word with and without special tokens.

    Asked of the tokenizer's call rather than of ``build_inputs_with_special_tokens``, which
    transformers 5 no longer has: the call means the same under transformers 4 and 5 and under a
    bare ``tokenizers`` tokenizer wrapped to answer it.
    """
    plain = tokenizer(["a"], is_split_into_words=True, add_special_tokens=False)["input_ids"]
    framed = tokenizer(["a"], is_split_into_words=True, add_special_tokens=True)["input_ids"]
    plain, framed = list(plain), list(framed)
    for start in range(len(framed) - len(plain) + 1):
        if framed[start : start + len(plain)] == plain:
            return framed[:start], framed[start + len(plain) :]
    raise ValueError("the tokenizer's special tokens do not frame a sentence's own subwords")


def window_starts(count: int, width: int) -> list[int]:
    """Where each window of ``width`` subwords starts in a sentence of ``count`` subwords: one
    window at 0 if it fits, else every ``width // 2`` subwords, the last ending at ``count``."""
    if width < 2:
        raise ValueError(f"expected a window of at least 2 subwords, got {width}")
    if count <= width:
        return [0]
    stride = width // 2
    starts = list(range(0, count - width, stride))
    return [*starts, count - width]


def assign_windows(count: int, width: int, starts: Sequence[int]) -> list[tuple[int, int]]:
    """For each of ``count`` subwords, (window, position in that window): the window among
    ``starts`` (each ``width`` long) in which the subword is farthest from the nearer edge."""
    assigned = []
    window = 0
    for position in range(count):
        # The windows are in order, so the best one only moves forward with the position.
        while window + 1 < len(starts) and _margin(position, starts[window + 1], width) >= (
            _margin(position, starts[window], width)
        ):
            window += 1
        assigned.append((window, position - starts[window]))
    return assigned


def _margin(position: int, start: int, width: int) -> int:
    """Subwords between ``position`` and the nearer edge of the window at ``start``; negative
    outside it."""
    return min(position - start, start + width - 1 - position)
