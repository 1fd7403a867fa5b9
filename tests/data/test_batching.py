"""Batching: the whole-batch encoder predict uses builds the same tensors as per-sentence
encoding followed by collate, which training uses."""

import random
from collections import Counter

import torch

from crftag.data.batching import collate, encode, encode_batch
from crftag.data.indices import MAX_DOCUMENT_SENTENCES, document_batches, group_ids, word_chars
from crftag.data.vocab import Vocabularies, Vocabulary

MAX_WORD_CHARS = Vocabularies.max_word_chars  # the default cap


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
    assert torch.equal(got.hashed, want.hashed)


def test_document_batches_keep_documents_whole():
    documents = ["a"] * 3 + ["b"] * 1 + ["c"] * 5 + ["d"] * 2
    batches = document_batches(documents, batch_size=4)
    assert batches == [[0, 1, 2, 3], [4, 5, 6, 7, 8], [9, 10]]
    shuffled = document_batches(documents, batch_size=4, rng=random.Random(3))
    assert sorted(i for batch in shuffled for i in batch) == list(range(len(documents)))
    for batch in shuffled:  # every document lies in one batch, in its own order
        for name in {documents[i] for i in batch}:
            rows = [i for i, d in enumerate(documents) if d == name]
            assert [i for i in batch if documents[i] == name] == rows


def test_a_very_long_document_is_cut():
    batches = document_batches(["a"] * (2 * MAX_DOCUMENT_SENTENCES + 1), batch_size=10)
    assert [len(b) for b in batches] == [MAX_DOCUMENT_SENTENCES, MAX_DOCUMENT_SENTENCES, 1]


def _document_vocabularies(words=("japan",)):
    words = Vocabulary(["<pad>", "<unk>", *words])
    chars = Vocabulary(["<pad>", "<unk>"])
    return Vocabularies(words=words, chars=chars, tags=Vocabulary(["O"]))


def test_groups_join_one_word_in_one_document():
    vocabularies = _document_vocabularies()
    sentences = [["Japan", "won"], ["JAPAN", "Zorbl", "zorbl"], ["Japan"]]
    groups = group_ids(sentences, ["d1", "d1", "d2"], vocabularies)
    assert groups.shape == (3, 3)
    japan, won = groups[0, 0], groups[0, 1]
    assert groups[1, 0] == japan  # case does not matter
    assert groups[1, 1] == groups[1, 2] != japan  # unknown words are grouped by their form
    assert groups[2, 0] not in (japan, won)  # another document
    padding = groups.max()
    assert groups[0, 2] == padding and groups[2, 1] == padding and padding == 4  # 4 words


def test_a_long_word_is_read_as_its_first_and_last_characters():
    assert word_chars("cat", 4) == "cat" and word_chars("cats", 4) == "cats"
    assert word_chars("https://example.com", 8) == "http.com"
    assert word_chars("abcdefg", 5) == "abcfg"  # the odd one at the front
    url = "https://www.example.com/" + "x" * 500 + "/index.html"
    assert word_chars(url, 64) == url[:32] + url[-32:]
    vocabularies = _vocabularies()
    vocabularies.max_word_chars = 6
    encoded = encode(["paris", "eeeeeeeeerrrrrrrrr", "the"], vocabularies)
    assert encoded.chars.shape == (3, 6)  # the long word costs 6 steps, not 18
    assert encoded.chars[1].tolist() == vocabularies.chars.indices("eeerrr")


def test_the_word_cap_travels_with_the_vocabularies():
    vocabularies = _vocabularies()
    vocabularies.max_word_chars = 12
    assert Vocabularies.from_state(vocabularies.to_state()).max_word_chars == 12
    older = vocabularies.to_state()
    del older["max_word_chars"]  # written before the setting existed
    assert Vocabularies.from_state(older).max_word_chars == 64
