"""``model.hidden_layer``: Lample et al.'s tanh layer between the BiLSTM output and the tag
scores, with and without document context."""

import pytest
import torch

from crftag import cli
from crftag.data.conll import ColumnSpec, document_keys, read_columns
from crftag.inference.tagger import Tagger

TINY = ["--set", "train.epochs=3", "--set", "model.hidden_size=32", "--set", "model.word_dim=32"]
TINY += ["--set", "model.hidden_layer=16", "--device", "cpu", "--quiet", "--seed", "4"]


@pytest.fixture(scope="module")
def hidden_model(tmp_path_factory):
    directory = tmp_path_factory.mktemp("hidden")
    args = ["train", "configs/sample.yaml", "-o", str(directory), *TINY]
    assert cli.run([*args, "--set", "model.document_context=true"]) == 0
    return directory


def _test_sentences():
    with open("data/ner_sample.test.conll", "rb") as handle:
        return list(read_columns(handle, "test", ColumnSpec()))


def test_the_layer_reads_the_states_and_their_document_means(hidden_model):
    model = Tagger.load(str(hidden_model)).model
    linear, activation = model.hidden
    assert (linear.in_features, linear.out_features) == (4 * 32, 16)
    assert isinstance(activation, torch.nn.Tanh)
    assert model.projection.in_features == 16


def test_the_layer_trains(hidden_model, tmp_path):
    # The same run with a learning rate of 0 keeps the initial weights; three epochs of training
    # must have moved the tanh layer, so gradients reach it through the projection.
    trained = Tagger.load(str(hidden_model)).model.hidden[0].weight
    args = ["train", "configs/sample.yaml", "-o", str(tmp_path), *TINY]
    frozen = ["--set", "train.lr=0", "--set", "train.epochs=1"]
    assert cli.run([*args, "--set", "model.document_context=true", *frozen]) == 0
    untouched = Tagger.load(str(tmp_path)).model.hidden[0].weight
    assert not torch.allclose(trained, untouched)


def test_a_saved_and_exported_model_keeps_its_layer(hidden_model, tmp_path):
    sentences = _test_sentences()
    tokens, documents = [s.tokens for s in sentences], document_keys(sentences)
    expected = Tagger.load(str(hidden_model)).tag(tokens, documents=documents)
    exported = tmp_path / "model.pt"
    assert cli.run(["export", str(hidden_model), str(exported)]) == 0
    assert Tagger.load(str(exported)).tag(tokens, documents=documents) == expected


def test_without_document_context_the_layer_reads_the_states(tmp_path):
    args = ["train", "configs/sample.yaml", "-o", str(tmp_path), *TINY]
    assert cli.run([*args, "--set", "train.epochs=1"]) == 0
    assert Tagger.load(str(tmp_path)).model.hidden[0].in_features == 2 * 32
