"""The NumPy network gives the torch model's emission scores, for every encoder option, and
padding never changes them, through the compiled LSTM loops and the NumPy ones."""

import numpy as np
import pytest
import torch

from crftag.data.batching import build_batch
from crftag.runtime.network import emissions

SENTENCES = [
    ["John", "Smith", "lives", "in", "Berlin", "."],
    ["Shares", "of", "Siemens", "AG", "rose", "3.5", "%", "in", "Frankfurt", "."],
    ["OK"],
    ["The", "U.S.", "team", "beat", "JAPAN", "2-1", "on", "Friday", "."],
]
DOCUMENTS = ["a", "a", "b", "b"]


def batch_arrays(batch):
    """(inputs by feature name as arrays, lengths) of a torch batch."""
    inputs = {name: value.numpy() for name, value in batch.inputs.items() if value is not None}
    return inputs, batch.lengths.numpy()


def numpy_emissions(tagger, batch):
    weights = {name: value.float().numpy() for name, value in tagger.model.state_dict().items()}
    model = vars(tagger.config.model)
    return emissions(weights, model, tagger.vocabularies, *batch_arrays(batch))


def torch_emissions(tagger, batch):
    tagger.model.eval()
    with torch.no_grad():
        return tagger.model.emissions(batch).numpy()


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"model__char_encoder": "lstm"},
        {"model__char_encoder": "none", "model__casing_dim": 4},
        {"model__num_layers": 2, "model__hidden_layer": 16},
        {"model__document_context": True},
        {"model__lexicons": {"LOC": "tests/fixtures/lexicons/locations.txt"}},
    ],
    ids=["cnn", "char-lstm", "casing", "two-layers-tanh", "document-context", "lexicons"],
)
def test_numpy_emissions_equal_torch(trained_tiny, settings, runtime_loops):
    tagger = trained_tiny(train__epochs=1, **settings)
    batch = build_batch(SENTENCES, tagger.vocabularies, documents=DOCUMENTS)
    expected = torch_emissions(tagger, batch)
    got = numpy_emissions(tagger, batch)
    mask = batch.mask.numpy()
    np.testing.assert_allclose(got[mask], expected[mask], rtol=1e-5, atol=1e-5)


def test_a_sentence_scores_the_same_alone_and_padded_in_a_batch(trained_tiny, runtime_loops):
    tagger = trained_tiny(train__epochs=1, model__char_encoder="lstm")
    together = numpy_emissions(tagger, build_batch(SENTENCES, tagger.vocabularies))
    for index, sentence in enumerate(SENTENCES):
        alone = numpy_emissions(tagger, build_batch([sentence], tagger.vocabularies))
        np.testing.assert_allclose(together[index, : len(sentence)], alone[0], rtol=1e-5, atol=1e-6)


def test_a_words_character_encoding_is_the_same_bits_whatever_shares_its_batch(runtime_loops):
    # Encodings are kept across batches (WordEncodings), so they must not depend on the batch.
    from crftag.features.chars import char_lstm as _char_lstm
    from crftag.runtime.recurrent import network_layers

    generator = np.random.default_rng(0)
    weights = {"char_encoder.embedding.weight": generator.normal(size=(30, 5)).astype(np.float32)}
    for name, shape in (("weight_ih", (28, 5)), ("weight_hh", (28, 7)), ("bias_ih", (28,))):
        for suffix in ("", "_reverse"):
            weights[f"char_encoder.lstm.{name}_l0{suffix}"] = generator.normal(size=shape).astype(
                np.float32
            )
            weights[f"char_encoder.lstm.bias_hh_l0{suffix}"] = np.zeros(28, np.float32)
    layers = network_layers(weights, "char_encoder.lstm.", exact_sums=True)
    chars = generator.integers(1, 30, size=(23, 9))
    chars[np.arange(23), generator.integers(1, 9, size=23)] = 0  # ragged words
    chars = np.where(np.cumsum(chars == 0, axis=1) > 0, 0, chars)
    together = _char_lstm(weights, layers, chars)
    for word in range(len(chars)):
        alone = _char_lstm(weights, layers, chars[word : word + 1])
        assert np.array_equal(alone[0], together[word]), word
