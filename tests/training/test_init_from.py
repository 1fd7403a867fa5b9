"""Starting from a trained model (train.init_from): merged vocabularies, weights carried over,
a new label learned, architecture mismatches refused in one line; rehearsal of old data."""

import dataclasses
import json

import pytest
import torch

from crftag.config import sections
from crftag.config.sections import load_config
from crftag.data.conll import Sentence
from crftag.errors import CrftagError
from crftag.modelfiles.checkpoint import export_arrays, load_model
from crftag.training import init_from
from crftag.training.corpus import read_training_files
from crftag.training.init_from import copy_weights, load_base, load_training_config
from crftag.training.run import train_in_memory
from crftag.training.setup import start_run

PRODUCTS = ["Zorblax", "Quintaphone", "Veltrix", "Ombrolux", "Kaleidex", "Trundlebox"]
FRAMES = [
    ("She", "bought", "a", "{}", "yesterday", "."),
    ("The", "{}", "sold", "out", "in", "Paris", "."),
    ("Rossi", "reviewed", "the", "new", "{}", "."),
]
ENTITIES = {"{}": "B-PROD", "Paris": "B-LOC", "Rossi": "B-PER"}


def _product_sentences() -> list[Sentence]:
    """Sentences with a label the sample never had: PROD."""
    sentences = []
    for product in PRODUCTS:
        for frame in FRAMES:
            tokens = tuple(product if t == "{}" else t for t in frame)
            tags = tuple(ENTITIES.get(t, "O") for t in frame)
            sentences.append(Sentence(tokens, tags, 0))
    return sentences


def _adapt_config(tiny_config, model_dir, **settings):
    return tiny_config(train__init_from=str(model_dir), data__dev=None, **settings)


def _old_sentences(tiny_config, count=60):
    config = tiny_config()
    return [s for _, in_file in read_training_files(config) for s in in_file][:count]


def test_init_from_learns_a_new_label_and_keeps_the_old_ones(tiny_config, sample_model):
    config = _adapt_config(tiny_config, sample_model, train__epochs=6, train__lr=0.01)
    train = _product_sentences() * 3 + _old_sentences(tiny_config)
    tagger, _ = train_in_memory(config, train)
    old = load_model(str(sample_model))
    tags = tagger.loaded.vocabularies.tags.symbols
    assert tags[: len(old.vocabularies.tags)] == old.vocabularies.tags.symbols
    assert {"B-PROD", "S-PROD"} & set(tags)
    predicted = tagger.tag([["Rossi", "bought", "a", "Veltrix", "yesterday", "."]])[0]
    assert predicted[3] == "B-PROD"
    assert predicted[0] == "B-PER"


def test_shared_rows_keep_their_weights_at_step_zero(tiny_config, sample_model):
    config = _adapt_config(tiny_config, sample_model)
    run = start_run(config, [("<memory>", _product_sentences())], device=torch.device("cpu"))
    old = load_model(str(sample_model))
    words = old.vocabularies.words
    assert run.training.vocabularies.words.symbols[: len(words)] == words.symbols
    new_state, old_state = run.model.state_dict(), old.model.state_dict()
    assert torch.equal(
        new_state["word_embedding.weight"][: len(words)], old_state["word_embedding.weight"]
    )
    assert torch.equal(
        new_state["encoder.lstm.weight_hh_l0"], old_state["encoder.lstm.weight_hh_l0"]
    )
    tags = len(old.vocabularies.tags)
    assert torch.equal(new_state["crf.transitions"][:tags, :tags], old_state["crf.transitions"])
    assert len(run.training.vocabularies.tags) > tags  # the PROD tags appended
    assert "Zorblax" in run.training.vocabularies.words


def test_new_tags_get_the_schemes_constraints(tiny_config, sample_model):
    config = _adapt_config(tiny_config, sample_model)
    run = start_run(config, [("<memory>", _product_sentences())], device=torch.device("cpu"))
    symbols = run.training.vocabularies.tags.symbols
    allowed = run.model.crf.allowed
    assert not allowed[symbols.index("B-PER"), symbols.index("S-PROD")]  # B-x goes to I-x, E-x
    assert allowed[symbols.index("S-PROD"), symbols.index("B-PER")]
    assert allowed[symbols.index("O"), symbols.index("S-PROD")]


def test_a_different_architecture_is_one_line_naming_the_keys(tiny_config, sample_model):
    config = _adapt_config(
        tiny_config, sample_model, model__hidden_size=16, model__char_encoder="lstm"
    )
    with pytest.raises(CrftagError) as error:
        start_run(config, [("<memory>", _product_sentences())], device=torch.device("cpu"))
    message = str(error.value)
    assert "\n" not in message
    assert "model.hidden_size 16 (model: 32)" in message
    assert "model.char_encoder lstm (model: cnn)" in message


def test_a_missing_model_names_the_key(tiny_config, tmp_path):
    config = tiny_config(train__init_from=str(tmp_path / "nowhere"))
    with pytest.raises(CrftagError, match="^train.init_from: .*nowhere"):
        start_run(config, [("<memory>", _product_sentences())], device=torch.device("cpu"))


def test_a_bundled_name_in_a_config_file_is_the_bundled_model(tmp_path):
    (tmp_path / "adapt.yaml").write_text("data: {train: x.conll}\ntrain: {init_from: en-ner}\n")
    config = load_config(str(tmp_path / "adapt.yaml"))
    assert load_base(config).vocabularies.tags.symbols[0] == "B-LOC"


def test_rehearsal_adds_a_seeded_sample_of_the_old_file(tiny_config):
    config = tiny_config(train__rehearsal="data/ner_sample.dev.conll")
    new = _product_sentences()
    run = start_run(config, [("<memory>", new)], device=torch.device("cpu"))
    assert len(run.training.sentences) == 2 * len(new)
    again = start_run(config, [("<memory>", new)], device=torch.device("cpu"))
    assert run.training.sentences == again.training.sentences


def test_copy_weights_refuses_a_larger_model(tiny_config, sample_model):
    small = load_model(str(sample_model)).model
    big = load_model(str(sample_model)).model
    big.projection = torch.nn.Linear(big.projection.in_features, 99)
    with pytest.raises(AssertionError):
        copy_weights(small, big)


def test_the_bundled_en_ner_learns_an_extra_label(tmp_path, invoke):
    blocks = [
        "".join(f"{word} {tag}\n" for word, tag in zip(s.tokens, s.tags, strict=True))
        for s in _product_sentences()
    ]
    (tmp_path / "products.conll").write_text("\n".join(blocks * 3))
    (tmp_path / "adapt.yaml").write_text(
        "data: {train: products.conll, dev: null}\ntrain: {init_from: en-ner, epochs: 4}\n"
    )
    run = tmp_path / "run"
    trained = invoke(["train", str(tmp_path / "adapt.yaml"), "-o", str(run), "-q"])
    assert trained.status == 0, trained.stderr
    result = invoke(["predict", "-m", str(run)], "Anna Schulz bought a Veltrix in Rome .\n")
    expected = "Anna B-PER Schulz I-PER bought O a O Veltrix B-PROD in O Rome B-LOC . O"
    assert result.stdout.split() == expected.split()


def _write_config(tmp_path, base, extra=""):
    path = tmp_path / "adapt.yaml"
    path.write_text(f"data: {{train: x.conll}}\n{extra}train: {{init_from: {base}}}\n")
    return str(path)


@pytest.mark.parametrize("mode", ["run directory", "checkpoint", "export"])
def test_a_config_without_a_model_section_takes_the_models(tmp_path, sample_model, mode):
    old = load_model(str(sample_model))
    base = {
        "run directory": str(sample_model),
        "checkpoint": str(sample_model / "model.pt"),
        "export": str(tmp_path / "model.npz"),
    }[mode]
    if mode == "export":
        export_arrays(base, old)
    config, loaded = load_training_config(_write_config(tmp_path, base))
    theirs = old.config.model
    assert config.model == dataclasses.replace(theirs, embeddings=None, freeze_embeddings=False)
    assert config.model.hidden_size == 32  # the tiny model's, not the default 200
    assert (config.vocab.lowercase, config.data.train_scheme) == (False, old.train_scheme)
    for name, weight in old.model.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[name], weight), name


def test_keys_allowed_to_differ_are_kept_and_others_still_refused(tmp_path, sample_model):
    config, _ = load_training_config(
        _write_config(tmp_path, sample_model, "model: {dropout: 0.1}\n"), ["model.hidden_size=16"]
    )
    assert config.model.dropout == 0.1
    assert config.model.word_dim == 32  # the model's
    with pytest.raises(CrftagError, match=r"model.hidden_size 16 \(model: 32\); leave these keys"):
        start_run(config, [("<memory>", _product_sentences())], device=torch.device("cpu"))


@pytest.mark.parametrize("name", ["en-ner", "en-pos"])
def test_the_bundled_models_architecture_is_taken(tmp_path, name):
    config, _ = load_training_config(_write_config(tmp_path, name))
    assert config.model == dataclasses.replace(
        load_model(name).config.model, embeddings=None, freeze_embeddings=False
    )


def _count_base_loads(monkeypatch) -> list[str]:
    """The paths ``train.init_from`` models are loaded from, one entry a load."""
    loads: list[str] = []
    load = init_from.load_model

    def counted(name, *args, **kwargs):
        loads.append(name)
        return load(name, *args, **kwargs)

    monkeypatch.setattr(init_from, "load_model", counted)
    return loads


def test_train_loads_the_model_it_starts_from_once(
    invoke, tiny_args, sample_model, tmp_path, monkeypatch
):
    loads = _count_base_loads(monkeypatch)
    settings = tiny_args(train__init_from=str(sample_model), train__epochs=1, data__test=None)
    result = invoke(["train", "configs/sample.yaml", "-o", str(tmp_path / "run"), *settings])
    assert result.status == 0, result.stderr
    assert loads == [str(sample_model)]


def test_a_study_loads_the_model_its_trials_start_from_once(
    invoke, sample_model, tmp_path, monkeypatch
):
    loads = _count_base_loads(monkeypatch)
    settings = [
        f"train.init_from={sample_model}",
        "train.epochs=1",
        "model.hidden_size=32",
        "model.word_dim=32",
        "data.train=data/ner_sample.test.conll",  # a fifth of the sample: trials that are quick
        "data.test=null",
    ]
    sets = [part for setting in settings for part in ("--set", setting)]
    study = tmp_path / "study"
    result = invoke(
        ["tune", "configs/sample.yaml", "-o", str(study), *sets, "--trials", "2", "--device", "cpu"]
    )
    assert result.status == 0, result.stderr
    assert len(json.loads((study / "trials.json").read_text())) == 2
    assert loads == [str(sample_model)]


def test_a_config_that_starts_from_a_model_is_read_once(tmp_path, sample_model, monkeypatch):
    reads: list[str] = []
    read = sections.read_yaml_file
    monkeypatch.setattr(sections, "read_yaml_file", lambda path: reads.append(path) or read(path))
    loads = _count_base_loads(monkeypatch)
    path = _write_config(tmp_path, sample_model, "model: {dropout: 0.1}\n")
    config, base = load_training_config(path)
    assert reads == [path] and loads == [str(sample_model)]
    assert (config.model.dropout, config.model.hidden_size) == (0.1, 32)  # its own, the model's
    assert config.model.hidden_size == base.config.model.hidden_size
