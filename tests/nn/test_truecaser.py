"""The truecaser: its loss is the log-softmax of each character's case, computed here directly
in float64 from the states; the upper-case probabilities a tagger reads sit at each word's
characters, and do not depend on the casing of the text."""

import torch

from crftag.data.batching import CharLMInputs
from crftag.data.char_codes import CharCodes
from crftag.data.truecase import case_targets, truecaser_words
from crftag.nn.truecaser import IGNORED, Truecaser

CODES = CharCodes([*"\0\1\2", *"abcdefghijklmnopqrstuvwxyz .ß"])


def tiny_truecaser():
    torch.manual_seed(0)
    return Truecaser(num_symbols=len(CODES), char_dim=3, hidden_size=4).double()


def direct_states(model, line):
    """(L, 2H) the states of ``nn.LSTM`` over one line's codes, run alone."""
    states, _ = model.encoder.lstm(model.embedding(torch.tensor(line)).unsqueeze(0))
    return states[0]


def test_targets_mark_the_upper_case_characters_and_keep_lengths():
    assert case_targets("Bob WAS ßad") == ("bob was ßad", [1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0])
    # İ lower-cases to two characters: kept as it is, and not counted as upper-case
    assert case_targets("İx") == ("İx", [0, 0])


def case_batch(lines):
    """(codes (B, L), lengths (B,), targets (B, L)) of lines, as pretraining batches them."""
    rows, targets = [], []
    for line in lines:
        lowered, marks = case_targets(line)
        rows.append(CODES.encode(lowered))
        targets.append([IGNORED, *marks, IGNORED])
    width = max(map(len, rows))
    codes = torch.tensor([row + [0] * (width - len(row)) for row in rows])
    padded = torch.tensor([row + [IGNORED] * (width - len(row)) for row in targets])
    return codes, torch.tensor([len(row) for row in rows]), padded


def direct_nll(model, lines):
    """The loss summed character by character from an ``nn.LSTM`` run one line at a time."""
    total = torch.zeros((), dtype=torch.float64)
    for line in lines:
        lowered, marks = case_targets(line)
        states = direct_states(model, CODES.encode(lowered))[1:-1]  # the characters' states
        scores = torch.log_softmax(model.output(states), dim=1)  # (len(line), 2)
        for position, mark in enumerate(marks):
            total -= scores[position, mark]
    return total


def test_loss_equals_a_direct_log_softmax_computation():
    model = tiny_truecaser()
    lines = ["Ab c", "dE", "ßX."]
    with torch.no_grad():
        assert torch.allclose(model.nll(*case_batch(lines)), direct_nll(model, lines), atol=1e-10)


def test_training_loss_by_the_compiled_loops_equals_the_direct_computation(compiled_loops):
    model = tiny_truecaser()
    lines = ["Ab c", "dE"]
    loss = model.nll(*case_batch(lines))  # gradients on: the fused layer runs
    assert loss.requires_grad
    assert torch.allclose(loss.detach(), direct_nll(model, lines).detach(), atol=1e-10)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


def test_upper_probabilities_sit_at_each_characters_position_in_the_sentence():
    model = tiny_truecaser()
    words = ["Ab", "cde"]
    chars = torch.tensor([[[5, 6, 0], [7, 8, 9]]])  # (1, 2, 3): any codes, 0 = padding
    inputs = CharLMInputs.collate([truecaser_words(words, CODES, 64)])
    with torch.no_grad():
        got = model.upper_probabilities(inputs, chars)  # (1, 2, 3)
        line = CODES.encode("ab cde")  # "\2ab cde\2": "ab" at 1..2, "cde" at 4..6
        upper = torch.softmax(model.output(direct_states(model, line)), dim=1)[:, 1]
    expected = torch.tensor([[[upper[1], upper[2], 0.0], [upper[4], upper[5], upper[6]]]])
    assert torch.allclose(got.double(), expected, atol=1e-6)


def test_the_feature_is_the_same_whatever_the_casing_of_the_sentence():
    model = tiny_truecaser()
    chars = torch.ones(1, 3, 6, dtype=torch.long)
    casings = [
        ["the", "bank", "ßadly"],
        ["THE", "BANK", "ßADLY"],
        ["The", "Bank", "ßadly"],
    ]
    with torch.no_grad():
        features = [
            model.upper_probabilities(
                CharLMInputs.collate([truecaser_words(words, CODES, 64)]), chars
            )
            for words in casings
        ]
    assert all(torch.equal(features[0], other) for other in features[1:])


def test_a_word_cut_for_the_character_encoder_is_cut_the_same_for_the_truecaser():
    # The character encoder reads the first and last two characters of "abcdefg" with a
    # limit of 4: the truecaser reads the same four, so character j stays at firsts + j.
    coded, lasts, firsts = truecaser_words(["ABCDEFG", "x"], CODES, 4)
    assert coded == CODES.encode("abfg x") and firsts == [1, 6] and lasts == [4, 6]
