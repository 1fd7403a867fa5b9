"""A forward and a backward character language model (flair, Akbik et al. 2018): one LSTM layer
each over a line's characters, with a softmax over the character vocabulary.

The two models read the same character embeddings and run as the two directions of one
bidirectional layer (:class:`crftag.nn.encoders.WordBiLSTM`: on the CPU the compiled loops of
crftag/runtime/_lstm.c while training, cuDNN on a GPU), each with its own weights and its own
softmax. Shapes: B lines, T codes a line (boundary symbols included), E the embedding size, H
each model's hidden units, V the vocabulary size.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional

from crftag.nn.encoders import WordBiLSTM

__all__ = ["CharLanguageModels"]


class CharLanguageModels(nn.Module):
    """codes (B, T) long, lengths (B,) -> the two models' states and their losses."""

    def __init__(self, num_symbols: int, char_dim: int, hidden_size: int) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(num_symbols, char_dim)
        self.encoder = WordBiLSTM(char_dim, hidden_size, num_layers=1, dropout=0.0)
        self.encoder.fast_training = True
        self.forward_softmax = nn.Linear(hidden_size, num_symbols)
        self.backward_softmax = nn.Linear(hidden_size, num_symbols)

    def states(self, codes: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(B, T, 2H): at step t the forward model's state after reading codes 0..t, then the
        backward model's after reading codes t..length-1 from the end; zeros past the end."""
        return self.encoder(self.embedding(codes), lengths.cpu())

    def word_states(self, inputs) -> torch.Tensor:
        """(B, T, 2H): each word's contextual string embedding (flair): the forward model's
        state after the word's last character, then the backward model's state at its first
        character (having read the sentence from its end back to the word's start).
        ``inputs``: a :class:`crftag.features.char_lm.CharLMInputs` (not imported: that module
        builds this one)."""
        states = self.states(inputs.codes, inputs.lengths)  # (B, L, 2H)
        hidden = self.hidden_size
        lasts = inputs.lasts.unsqueeze(2).expand(-1, -1, hidden)  # (B, T, H)
        firsts = inputs.firsts.unsqueeze(2).expand(-1, -1, hidden)
        forward = states[..., :hidden].gather(1, lasts)
        backward = states[..., hidden:].gather(1, firsts)
        return torch.cat([forward, backward], dim=2)

    def nll(self, codes: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(2,): the forward and the backward model's negative log-likelihood of the lines,
        summed over every predicted code (``lengths - 1`` of each line, each way): the forward
        model predicts code t + 1 from its state at t, the backward one code t - 1 from its
        state at t."""
        states = self.states(codes, lengths)  # (B, T, 2H)
        steps = codes.size(1) - 1
        predicted = (
            torch.arange(steps, device=codes.device) < (lengths.to(codes.device) - 1)[:, None]
        )
        hidden = self.hidden_size
        forward = self.forward_softmax(states[:, :-1, :hidden][predicted])  # (M, V)
        backward = self.backward_softmax(states[:, 1:, hidden:][predicted])  # (M, V)
        return torch.stack(
            [
                functional.cross_entropy(forward, codes[:, 1:][predicted], reduction="sum"),
                functional.cross_entropy(backward, codes[:, :-1][predicted], reduction="sum"),
            ]
        )
