"""Which training-scheme tags a token of a partially labelled sentence may take: compared with
brute force over every completion of the unknown tags, converted as a whole sentence."""

import itertools
import random

import pytest

from crftag.data.partial import has_unknown, in_scheme, known, permitted_tags
from crftag.data.schemes import convert

DATA_TAGS = {
    "iob1": ["O", "I-PER", "B-PER", "I-LOC", "B-LOC"],
    "iob2": ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"],
    "bioes": ["O", "B-PER", "I-PER", "E-PER", "S-PER", "S-LOC"],
}


def brute_force(tags, data_scheme, target):
    """Per token, the set of its forms in ``target`` over every completion of the unknown tags
    by tags of ``data_scheme`` (None where unknown)."""
    unknown = [position for position, tag in enumerate(tags) if tag in ("-", "?")]
    forms = [set() for _ in tags]
    for filling in itertools.product(DATA_TAGS[data_scheme], repeat=len(unknown)):
        completed = list(tags)
        for position, tag in zip(unknown, filling, strict=True):
            completed[position] = tag
        for position, tag in enumerate(convert(completed, target)):
            forms[position].add(tag)
    return [None if position in unknown else forms[position] for position in range(len(tags))]


@pytest.mark.parametrize("data_scheme", ["iob1", "iob2", "bioes"])
@pytest.mark.parametrize("target", ["bioes", "iob2", "iob1"])
def test_permitted_tags_are_the_forms_of_every_completion(data_scheme, target):
    rng = random.Random(f"{data_scheme}-{target}")
    for _ in range(150):
        length = rng.randint(1, 5)
        tags = [rng.choice([*DATA_TAGS[data_scheme], "?", "-", "?"]) for _ in range(length)]
        if not has_unknown(tags):
            tags[rng.randrange(length)] = "?"
        got = permitted_tags(tags, data_scheme, target)
        expected = brute_force(tags, data_scheme, target)
        assert [None if s is None else set(s) for s in got] == expected, tags


def test_a_known_inside_tag_next_to_an_unknown_one_may_end_the_entity():
    assert permitted_tags(["B-PER", "I-PER", "?"], "iob2", "bioes") == [
        frozenset({"B-PER"}),
        frozenset({"I-PER", "E-PER"}),
        None,
    ]
    assert permitted_tags(["?", "I-PER", "?"], "iob1", "bioes")[1] == {
        "B-PER",
        "I-PER",
        "E-PER",
        "S-PER",
    }


def test_a_fully_labelled_sentence_has_no_permitted_sets():
    assert permitted_tags(["B-PER", "O"], "iob2", "bioes") is None


def test_tags_that_are_not_spans_are_kept_or_unknown():
    assert permitted_tags(["NOUN", "-", "VERB"], "none", "none") == [
        frozenset({"NOUN"}),
        None,
        frozenset({"VERB"}),
    ]


def test_in_scheme_writes_unknown_tags_as_a_question_mark():
    assert in_scheme(["B-PER", "I-PER", "-", "O"], "bioes") == ["B-PER", "E-PER", "?", "O"]
    assert in_scheme(["I-PER", "I-PER"], "bioes") == ["B-PER", "E-PER"]
    assert known(["B-PER", "-", "?", "O"]) == ["B-PER", "O"]
