"""The perturbations: lengths kept by case changes, typos as one edit of one word, seeds."""

import random

import pytest

from crftag.data.conll import Sentence
from crftag.data.perturb import (
    PERTURBATIONS,
    change_case,
    perturb_sentences,
    perturb_tokens,
    with_typos,
)

TOKENS = ("UN", "praises", "Danish", "plan", "to", "ration", "Swiss", "cheese", ".")


def test_case_changes_of_a_sentence():
    rng = random.Random(0)
    assert perturb_tokens(TOKENS, ["lower"], rng, 0.0)[:3] == ("un", "praises", "danish")
    assert perturb_tokens(TOKENS, ["upper"], rng, 0.0)[:3] == ("UN", "PRAISES", "DANISH")
    assert perturb_tokens(TOKENS, ["title"], rng, 0.0)[:3] == ("Un", "Praises", "Danish")


@pytest.mark.parametrize("change", ["lower", "upper", "title"])
@pytest.mark.parametrize("token", ["Straße", "ŉa", "İstanbul", "ﬁle", "McDONALD", ""])
def test_a_case_change_keeps_the_length_of_every_token(change, token):
    assert len(change_case(token, change)) == len(token)


def test_a_character_whose_other_case_is_longer_stays():
    assert change_case("Straße", "upper") == "STRAßE"
    assert change_case("İstanbul", "lower") == "İstanbul"[:1] + "stanbul"


def _edit_distance_is_one(before: str, after: str) -> bool:
    """One deletion, insertion, or swap of two neighbours."""
    if len(after) == len(before):
        diffs = [i for i in range(len(before)) if before[i] != after[i]]
        return (
            len(diffs) == 2
            and diffs[1] == diffs[0] + 1
            and before[diffs[0]] == after[diffs[1]]
            and before[diffs[1]] == after[diffs[0]]
        )
    short, long = sorted((before, after), key=len)
    if len(long) - len(short) != 1:
        return False
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def test_every_typo_is_one_edit_of_a_word_of_four_letters_or_more():
    rng = random.Random(5)
    words = ("a", "the", "cat", "Paris", "boycott", "1234567", "U.S.", "aaaa", "ABCDEF") * 200
    edited = with_typos(words, 1.0, rng)
    assert len(edited) == len(words)
    for before, after in zip(words, edited, strict=True):
        if sum(char.isalpha() for char in before) < 4:
            assert after == before  # too short, or not a word
        else:
            assert _edit_distance_is_one(before, after), (before, after)
    assert {w for b, w in zip(words, edited, strict=True) if b == "ABCDEF"} - {"ABCDEF"}
    inserted = [w for b, w in zip(words, edited, strict=True) if b == "ABCDEF" and len(w) == 7]
    assert inserted and all(w.isupper() for w in inserted)  # a letter in an upper-case word


def test_the_typo_rate_is_the_share_of_eligible_words_edited():
    words = ("boycott",) * 20_000
    edited = with_typos(words, 0.2, random.Random(1))
    share = sum(a != b for a, b in zip(words, edited, strict=True)) / len(words)
    assert 0.19 < share < 0.21
    assert with_typos(words, 0.0, random.Random(1)) == words


def test_a_perturbed_copy_is_the_same_for_a_seed_and_keeps_tags_and_lines():
    sentences = [
        Sentence(TOKENS, ("B-ORG", "O", "B-MISC", "O", "O", "O", "B-MISC", "O", "O"), 3),
        Sentence(("Maria", "Lindqvist"), ("B-PER", "I-PER"), 14, raw=("a", "b"), document=2),
    ] * 50
    for change in PERTURBATIONS:
        first = perturb_sentences(sentences, change, seed=7, typo_rate=0.5)
        assert first == perturb_sentences(sentences, change, seed=7, typo_rate=0.5)
        assert [s.tags for s in first] == [s.tags for s in sentences]
        assert [(s.line, s.document) for s in first] == [(s.line, s.document) for s in sentences]
        assert all(len(a.tokens) == len(b.tokens) for a, b in zip(first, sentences, strict=True))
        assert all(s.raw == () for s in first)
    typos = perturb_sentences(sentences, "typos", seed=7, typo_rate=0.5)
    assert typos != perturb_sentences(sentences, "typos", seed=8, typo_rate=0.5)


def test_an_unknown_perturbation_is_refused():
    with pytest.raises(ValueError, match="expected one of lower, upper, title, typos"):
        perturb_sentences([], "shout", seed=1, typo_rate=0.2)
