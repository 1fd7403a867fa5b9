"""The training path's BiLSTM (crftag/nn/fused_lstm.py, a hand-written backward pass) against
torch's ``nn.LSTM`` on packed sequences: the same states and the same gradients for inputs and
every weight, in float64, through the compiled time loops and the torch ones (the ``loops``
fixture); and the encoders that use it against their plain forms."""

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from crftag.nn.encoders import CharLSTM, Dropout, WordBiLSTM
from crftag.nn.fused_lstm import bilstm_layer

LENGTH_CASES = {
    "mixed": [3, 7, 1, 7, 5],
    "equal": [4, 4, 4],
    "one row": [6],
    "ones": [1, 1],
}


def packed_lstm(lstm, inputs, lengths):
    packed = pack_padded_sequence(inputs, lengths, batch_first=True, enforce_sorted=False)
    output, _ = lstm(packed)
    return pad_packed_sequence(output, batch_first=True, total_length=inputs.size(1))[0]


def layer_weights(lstm, layer=0):
    names = [f"l{layer}", f"l{layer}_reverse"]
    return (
        torch.stack([getattr(lstm, f"weight_ih_{n}") for n in names]),
        torch.stack([getattr(lstm, f"weight_hh_{n}") for n in names]),
        torch.stack([getattr(lstm, f"bias_ih_{n}") + getattr(lstm, f"bias_hh_{n}") for n in names]),
    )


def gradients(output, leaves, seed=0):
    weights = torch.randn(output.shape, generator=torch.Generator().manual_seed(seed))
    return torch.autograd.grad((output * weights.to(output.dtype)).sum(), leaves)


@pytest.mark.parametrize("lengths", LENGTH_CASES.values(), ids=LENGTH_CASES.keys())
def test_states_and_every_gradient_equal_nn_lstms(lengths, loops):
    torch.manual_seed(0)
    lstm = nn.LSTM(4, 3, batch_first=True, bidirectional=True).double()
    lengths = torch.tensor(lengths)
    inputs = torch.randn(len(lengths), int(lengths.max()) + 1, 4, dtype=torch.float64)
    inputs.requires_grad_(True)
    leaves = [inputs, *lstm.parameters()]
    expected = packed_lstm(lstm, inputs, lengths)
    fused = bilstm_layer(inputs, lengths, *layer_weights(lstm))
    torch.testing.assert_close(fused, expected, rtol=0, atol=1e-14)
    for got, want in zip(gradients(fused, leaves), gradients(expected, leaves), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-13)


def test_gradcheck(loops):
    torch.manual_seed(1)
    lengths = torch.tensor([2, 5, 3])
    inputs = torch.randn(3, 5, 2, dtype=torch.float64, requires_grad=True)
    weights = [
        torch.randn(2, 8, 2, dtype=torch.float64, requires_grad=True),
        torch.randn(2, 8, 2, dtype=torch.float64, requires_grad=True),
        torch.randn(2, 8, dtype=torch.float64, requires_grad=True),
    ]
    assert torch.autograd.gradcheck(
        lambda x, a, b, c: bilstm_layer(x, lengths, a, b, c), (inputs, *weights)
    )


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "torch"])
@pytest.mark.parametrize("num_layers", [1, 2])
def test_the_word_encoder_trains_through_it_and_tags_through_torch_alike(num_layers, fast):
    torch.manual_seed(2)
    encoder = WordBiLSTM(6, 5, num_layers, dropout=0.0).double()
    encoder.fast_training = fast
    lengths = torch.tensor([4, 2, 6])
    inputs = torch.randn(3, 6, 6, dtype=torch.float64, requires_grad=True)
    leaves = [inputs, *encoder.parameters()]
    trained = encoder(inputs, lengths)  # gradients flow: the fused layers
    expected = packed_lstm(encoder.lstm, inputs, lengths)
    torch.testing.assert_close(trained, expected, rtol=0, atol=1e-13)
    for got, want in zip(gradients(trained, leaves), gradients(expected, leaves), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
    with torch.no_grad():  # tagging: torch's own LSTM
        torch.testing.assert_close(encoder(inputs, lengths), expected, rtol=0, atol=1e-13)


def per_word_char_states(encoder, chars):
    """The character encoder's answer computed word by word, with torch's LSTM: (B, T, 2H)."""
    rows = []
    for word in chars.view(-1, chars.size(2)):
        length = int(word.ne(0).sum())
        if not length:
            rows.append(torch.zeros(encoder.output_size, dtype=torch.float64))
            continue
        embedded = encoder.embedding(word[:length]).unsqueeze(0)
        _, (hidden, _) = encoder.lstm(embedded)
        rows.append(torch.cat([hidden[0, 0], hidden[1, 0]]))
    return torch.stack(rows).view(chars.size(0), chars.size(1), -1)


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "torch"])
def test_characters_are_encoded_once_per_distinct_word_with_the_same_answers_and_gradients(fast):
    torch.manual_seed(3)
    encoder = CharLSTM(num_chars=9, char_dim=4, hidden_size=3).double()
    encoder.fast_training = fast
    words = [[2, 3, 4], [5], [2, 3, 4], [6, 7, 8, 2, 3], [5], [0, 0, 0]]  # repeats, padding
    chars = torch.zeros(2, 3, 5, dtype=torch.long)
    for index, word in enumerate(words):
        chars[index // 3, index % 3, : len(word)] = torch.tensor(word)
    expected = per_word_char_states(encoder, chars)
    leaves = list(encoder.parameters())
    trained = encoder(chars)
    torch.testing.assert_close(trained, expected, rtol=0, atol=1e-13)
    for got, want in zip(gradients(trained, leaves), gradients(expected, leaves), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
    with torch.no_grad():
        torch.testing.assert_close(encoder(chars), expected, rtol=0, atol=1e-13)
    assert not encoder(torch.zeros(1, 2, 3, dtype=torch.long)).any()


def test_fast_training_switches_every_module_and_only_fast_runs_the_fused_layer(monkeypatch):
    from crftag.nn import encoders

    calls = []
    real = encoders.bilstm_layer
    monkeypatch.setattr(encoders, "bilstm_layer", lambda *a: calls.append(1) or real(*a))
    model = torch.nn.Sequential(WordBiLSTM(4, 3, 1, 0.0), CharLSTM(9, 4, 3), Dropout(0.5))
    flags = [m for m in model.modules() if hasattr(m, "fast_training")]
    assert len(flags) == 2 and not any(m.fast_training for m in flags)  # off unless asked
    inputs, lengths = torch.randn(2, 3, 4, requires_grad=True), torch.tensor([3, 1])
    model[0](inputs, lengths).sum().backward()
    assert not calls
    encoders.use_fast_training(model, True)
    assert all(m.fast_training for m in flags)
    model[0](inputs, lengths).sum().backward()
    assert calls


@pytest.mark.parametrize("p", [0.5, 0.3])
def test_dropout_draws_nn_dropouts_masks(p):
    """A seed draws exactly the masks torch's nn.Dropout draws and leaves the generator where
    it leaves it, so a recipe trains along the trajectory its published runs took."""
    inputs = torch.randn(4, 7, 11)
    torch.manual_seed(5)
    expected = torch.nn.Dropout(p).train()(inputs)
    state_after = torch.get_rng_state()
    layer = Dropout(p).train()
    torch.manual_seed(5)
    assert torch.equal(layer(inputs), expected)
    assert torch.equal(torch.get_rng_state(), state_after)
    assert layer.eval()(inputs) is inputs


def test_dropout_gradient_is_nn_dropouts():
    inputs = torch.randn(3, 5, 6, requires_grad=True)
    torch.manual_seed(8)
    torch.nn.functional.dropout(inputs, 0.5, True).pow(2).sum().backward()
    expected, inputs.grad = inputs.grad, None
    torch.manual_seed(8)
    Dropout(0.5).train()(inputs).pow(2).sum().backward()
    assert torch.equal(inputs.grad, expected)


# The runs of the two tests below: one of them (the default, fast path) serves both.
CHAR_LSTM = dict(model__char_encoder="lstm", model__char_size=8, train__epochs=2, train__seed=3)


def test_training_with_torchs_own_dropout_is_the_same_to_the_bit(tiny_run, train_tiny, monkeypatch):
    """The default path's epochs with ``F.dropout`` in place of crftag's draws: the same
    losses and dev scores exactly, not up to rounding."""
    from crftag.nn import encoders

    _, ours = tiny_run(train__fast_encoder=True, **CHAR_LSTM)
    monkeypatch.setattr(encoders, "dropout", torch.nn.functional.dropout)
    _, torchs = train_tiny(train__fast_encoder=True, **CHAR_LSTM)
    assert [(e.loss, e.dev_score) for e in ours] == [(e.loss, e.dev_score) for e in torchs]


def test_the_fast_encoder_trains_along_the_default_path(tiny_run):
    """``train.fast_encoder`` computes the same functions up to float summation order and
    draws the same random numbers (dropout masks, word dropout, shuffling), so one seed's
    epochs give the same losses and dev scores on either path, up to float rounding."""
    _, default = tiny_run(train__fast_encoder=False, **CHAR_LSTM)
    _, fast = tiny_run(train__fast_encoder=True, **CHAR_LSTM)
    assert [e.loss for e in fast] == pytest.approx([e.loss for e in default], rel=1e-4)
    assert [e.dev_score for e in fast] == pytest.approx([e.dev_score for e in default], abs=2e-3)
