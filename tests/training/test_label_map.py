"""Labels on a warm start: the new model's tags, where each starts from, the rows copied from
the old label's, and the warm-started model predicting the renamed labels."""

import dataclasses

import pytest
import torch

from crftag.data.conll import Sentence
from crftag.data.schemes import convert
from crftag.errors import CrftagError
from crftag.inference.tagger import Tagger
from crftag.modelfiles.checkpoint import load_model
from crftag.training.label_map import label_of, plan_tags, retag, tag_sources
from crftag.training.setup import start_run

RENAMED = {"person": "PER", "place": "LOC", "company": "ORG", "other": "MISC"}
BIOES_OLD = ["B-LOC", "B-PER", "E-LOC", "E-PER", "I-LOC", "I-PER", "O", "S-LOC", "S-PER"]


def test_labels_of_tags_in_every_scheme():
    assert [label_of(t) for t in ("B-PER", "I-PER", "E-PER", "S-PER", "O", "NOUN")] == [
        "PER",
        "PER",
        "PER",
        "PER",
        None,
        "NOUN",
    ]
    assert retag("E-PER", "person") == "E-person"
    assert retag("NOUN", "PROPN") == "PROPN"


@pytest.mark.parametrize(
    ("old", "data"),
    [
        (["B-PER", "I-PER", "O"], ["B-person", "I-person", "O"]),  # IOB2
        (BIOES_OLD, ["B-person", "E-person", "O", "S-person"]),  # BIOES, no I-person in the data
    ],
)
def test_a_mapped_label_starts_every_tag_from_the_old_labels(old, data):
    tags = plan_tags(old, data, {"person": "PER"}, drop_old=False)
    assert tags[: len(old)] == old  # the old tags keep their indices
    sources = tag_sources(tags, old, {"person": "PER"})
    for tag, source in zip(tags, sources, strict=True):
        expected = tag.replace("person", "PER")
        assert old[source] == expected  # B-person from B-PER, E-person from E-PER, ...
    assert {tag for tag in old if label_of(tag) == "PER"} == {
        retag(t, "PER") for t in tags if label_of(t) == "person"
    }


def test_dropping_old_labels_keeps_o_and_the_datas_labels():
    tags = plan_tags(
        BIOES_OLD, ["B-person", "E-person", "O", "S-LOC"], {"person": "PER"}, drop_old=True
    )
    assert [t for t in tags if label_of(t) in ("LOC", None)] == [
        "B-LOC",
        "E-LOC",
        "I-LOC",
        "O",
        "S-LOC",
    ]
    assert not [t for t in tags if label_of(t) == "PER"]
    sources = tag_sources(tags, BIOES_OLD, {"person": "PER"})
    assert [BIOES_OLD[s] for s in sources] == [t.replace("person", "PER") for t in tags]


def test_an_unmapped_new_label_starts_fresh():
    tags = plan_tags(BIOES_OLD, ["B-PROD", "O"], None, drop_old=False)
    assert tags == [*BIOES_OLD, "B-PROD"]
    assert tag_sources(tags, BIOES_OLD, None)[-1] is None


def test_unknown_labels_are_named_with_the_nearest():
    with pytest.raises(CrftagError) as error:
        plan_tags(BIOES_OLD, ["B-person", "O"], {"persn": "PRE"}, drop_old=False)
    lines = str(error.value).splitlines()
    assert lines == [
        "train.label_map: new label 'persn' is not one of the training data's labels (person); "
        "did you mean 'person'?",
        "train.label_map: old label 'PRE' is not one of the model's labels (LOC, PER); "
        "did you mean 'PER'?",
    ]


def _renamed(sentences: list[Sentence], scheme: str) -> list[Sentence]:
    """The sentences with every label renamed by RENAMED (new <- old), tagged in ``scheme``."""
    return [
        dataclasses.replace(sentence, tags=tuple(convert(_to_new(sentence.tags), scheme)))
        for sentence in sentences
    ]


def _to_new(tags) -> list[str]:
    back = {old: new for new, old in RENAMED.items()}
    return [tag if tag == "O" else retag(tag, back[label_of(tag)]) for tag in tags]


def _to_old(tag: str) -> str:
    return tag if tag == "O" else retag(tag, RENAMED[label_of(tag)])


@pytest.mark.parametrize("scheme", ["iob2", "bioes"])
def test_renamed_labels_start_from_the_old_rows_and_predict_alike(
    tiny_config, sample_model, scheme
):
    config = tiny_config(
        train__init_from=str(sample_model),
        train__label_map=RENAMED,
        train__drop_old_labels=True,
        data__dev=None,
    )
    # The old model's own training sentences: no new word, no tag it lacks.
    sentences = config.data.read("data/ner_sample.train.conll")
    run = start_run(config, [("<memory>", _renamed(sentences, scheme))], device=torch.device("cpu"))
    old = load_model(str(sample_model))
    tags, old_tags = run.training.vocabularies.tags.symbols, old.vocabularies.tags.symbols
    assert not {label_of(t) for t in tags} & set(RENAMED.values())  # the old labels dropped
    new_state, old_state = run.model.state_dict(), old.model.state_dict()
    for tag in ("B-person", "E-place", "S-company", "I-other", "O"):
        row, source = tags.index(tag), old_tags.index(_to_old(tag))
        assert torch.equal(
            new_state["projection.weight"][row], old_state["projection.weight"][source]
        )
        assert new_state["crf.start_transitions"][row] == old_state["crf.start_transitions"][source]
    sources = [old_tags.index(_to_old(tag)) for tag in tags]  # every tag has its old one
    assert torch.equal(
        new_state["crf.transitions"],
        old_state["crf.transitions"][sources][:, sources],
    )
    words = [list(s.tokens) for s in sentences]
    expected = [_to_new(old_tags_) for old_tags_ in Tagger.from_loaded(old, "cpu").tag(words)]
    predicted = Tagger.from_loaded(run.loaded({}), "cpu").tag(words)
    assert predicted == expected
    assert {label_of(t) for s in predicted for t in s} - {None} <= set(RENAMED)
    assert any(t != "O" for s in predicted for t in s)


def _train_with(invoke, tmp_path, setting):
    return invoke(["train", "configs/sample.yaml", "-o", str(tmp_path / "run"), "--set", setting])


def test_label_map_needs_init_from(invoke, tmp_path):
    result = _train_with(invoke, tmp_path, "train.label_map={a: B}")
    assert result.status == 2
    assert result.stderr.strip() == (
        "crftag: error: train.label_map: says which old labels to start from, and needs "
        "train.init_from (or a teacher: crftag distill)"
    )
    assert result.stdout == ""
    assert not (tmp_path / "run" / "model.pt").exists()


def test_label_map_is_a_mapping_of_names(invoke, tmp_path):
    result = _train_with(invoke, tmp_path, "train.label_map=[a]")
    assert result.status == 2
    assert "train.label_map: expected a mapping, got list" in result.stderr
    result = _train_with(invoke, tmp_path, "train.label_map={a: 3}")
    assert result.status == 2
    assert "train.label_map: expected a mapping of names to names, got int 3 in it" in result.stderr
