"""Hashed token features for the linear feature CRF: the templates and their hashing."""

import torch

from crftag.data.features import NUM_FEATURES, OFFSETS, TEMPLATES, FeatureHasher, token_values


def test_token_values_follow_the_templates():
    values = dict(zip(TEMPLATES, token_values("McDonald's"), strict=True))
    assert values["word"] == "McDonald's" and values["lower"] == "mcdonald's"
    assert values["prefix3"] == "McD" and values["suffix4"] == "ld's"
    assert values["shape"] == "XxXx'x" and values["casing"] == "mixed"
    assert token_values("1990")[-2:] == ("d", "number")


def test_hashed_features_are_stable_and_see_the_neighbours():
    tokens = ["Peter", "lives", "in", "Berlin"]
    first, second = FeatureHasher(1000), FeatureHasher(1000)
    ids = first(tokens)
    assert ids.shape == (4, NUM_FEATURES) and ids.dtype == torch.long
    assert torch.equal(ids, second(tokens))  # a new process finds the same weights
    assert int(ids.min()) >= 1 and int(ids.max()) <= 1000  # 0 is left for padding
    # Token 1's features at offset +1 are the ids of token 2's word at that offset.
    width = len(TEMPLATES)
    plus_one = 1 + OFFSETS.index(1) * width
    expected = [
        first._hash(f"1|{n}|{v}") for n, v in zip(TEMPLATES, token_values("in"), strict=True)
    ]
    assert ids[1, plus_one : plus_one + width].tolist() == expected
    # Beyond the edges, neighbours are boundary markers, different before and after.
    minus_two = 1 + OFFSETS.index(-2) * width
    plus_two = 1 + OFFSETS.index(2) * width
    assert ids[0, minus_two] == ids[1, minus_two] != ids[2, minus_two]
    assert ids[3, plus_two] == ids[2, plus_two] != ids[0, plus_two]
