"""The exported encoder's input encoding: a batch's words as the subword windows the encoder
graph reads, without torch or transformers.

The tokenizer is the model's ``tokenizer.json`` run by the ``tokenizers`` library
(:class:`BareTokenizer`), asked the same call as the torch path asks transformers' tokenizer,
so words align to subwords (:func:`crftag.data.subwords.subwords_of`, a word the tokenizer makes
nothing of read as the unknown token), windows are framed and cut
(:func:`crftag.data.subword_windows.lay_out_windows`) exactly as in training.

Shapes: B sentences, T words, W windows, L the longest window, P subwords a word is pooled over
(1 for first-subword pooling, else the most any word has).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from crftag.data.subword_windows import lay_out_windows
from crftag.data.subwords import subwords_of
from crftag.errors import CrftagError

__all__ = ["BareTokenizer", "EncoderSettings", "SubwordEncoding"]


class _Encodings:
    """What transformers' tokenizer call returns, as far as crftag reads it: ``["input_ids"]``
    and ``word_ids(row)``."""

    def __init__(self, encodings: list, batched: bool) -> None:
        self.encodings, self.batched = encodings, batched

    def __getitem__(self, key: str):
        if key != "input_ids":
            raise KeyError(key)
        ids = [encoding.ids for encoding in self.encodings]
        return ids if self.batched else ids[0]

    def word_ids(self, row: int = 0) -> list[int | None]:
        return self.encodings[row].word_ids


class BareTokenizer:
    """A ``tokenizers.Tokenizer`` from ``tokenizer.json`` text that answers a tokenizer call on
    words (``is_split_into_words``), one sentence or a batch, with no truncation or padding, as
    transformers' fast tokenizer answers it; ``unk_token`` its unknown token."""

    def __init__(self, text: str, unk_token: str) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise CrftagError(
                "an exported encoder needs the tokenizers package: pip install 'crftag[onnx]'"
            ) from None
        self.backend = Tokenizer.from_str(text)
        self.backend.no_truncation()
        self.backend.no_padding()
        self.unk_token = unk_token

    def __call__(self, words, *, is_split_into_words: bool, add_special_tokens: bool):
        if not is_split_into_words:
            raise ValueError("expected words (is_split_into_words=True)")
        batched = bool(words) and not isinstance(words[0], str)
        batch = [list(sentence) for sentence in words] if batched else [list(words)]
        encodings = self.backend.encode_batch(
            batch, is_pretokenized=True, add_special_tokens=add_special_tokens
        )
        return _Encodings(encodings, batched)


@dataclass(frozen=True)
class EncoderSettings:
    """How the exported encoder reads a sentence, as the torch model read it.

    width  subwords a window holds beside the special tokens
    frame  (special-token ids before a window's subwords, those after)
    pad_id  the id padding a window
    unk_token  what a word the tokenizer makes nothing of is read as
    pooling  "first" or "mean"
    vocabulary  the encoder's embedding rows: every id must be below it
    """

    width: int
    frame: tuple[tuple[int, ...], tuple[int, ...]]
    pad_id: int
    unk_token: str
    pooling: str
    vocabulary: int


class SubwordEncoding:
    """sentences (B token lists) -> the encoder graph's inputs: ``subword_ids`` (W, L) int64,
    ``subword_mask`` (W, L) int64 (1 on real positions), ``subword_rows`` (B, T, P) int64: 1 +
    the row of each word's subword in the windows' states flattened to (W * L, D), 0 for none
    (padding words, and a word's unused pooling slots). ``source``: the model file, which
    errors name."""

    def __init__(self, tokenizer: BareTokenizer, settings: EncoderSettings, source: str) -> None:
        self.tokenizer, self.settings, self.source = tokenizer, settings, source
        self._sized = {}  # the subwords of the sentences last sized, by their tokens

    def sizes(self, sentences: Sequence[Sequence[str]]) -> list[int]:
        """Each sentence's subwords: what its windows pad a batch to, to batch sentences of
        similar sizes together. The subwords are kept for the batches that follow, which are
        these sentences, until the next sizing."""
        pieces = subwords_of(self.tokenizer, sentences)
        self._sized = {tuple(s): found for s, found in zip(sentences, pieces, strict=True)}
        return [len(found.ids) for found in pieces]

    def _subwords(self, sentences: Sequence[Sequence[str]]) -> list:
        """Each sentence's subwords: kept from the last sizing, else found now (together)."""
        found = [self._sized.get(tuple(sentence)) for sentence in sentences]
        missing = [
            sentence for sentence, pieces in zip(sentences, found, strict=True) if pieces is None
        ]
        if missing:
            fresh = iter(subwords_of(self.tokenizer, missing))
            found = [pieces if pieces is not None else next(fresh) for pieces in found]
        return found

    def __call__(self, sentences: Sequence[Sequence[str]]) -> dict[str, np.ndarray]:
        settings = self.settings
        pieces = self._subwords(sentences)
        layout = lay_out_windows(pieces, settings.width, settings.frame)
        longest = max(map(len, layout.windows))
        ids = np.full((len(layout.windows), longest), settings.pad_id, dtype=np.int64)
        mask = np.zeros(ids.shape, dtype=np.int64)
        for row, window in enumerate(layout.windows):
            ids[row, : len(window)] = window
            mask[row, : len(window)] = 1
        if ids.max(initial=0) >= settings.vocabulary:
            raise CrftagError(
                f"{self.source}: the tokenizer gave id {int(ids.max())}, beyond the encoder's "
                f"{settings.vocabulary} embeddings: the file's tokenizer is not its encoder's"
            )
        words = max(map(len, sentences))
        width = 1 if settings.pooling == "first" else max(max(p.counts) for p in pieces)
        rows = np.zeros((len(sentences), words, width), dtype=np.int64)
        for sentence, (found, placed) in enumerate(zip(pieces, layout.places, strict=True)):
            flat = [1 + window * longest + position for window, position in placed]
            for word, (start, count) in enumerate(zip(found.starts, found.counts, strict=True)):
                taken = flat[start : start + min(count, width)]
                rows[sentence, word, : len(taken)] = taken
        return {"subword_ids": ids, "subword_mask": mask, "subword_rows": rows}
