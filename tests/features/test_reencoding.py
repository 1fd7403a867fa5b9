"""Re-encoding a training sentence after augmentation changed its text leaves no feature
describing the old text: every feature a batch carries equals a fresh encoding of the new
tokens (a misspelt dictionary name keeps no dictionary match), and the tags stay."""

import torch

from crftag.data.batching import encode
from crftag.data.char_codes import CharCodes
from crftag.data.lexicons import Lexicons
from crftag.data.vocab import Vocabularies, Vocabulary
from crftag.features.registry import FEATURES
from crftag.training.augment import reencoded


def vocabularies_with_every_feature() -> Vocabularies:
    """Vocabularies whose batches carry every feature with values of a sentence's own."""
    return Vocabularies(
        words=Vocabulary(["<pad>", "<unk>", "flights", "to", "berlin"]),
        chars=Vocabulary(["<pad>", "<unk>", *sorted(set("Berlinflightsto"))]),
        tags=Vocabulary(["O", "B-LOC"], has_unknown=False),
        feature_buckets=64,
        resources={
            "lexicons": Lexicons({"LOC": [("berlin",)]}),
            "char_lm": CharCodes(
                sorted(set("Berlinflightsto ")), {"char_dim": 3, "hidden_size": 4}
            ),
        },
    )


def equal(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return a.shape == b.shape and torch.equal(a, b)
    return a == b


def test_every_feature_is_encoded_again_after_a_typo():
    vocabularies = vocabularies_with_every_feature()
    before = encode(["flights", "to", "Berlin"], vocabularies, ["O", "O", "B-LOC"])
    carried = {f.name for f in FEATURES if f.per_sentence and f.encodes(vocabularies)}
    assert set(before.inputs) == carried  # the check below covers every one
    assert before.lexicon[2].tolist() == [4]  # "Berlin": a one-word match (S)
    typo = ("flights", "to", "Bxrlin")
    after = reencoded(before, typo, vocabularies)
    fresh = encode(typo, vocabularies)
    stale = [name for name in carried if not equal(after.inputs[name], fresh.inputs[name])]
    assert stale == []
    assert after.lexicon[2].tolist() == [0]  # the misspelt name matches no entry
    assert torch.equal(after.tags, before.tags)


def test_a_feature_that_differs_after_the_typo_is_seen_as_changed():
    """The comparison above can fail: the old values differ from the new text's."""
    vocabularies = vocabularies_with_every_feature()
    before = encode(["flights", "to", "Berlin"], vocabularies)
    fresh = encode(("flights", "to", "Bxrlin"), vocabularies)
    changed = {name for name in before.inputs if not equal(before.inputs[name], fresh.inputs[name])}
    assert {"lexicon", "chars", "char_lm", "hashed"} <= changed
