"""The character language models: their loss is the log-softmax of the next (previous)
character, computed here directly in float64 from the states, position by position."""

import torch

from crftag.nn.char_lm import CharLanguageModels


def tiny_models():
    torch.manual_seed(0)
    return CharLanguageModels(num_symbols=7, char_dim=3, hidden_size=4).double()


def direct_nll(models, codes, lengths):
    """The two losses summed position by position from an ``nn.LSTM`` run one line at a time."""
    hidden = models.hidden_size
    totals = torch.zeros(2, dtype=torch.float64)
    for row, length in enumerate(lengths.tolist()):
        line = codes[row, :length]
        states, _ = models.encoder.lstm(models.embedding(line).unsqueeze(0))  # (1, L, 2H)
        states = states[0]
        for t in range(length - 1):  # forward: state at t predicts code t + 1
            scores = torch.log_softmax(models.forward_softmax(states[t, :hidden]), dim=0)
            totals[0] -= scores[line[t + 1]]
        for t in range(1, length):  # backward: state at t predicts code t - 1
            scores = torch.log_softmax(models.backward_softmax(states[t, hidden:]), dim=0)
            totals[1] -= scores[line[t - 1]]
    return totals


def test_loss_equals_a_direct_log_softmax_computation():
    models = tiny_models()
    codes = torch.tensor([[2, 3, 4, 5, 6, 2], [2, 5, 1, 2, 0, 0], [2, 4, 2, 0, 0, 0]])
    lengths = torch.tensor([6, 4, 3])
    expected = direct_nll(models, codes, lengths)
    with torch.no_grad():
        assert torch.allclose(models.nll(codes, lengths), expected, atol=1e-10)


def test_training_loss_by_the_compiled_loops_equals_the_direct_computation(compiled_loops):
    models = tiny_models()
    codes = torch.tensor([[2, 3, 4, 5, 2], [2, 6, 2, 0, 0]])
    lengths = torch.tensor([5, 3])
    loss = models.nll(codes, lengths)  # gradients on: the fused layer runs
    assert loss.requires_grad
    assert torch.allclose(loss.detach(), direct_nll(models, codes, lengths).detach(), atol=1e-10)
    loss.sum().backward()
    assert all(p.grad is not None for p in models.parameters())


def test_padding_changes_no_loss():
    models = tiny_models()
    codes = torch.tensor([[2, 3, 4, 2]])
    padded = torch.tensor([[2, 3, 4, 2, 5, 5]])
    with torch.no_grad():
        short = models.nll(codes, torch.tensor([4]))
        long = models.nll(padded, torch.tensor([4]))
    assert torch.equal(short, long)


def test_word_states_are_the_forward_state_at_the_last_and_the_backward_at_the_first_character():
    from crftag.data.char_codes import CharCodes
    from crftag.features.char_lm import CharLMInputs

    codes = CharCodes([*"\0\1\2", *"abcdefghijklmnopqrstuvwxyz "])
    torch.manual_seed(0)
    models = CharLanguageModels(num_symbols=len(codes), char_dim=3, hidden_size=4)
    sentences = [["ab", "cde"], ["f"]]
    inputs = CharLMInputs.collate([codes.encode_words(words) for words in sentences])
    with torch.no_grad():
        got = models.word_states(inputs)  # (2, 2, 8)
        hidden = models.hidden_size
        for row, words in enumerate(sentences):
            line = torch.tensor(codes.encode(" ".join(words)))
            states, _ = models.encoder.lstm(models.embedding(line).unsqueeze(0))
            states = states[0]  # (L, 2H); "\0ab cde\0": "ab" is 1..2, "cde" 4..6
            edges = {0: [(1, 2), (4, 6)], 1: [(1, 1)]}[row]
            for position, (first, last) in enumerate(edges):
                expected = torch.cat([states[last, :hidden], states[first, hidden:]])
                assert torch.allclose(got[row, position], expected, atol=1e-6)
