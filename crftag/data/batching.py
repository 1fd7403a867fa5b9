"""From sentences to padded tensors, and length-bucketed minibatches.

Sentences are turned into index lists once (:func:`encode`), then each minibatch is padded to
its own longest sentence and word (:func:`collate`). Batches group sentences of similar length so
padding, and the time steps the CRF and LSTM loop over, stay few.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Hashable, Sequence
from dataclasses import dataclass

import torch

from crftag.data.features import FeatureHasher
from crftag.data.indices import group_ids, index_arrays, token_cache
from crftag.data.lexicons import lexicon_arrays
from crftag.data.vocab import Vocabularies

__all__ = [
    "Batch",
    "CharLMInputs",
    "Encoded",
    "build_batch",
    "collate",
    "document_groups",
    "encode",
    "encode_batch",
]


@dataclass(frozen=True)
class Encoded:
    """One sentence as index tensors, made once so collating a batch copies whole rows.

    words  (T,) long
    chars  (T, C) long, each word's characters padded with 0 to this sentence's longest word
    tags   (T,) long, or None when unlabelled
    features  (T, F) long hashed feature ids (feature CRF), or None
    allowed   (T, K) bool, the tags each token may take, for a sentence with unknown tags
              (:mod:`crftag.data.partial`); None when fully labelled
    lexicon   (T, L) long, each token's position in each dictionary type's match
              (:mod:`crftag.data.lexicons`), or None for a model without dictionaries
    char_lm   (codes, lasts, firsts) of :meth:`crftag.data.char_codes.CharCodes.encode_words`
              for a model with character language models (``model.char_lm``), or None
    """

    words: torch.Tensor
    chars: torch.Tensor
    tags: torch.Tensor | None
    features: torch.Tensor | None = None
    allowed: torch.Tensor | None = None
    lexicon: torch.Tensor | None = None
    char_lm: tuple[list[int], list[int], list[int]] | None = None


@dataclass
class CharLMInputs:
    """What the character models read for a batch of sentences.

    codes   (B, L) long, each sentence's words joined by spaces and framed, 0 = padding
    lengths (B,) long, on the CPU
    lasts   (B, T) long, each word's last character's position in its row of ``codes``
    firsts  (B, T) long, its first character's; both 0 at padding
    """

    codes: torch.Tensor
    lengths: torch.Tensor
    lasts: torch.Tensor
    firsts: torch.Tensor

    @classmethod
    def collate(cls, encoded: Sequence[tuple[list[int], list[int], list[int]]]) -> CharLMInputs:
        """The inputs of sentences each :meth:`CharCodes.encode_words`'d, padded."""
        lengths = torch.tensor([len(coded) for coded, _, _ in encoded])
        longest = max(len(last) for _, last, _ in encoded)
        widest = max(len(coded) for coded, _, _ in encoded)
        rows = torch.zeros(len(encoded), widest, dtype=torch.long)
        lasts = torch.zeros(len(encoded), longest, dtype=torch.long)
        firsts = torch.zeros_like(lasts)
        for row, (coded, last, first) in enumerate(encoded):
            rows[row, : len(coded)] = torch.tensor(coded)
            lasts[row, : len(last)] = torch.tensor(last, dtype=torch.long)
            firsts[row, : len(first)] = torch.tensor(first, dtype=torch.long)
        return cls(rows, lengths, lasts, firsts)

    def to(self, device: torch.device) -> CharLMInputs:
        return CharLMInputs(
            self.codes.to(device), self.lengths, self.lasts.to(device), self.firsts.to(device)
        )


@dataclass
class Batch:
    """A padded minibatch.

    words    (B, T) long, 0 = padding
    chars    (B, T, C) long, 0 = padding; C is the longest word in the batch
    mask     (B, T) bool, true on real tokens
    lengths  (B,) long, on the CPU (what packing the LSTM needs)
    tags     (B, T) long, 0 where masked, or None when unlabelled
    features (B, T, F) long, 0 = padding, or None when the model uses no hashed features
    groups   (B, T) long, or None: for a model with document context, tokens of one document with
             the same word share an id (:func:`document_groups`); padding has an id of its own
    allowed_tags (B, T, K) bool, or None: the tags each token may take when some sentence has
             unknown tags; a fully labelled row allows its own tag only, padding every tag
    lexicon  (B, T, L) long dictionary positions, 0 at padding, or None (no dictionaries)
    char_lm  what the character language models read (``model.char_lm``), or None
    """

    words: torch.Tensor
    chars: torch.Tensor
    mask: torch.Tensor
    lengths: torch.Tensor
    tags: torch.Tensor | None
    features: torch.Tensor | None = None
    groups: torch.Tensor | None = None
    allowed_tags: torch.Tensor | None = None
    lexicon: torch.Tensor | None = None
    char_lm: CharLMInputs | None = None

    def to(self, device: torch.device) -> Batch:
        return Batch(
            words=self.words.to(device, non_blocking=True),
            chars=self.chars.to(device, non_blocking=True),
            mask=self.mask.to(device, non_blocking=True),
            lengths=self.lengths,
            tags=None if self.tags is None else self.tags.to(device, non_blocking=True),
            features=(
                None if self.features is None else self.features.to(device, non_blocking=True)
            ),
            groups=None if self.groups is None else self.groups.to(device, non_blocking=True),
            allowed_tags=(
                None
                if self.allowed_tags is None
                else self.allowed_tags.to(device, non_blocking=True)
            ),
            lexicon=None if self.lexicon is None else self.lexicon.to(device, non_blocking=True),
            char_lm=None if self.char_lm is None else self.char_lm.to(device),
        )


def encode(
    tokens: Sequence[str],
    vocabularies: Vocabularies,
    tags: Sequence[str] | None = None,
    permitted: Sequence[Collection[str] | None] | None = None,
) -> Encoded:
    """Indices of one sentence. ``tags`` must all be in the tag vocabulary (KeyError if not),
    except where ``permitted`` is given (a sentence with unknown tags): there each token's tags
    are :func:`crftag.data.partial.permitted_tags` (None: any), and the tag index of a token is
    the first of its permitted tags the vocabulary has."""
    if permitted is not None:
        return _encode_partial(tokens, vocabularies, permitted)
    cache = token_cache(vocabularies)
    looked_up = [cache.lookup(token, vocabularies) for token in tokens]
    words = [word for word, _ in looked_up]
    longest = max((len(chars) for _, chars in looked_up), default=1)
    chars = [chars + [0] * (longest - len(chars)) for _, chars in looked_up]
    features = None
    if vocabularies.feature_buckets:
        hasher = vocabularies.__dict__.get("_feature_hasher")
        if hasher is None:
            hasher = vocabularies.__dict__["_feature_hasher"] = FeatureHasher(
                vocabularies.feature_buckets
            )
        features = hasher(tokens)
    lexicons = vocabularies.lexicons
    return Encoded(
        words=torch.tensor(words, dtype=torch.long),
        chars=torch.tensor(chars, dtype=torch.long).view(len(tokens), longest),
        tags=None if tags is None else torch.tensor(vocabularies.tags.indices(tags)),
        features=features,
        lexicon=None
        if lexicons is None
        else torch.from_numpy(lexicon_arrays([tokens], lexicons)[0]),
        char_lm=None
        if vocabularies.char_lm is None
        else vocabularies.char_lm.encode_words(list(tokens)),
    )


def _encode_partial(
    tokens: Sequence[str], vocabularies: Vocabularies, permitted: Sequence[Collection[str] | None]
) -> Encoded:
    num_tags = len(vocabularies.tags)
    allowed = torch.ones(len(tokens), num_tags, dtype=torch.bool)
    for position, tags in enumerate(permitted):
        found = (vocabularies.tags.get(tag) for tag in tags or ())
        indices = sorted(index for index in found if index is not None)
        if indices:  # a set the vocabulary cannot write at all constrains nothing
            allowed[position] = False
            allowed[position, indices] = True
    encoded = encode(tokens, vocabularies)
    tags = allowed.to(torch.uint8).argmax(1)  # (T,) the first allowed tag of each token
    return dataclasses.replace(encoded, tags=tags, allowed=allowed)


def collate(items: Sequence[Encoded]) -> Batch:
    """Pad a list of encoded sentences (each at least one token) into a :class:`Batch`."""
    lengths = torch.tensor([item.words.numel() for item in items], dtype=torch.long)
    batch_size, max_length = len(items), int(lengths.max())
    max_chars = max(item.chars.size(1) for item in items)
    words = torch.zeros(batch_size, max_length, dtype=torch.long)
    chars = torch.zeros(batch_size, max_length, max_chars, dtype=torch.long)
    labelled = items[0].tags is not None
    tags = torch.zeros(batch_size, max_length, dtype=torch.long) if labelled else None
    features = None
    if items[0].features is not None:
        features = torch.zeros(batch_size, max_length, items[0].features.size(1), dtype=torch.long)
    lexicon = None
    if items[0].lexicon is not None:
        lexicon = torch.zeros(batch_size, max_length, items[0].lexicon.size(1), dtype=torch.long)
    for row, item in enumerate(items):
        length, width = item.chars.shape
        words[row, :length] = item.words
        if lexicon is not None:
            lexicon[row, :length] = item.lexicon
        chars[row, :length, :width] = item.chars
        if tags is not None:
            tags[row, :length] = item.tags
        if features is not None:
            features[row, :length] = item.features
    mask = torch.arange(max_length).unsqueeze(0) < lengths.unsqueeze(1)
    return Batch(
        words=words,
        chars=chars,
        mask=mask,
        lengths=lengths,
        tags=tags,
        features=features,
        allowed_tags=_allowed_tags(items, tags),
        lexicon=lexicon,
        char_lm=None
        if items[0].char_lm is None
        else CharLMInputs.collate([item.char_lm for item in items]),
    )


def _allowed_tags(items: Sequence[Encoded], tags: torch.Tensor | None) -> torch.Tensor | None:
    """(B, T, K) bool when some item has unknown tags: its ``allowed`` rows, the one-hot of the
    gold tags for the others, every tag at padding. None when every item is fully labelled."""
    partial = [item.allowed for item in items if item.allowed is not None]
    if not partial or tags is None:
        return None
    num_tags = partial[0].size(1)
    allowed = torch.nn.functional.one_hot(tags, num_tags).bool()  # (B, T, K)
    for row, item in enumerate(items):
        allowed[row, item.words.numel() :] = True
        if item.allowed is not None:
            allowed[row, : item.allowed.size(0)] = item.allowed
    return allowed


def encode_batch(sentences: Sequence[Sequence[str]], vocabularies: Vocabularies) -> Batch:
    """Unlabelled sentences (each at least one token) straight into a padded :class:`Batch`.

    The same tensors as ``collate([encode(s, vocabularies) for s in sentences])``, built with a
    few whole-batch array operations instead of two small tensors per sentence: at predict time
    the per-sentence tensors cost more than the tagging they feed.
    """
    if vocabularies.feature_buckets:
        return collate([encode(tokens, vocabularies) for tokens in sentences])
    words, chars, lengths = index_arrays(sentences, vocabularies)
    batch_size, max_length = words.shape
    lengths_tensor = torch.from_numpy(lengths)
    mask = torch.arange(max_length).unsqueeze(0) < lengths_tensor.unsqueeze(1)
    lexicons = vocabularies.lexicons
    return Batch(
        words=torch.from_numpy(words),
        chars=torch.from_numpy(chars),
        mask=mask,
        lengths=lengths_tensor,
        tags=None,
        lexicon=None if lexicons is None else torch.from_numpy(lexicon_arrays(sentences, lexicons)),
        char_lm=None
        if vocabularies.char_lm is None
        else CharLMInputs.collate([vocabularies.char_lm.encode_words(s) for s in sentences]),
    )


def build_batch(
    sentences: Sequence[Sequence[str]],
    vocabularies: Vocabularies,
    *,
    encoded: Sequence[Encoded] | None = None,
    documents: Sequence[Hashable] | None = None,
) -> Batch:
    """The one way a batch is made, for training, evaluation and predict alike.

    sentences  the batch's token lists (each at least one token)
    encoded    their :func:`encode` rows when already made (training, with tags); else the
               sentences are encoded here, unlabelled
    documents  one key per sentence, equal within a document: given, ``batch.groups`` is filled
               for a model with document context (:func:`document_groups`)
    """
    batch = collate(encoded) if encoded is not None else encode_batch(sentences, vocabularies)
    if documents is not None:
        batch.groups = document_groups(sentences, documents, vocabularies)
    return batch


def document_groups(
    sentences: Sequence[Sequence[str]], documents: Sequence[Hashable], vocabularies: Vocabularies
) -> torch.Tensor:
    """:func:`crftag.data.indices.group_ids` as a (B, T) long tensor."""
    return torch.from_numpy(group_ids(sentences, documents, vocabularies))
