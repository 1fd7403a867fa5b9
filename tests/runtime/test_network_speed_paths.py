"""The NumPy network's shortcuts change no score: character encodings kept across batches (also
when the store fills up and starts over), only real positions computed (padding still scores as
torch scores it), and packed LSTM rows, including empty ones."""

import numpy as np
import pytest
import torch

from crftag.data.batching import build_batch
from crftag.features import chars
from crftag.runtime.network import Network, lstm

SENTENCES = [
    ["John", "Smith", "lives", "in", "Berlin", "."],
    ["Shares", "of", "Siemens", "AG", "rose", "3.5", "%", "in", "Frankfurt", "."],
    ["OK"],
    ["The", "U.S.", "team", "beat", "JAPAN", "2-1", "on", "Friday", "."],
    ["Smith", "left", "Berlin", "for", "Frankfurt", "on", "Friday", "."],
]
DOCUMENTS = ["a", "a", "b", "b", "c"]


def arrays(batch):
    inputs = {name: value.numpy() for name, value in batch.inputs.items() if value is not None}
    return inputs, batch.lengths.numpy()


def make_network(tagger):
    weights = {name: value.float().numpy() for name, value in tagger.model.state_dict().items()}
    model = vars(tagger.config.model)
    return Network(weights, model, tagger.vocabularies)


@pytest.mark.parametrize("encoder", ["cnn", "lstm"])
@pytest.mark.parametrize("capacity", [1 << 16, 20, 6])
def test_a_network_reused_across_batches_scores_as_a_fresh_one(
    trained_tiny, monkeypatch, encoder, capacity
):
    # 20: the store fills up and starts over; 6: no batch fits, none is kept
    monkeypatch.setattr(chars, "CACHE_WORDS", capacity)
    tagger = trained_tiny(train__epochs=1, model__char_encoder=encoder)
    reused = make_network(tagger)
    for start in (3, 0, 2, 0):
        batch = build_batch(SENTENCES[start:], tagger.vocabularies)
        fresh = make_network(tagger).emissions(*arrays(batch))
        np.testing.assert_allclose(reused.emissions(*arrays(batch)), fresh, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("settings", [{}, {"model__document_context": True}])
def test_padding_positions_score_as_torch_scores_them(trained_tiny, settings):
    tagger = trained_tiny(train__epochs=1, model__char_encoder="lstm", **settings)
    batch = build_batch(SENTENCES, tagger.vocabularies, documents=DOCUMENTS)
    tagger.model.eval()
    with torch.no_grad():
        expected = tagger.model.emissions(batch).numpy()
    got = make_network(tagger).emissions(*arrays(batch))
    assert got.shape == expected.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_packed_lstm_rows_match_torch_with_an_empty_row(runtime_loops):
    torch.manual_seed(0)
    module = torch.nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True).eval()
    weights = {f"lstm.{name}": value.numpy() for name, value in module.state_dict().items()}
    inputs = torch.randn(4, 5, 3)
    lengths = torch.tensor([2, 5, 0, 3])
    outputs, finals = lstm(weights, "lstm.", inputs.numpy(), lengths.numpy())
    assert not outputs[2].any() and not finals[:, 2].any()
    for row in (0, 1, 3):
        length = int(lengths[row])
        with torch.no_grad():
            alone, (hidden, _) = module(inputs[row : row + 1, :length])
        np.testing.assert_allclose(outputs[row, :length], alone[0].numpy(), atol=1e-6)
        assert not outputs[row, length:].any()
        np.testing.assert_allclose(finals[:, row], hidden[2:, 0].numpy(), atol=1e-6)
