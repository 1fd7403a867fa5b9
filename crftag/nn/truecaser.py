"""A character truecaser (Mayhew, Gupta & Roth, AAAI 2020): one BiLSTM layer over the characters
of a lower-cased line, and for each character two logits, kept lower-case or upper-case.

Pretrained by ``crftag pretrain --objective truecase``; a tagger with ``model.truecaser`` appends
each character's probability of being upper-case to that character's embedding in its character
encoder. The layer runs as :class:`crftag.nn.encoders.WordBiLSTM` (on the CPU the compiled loops
while training). Shapes: B lines, L codes a line (boundary symbols included), T words, C
characters a word, E the embedding size, H each direction's hidden units.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional

from crftag.data.batching import CharLMInputs
from crftag.nn.encoders import WordBiLSTM

__all__ = ["IGNORED", "Truecaser"]

IGNORED = -1  # the target of a code that is no character of the line: boundary, padding


class Truecaser(nn.Module):
    """codes (B, L) long, lengths (B,) -> (B, L, 2) logits: lower-case, upper-case."""

    def __init__(self, num_symbols: int, char_dim: int, hidden_size: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(num_symbols, char_dim)
        self.encoder = WordBiLSTM(char_dim, hidden_size, num_layers=1, dropout=0.0)
        self.encoder.fast_training = True
        self.output = nn.Linear(2 * hidden_size, 2)

    def logits(self, codes: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(B, L, 2): each code's logits, from the states of both directions at it."""
        return self.output(self.encoder(self.embedding(codes), lengths.cpu()))

    def nll(
        self, codes: torch.Tensor, lengths: torch.Tensor, targets: torch.Tensor
    ) -> torch.Tensor:
        """Scalar: the negative log-likelihood of ``targets`` (B, L) long (1 upper-case, 0 not,
        :data:`IGNORED` at codes that are no character), summed over the characters."""
        logits = self.logits(codes, lengths)  # (B, L, 2)
        return functional.cross_entropy(
            logits.reshape(-1, 2), targets.reshape(-1), ignore_index=IGNORED, reduction="sum"
        )

    def upper_probabilities(self, inputs: CharLMInputs, chars: torch.Tensor) -> torch.Tensor:
        """(B, T, C): the probability that each character of ``chars`` (B, T, C) long, 0 =
        padding, is upper-case; 0 at padding. ``inputs`` holds the sentences as
        :func:`crftag.data.truecase.truecaser_words` encodes them, so a word's character j sits
        at ``firsts + j``."""
        logits = self.logits(inputs.codes, inputs.lengths)  # (B, L, 2)
        upper = torch.softmax(logits.float(), dim=2)[..., 1]  # (B, L)
        batch_size, length, width = chars.shape
        steps = torch.arange(width, device=chars.device)
        positions = inputs.firsts[:, :length, None] + steps  # (B, T, C)
        positions = positions.clamp(max=upper.size(1) - 1).view(batch_size, -1)
        gathered = upper.gather(1, positions).view(batch_size, length, width)
        return gathered.masked_fill(chars == 0, 0.0)
