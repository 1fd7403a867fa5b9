"""Vocabularies: minimum frequency, the unknown symbol, their state, and word normalisation."""

from collections import Counter

from crftag.data.vocab import PAD, UNK, Vocabulary, normalize_word


def test_vocabulary_min_freq_and_unknowns():
    vocabulary = Vocabulary.build(Counter({"the": 5, "cat": 2, "rare": 1}), min_freq=2)
    assert vocabulary.symbols == [PAD, UNK, "the", "cat"]
    assert vocabulary.index("rare") == 1 and vocabulary.index("cat") == 3
    restored = Vocabulary.from_state(vocabulary.to_state())
    assert restored.symbols == vocabulary.symbols


def test_word_normalisation():
    assert normalize_word("Année 2024", lowercase=True, normalize_digits=True) == "année 0000"
    assert normalize_word("Année 2024", lowercase=False, normalize_digits=False) == "Année 2024"
