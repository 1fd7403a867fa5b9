"""Pretrained word vectors in a new model: the vocabulary extended with vector words training
never saw, their rows copied in, and which rows train."""

from __future__ import annotations

import sys

import torch

from crftag.config.sections import Config
from crftag.data.vectors import Embeddings
from crftag.data.vocab import Vocabularies, look_up
from crftag.nn.taggers import BiLSTMCRF, CRFTagger

__all__ = ["extend_with_embeddings", "initialise_embeddings", "set_trained_rows", "vector_files"]

FIRST_WORD = 2  # rows 0 and 1 are padding and the unknown word


def vector_files(config: Config) -> list[str]:
    """The files of ``model.embeddings``, in order (none, one or several)."""
    files = config.model.embeddings
    if files is None:
        return []
    return [files] if isinstance(files, str) else list(files)


def extend_with_embeddings(vocabularies: Vocabularies, embeddings: Embeddings, limit: int) -> None:
    """Add up to ``limit`` embedding words (file order) that training did not have."""
    if limit <= 0:
        return
    added: list[str] = []
    for word in embeddings.words:
        key = vocabularies.word_key(word)
        if look_up(key, vocabularies.words) is None:
            added.append(key)
            vocabularies.words.extend([key])
            if len(added) == limit:
                break
    print(f"embeddings: added {len(added)} words that training never saw", file=sys.stderr)


def initialise_embeddings(
    model: CRFTagger, vocabularies: Vocabularies, embeddings: Embeddings
) -> None:
    """Copy pretrained vectors into the word embedding rows of the words that have one, matched
    by :func:`look_up` on both sides' normalised forms; a word the files lack gets a vector
    from its character n-grams where a file has them (fastText ``.bin``)."""
    by_key: dict[str, int] = {}
    for row, word in enumerate(embeddings.words):
        by_key.setdefault(vocabularies.word_key(word), row)
    for row, word in enumerate(embeddings.words):
        by_key.setdefault(vocabularies.word_key(word).lower(), row)
    targets, sources, missing = [], [], []
    for index, key in enumerate(vocabularies.words.symbols[FIRST_WORD:], start=FIRST_WORD):
        row = look_up(key, by_key)
        if row is None:
            missing.append((index, key))
        else:
            targets.append(index)
            sources.append(row)
    built = [(index, embeddings.subword_vector(key)) for index, key in missing]
    built = [(index, vector) for index, vector in built if vector is not None]
    weight = model.word_embedding.weight
    with torch.no_grad():
        if targets:
            weight[torch.tensor(targets, dtype=torch.long)] = embeddings.vectors_of(sources)
        for index, vector in built:
            weight[index] = vector
    total = len(vocabularies.words) - FIRST_WORD
    print(f"embeddings: {len(targets)} of {total} words have a pretrained vector", file=sys.stderr)
    if built:
        print(f"embeddings: {len(built)} more built from their character n-grams", file=sys.stderr)


def set_trained_rows(model: CRFTagger, config: Config, train_words: torch.Tensor) -> None:
    """Freeze the word embeddings, or train only the rows of words in ``train_words`` (every
    word index of the training data, (N,) long) when that changes nothing.

    The rows past the last training word (the pretrained words added to the vocabulary) get
    no gradient; without weight decay, no optimizer moves them, so they are left out of the
    trained parameter and its per-step dense work (see :class:`WordEmbedding`)."""
    if not isinstance(model, BiLSTMCRF):
        return
    model.word_embedding.weight.requires_grad_(not config.model.freeze_embeddings)
    if not config.model.freeze_embeddings and not config.train.weight_decay:
        model.word_embedding.fix_rows_from(max(FIRST_WORD, int(train_words.max()) + 1))
