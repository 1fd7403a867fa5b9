"""``model.hidden_layer``: Lample et al.'s tanh layer between the BiLSTM output and the tag
scores, with and without document context."""

import pytest
import torch

from crftag import cli
from crftag.data.conll import ColumnSpec, document_keys, read_columns
from crftag.inference.loading import load
from crftag.modelfiles.checkpoint import save_model

HIDDEN = {"model__hidden_layer": 16, "train__seed": 4}


@pytest.fixture(scope="module")
def hidden_model(train_tiny):
    tagger, _ = train_tiny(**HIDDEN, model__document_context=True)
    return tagger


def _test_sentences():
    with open("data/ner_sample.test.conll", "rb") as handle:
        return list(read_columns(handle, "test", ColumnSpec()))


def test_the_layer_reads_the_states_and_their_document_means(hidden_model):
    model = hidden_model.model
    linear, activation = model.hidden
    assert (linear.in_features, linear.out_features) == (4 * 32, 16)
    assert isinstance(activation, torch.nn.Tanh)
    assert model.projection.in_features == 16


def test_the_layer_trains(hidden_model, train_tiny):
    # The same run with a learning rate of 0 keeps the initial weights; three epochs of training
    # must have moved the tanh layer, so gradients reach it through the projection.
    trained = hidden_model.model.hidden[0].weight
    frozen, _ = train_tiny(**HIDDEN, model__document_context=True, train__lr=0, train__epochs=1)
    untouched = frozen.model.hidden[0].weight
    assert not torch.allclose(trained, untouched)


def test_a_saved_and_exported_model_keeps_its_layer(hidden_model, tmp_path):
    sentences = _test_sentences()
    tokens, documents = [s.tokens for s in sentences], document_keys(sentences)
    expected = hidden_model.tag(tokens, documents=documents)
    saved, exported = tmp_path / "saved.pt", tmp_path / "exported.pt"
    save_model(str(saved), hidden_model.loaded)
    assert load(str(saved), "cpu").tag(tokens, documents=documents) == expected
    assert cli.run(["export", str(saved), str(exported)]) == 0
    assert load(str(exported), "cpu").tag(tokens, documents=documents) == expected


def test_without_document_context_the_layer_reads_the_states(train_tiny):
    tagger, _ = train_tiny(**HIDDEN, train__epochs=1)
    assert tagger.model.hidden[0].in_features == 2 * 32
