"""Batching: the whole-batch encoder predict uses builds the same tensors as per-sentence
encoding followed by collate, which training uses."""

import random
from collections import Counter

import torch

from crftag.data.batching import MAX_WORD_CHARS, collate, encode, encode_batch
from crftag.data.vocab import Vocabularies, Vocabulary


def _vocabularies(feature_buckets: int = 0) -> Vocabularies:
    words = Vocabulary.build(Counter(["the", "cat", "sat", "0000", "paris"]))
    chars = Vocabulary.build(Counter("thecatsp0aéri"))
    tags = Vocabulary.build(Counter(["O", "B-LOC"]), specials=False)
    return Vocabularies(words, chars, tags, feature_buckets=feature_buckets)


def _random_sentences(rng: random.Random, count: int) -> list[list[str]]:
    pool = [
        "the",
        "The",
        "cat",
        "Paris",
        "1984",
        "zebra",
        "é",
        "x" * (MAX_WORD_CHARS + 9),
        ",",
        "Ω",
    ]
    return [[rng.choice(pool) for _ in range(rng.randint(1, 12))] for _ in range(count)]


def _assert_same_batch(got, want) -> None:
    for name in ("words", "chars", "mask", "lengths"):
        assert torch.equal(getattr(got, name), getattr(want, name)), name
        assert getattr(got, name).dtype == getattr(want, name).dtype, name
    assert got.tags is None and want.tags is None


def test_encode_batch_equals_collate_of_encode():
    rng = random.Random(0)
    vocabularies = _vocabularies()
    for size in (1, 2, 7, 64):
        sentences = _random_sentences(rng, size)
        want = collate([encode(tokens, vocabularies) for tokens in sentences])
        _assert_same_batch(encode_batch(sentences, vocabularies), want)


def test_encode_batch_with_hashed_features():
    rng = random.Random(1)
    vocabularies = _vocabularies(feature_buckets=1 << 10)
    sentences = _random_sentences(rng, 5)
    got = encode_batch(sentences, vocabularies)
    want = collate([encode(tokens, vocabularies) for tokens in sentences])
    _assert_same_batch(got, want)
    assert torch.equal(got.features, want.features)
