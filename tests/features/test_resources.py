"""What a feature keeps in the vocabularies (its resource): read from the files a config names,
written under the feature's key of the vocabularies' state exactly as before, and read back by
the feature itself."""

import dataclasses

import pytest

from crftag.data.char_codes import CharCodes
from crftag.data.lexicons import Lexicons
from crftag.data.subwords import EncoderFiles
from crftag.data.vocab import Vocabularies, Vocabulary
from crftag.features.registry import (
    FEATURES,
    active_features,
    feature_named,
    read_resources,
    vocabularies_from_state,
)
from crftag.modelfiles.registry import BUNDLED_MODELS, resolve_model_path
from crftag.runtime.archive import read_archive

RESOURCES = {
    "lexicons": Lexicons({"LOC": [("new", "york")], "ORG": [("acme",)]}),
    "char_lm": CharCodes(["<pad>", "a", "b", " "], {"char_dim": 3, "hidden_size": 4}),
    "transformer": EncoderFiles({"hidden_size": 8}, {"tokenizer.json": "{}"}),
}


def vocabularies(**resources) -> Vocabularies:
    return Vocabularies(
        Vocabulary(["<pad>", "<unk>", "a"]),
        Vocabulary(["<pad>", "<unk>", "a"]),
        Vocabulary(["O"], has_unknown=False),
        resources=resources,
    )


def test_every_resource_is_read_back_by_its_feature_into_the_same_state():
    written = vocabularies(**RESOURCES).to_state()
    assert list(written)[-3:] == ["lexicons", "char_lm", "transformer"]
    again = vocabularies_from_state(written)
    assert again.to_state() == written
    for key, resource in RESOURCES.items():
        assert type(again.resources[key]) is type(resource)
        owner = [feature for feature in FEATURES if feature.vocabulary_key == key]
        assert len(owner) == 1 and owner[0].resource(again) is again.resources[key]


def test_a_state_without_resources_is_the_state_of_the_three_vocabularies_alone():
    state = vocabularies().to_state()
    assert set(state) == {
        "words",
        "chars",
        "tags",
        "lowercase",
        "normalize_digits",
        "feature_buckets",
        "max_word_chars",
    }
    assert vocabularies_from_state(state).resources == {}


@pytest.mark.parametrize("name", sorted(BUNDLED_MODELS))
def test_a_bundled_models_vocabularies_state_is_written_back_unchanged(name):
    metadata, _ = read_archive(resolve_model_path(name))
    state = metadata["vocabularies"]
    assert vocabularies_from_state(state).to_state() == state


def test_the_resources_of_a_config_are_read_from_the_files_it_names(tiny_config):
    config = tiny_config()
    assert read_resources(config) == {}  # the sample's words and characters need no file
    with_lexicons = dataclasses.replace(
        config, model=dataclasses.replace(config.model, lexicons={"LOC": "data/sentences.txt"})
    )
    read = read_resources(with_lexicons)
    assert list(read) == ["lexicons"] and read["lexicons"].types == ["LOC"]
    model = dataclasses.asdict(with_lexicons.model)
    assert feature_named("lexicon") in active_features(model)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ([], "expected a mapping with a symbols list"),
        ({"symbols": ["a"] * (1 << 17)}, "more than 65,536 symbols"),
        ({"symbols": ["a", 1]}, "every symbol must be a string of at most 16 characters"),
        ({"symbols": ["a", "a"]}, "a symbol appears twice"),
        ({"symbols": ["a"], "char_dim": "3"}, "expected at most 8 integer sizes"),
        ({"symbols": ["a"], "char_dim": {"deep": [1]}}, "expected at most 8 integer sizes"),
    ],
)
def test_a_char_lm_entry_of_a_model_file_is_bounded_plain_values(entry, message):
    """The language models' entry is checked by its feature, not by the schema's plain check."""
    with pytest.raises(ValueError, match=f"^vocabularies.char_lm: {message}"):
        feature_named("char_lm").check_vocabularies({"char_lm": entry}, {"char_lm": "lm"})
    feature_named("char_lm").check_vocabularies({"char_lm": RESOURCES["char_lm"].to_state()}, {})
