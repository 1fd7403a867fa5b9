"""The dictionary features' learned vectors (:mod:`crftag.data.lexicons` matches the entries).

Shapes: B sentences, T words, L dictionary types, D each type's vector size.
"""

from __future__ import annotations

import torch
from torch import nn

from crftag.data.lexicons import POSITIONS

__all__ = ["LexiconEmbedding"]


class LexiconEmbedding(nn.Module):
    """A learned vector for each dictionary type's position of a token (O, B, I, E, S:
    :mod:`crftag.data.lexicons`), the types' vectors side by side:
    positions (B, T, L) long -> (B, T, L * D)."""

    def __init__(self, num_types: int, dim: int) -> None:
        super().__init__()
        self.num_types = num_types
        self.embedding = nn.Embedding(num_types * len(POSITIONS), dim)

    def forward(self, positions: torch.Tensor) -> torch.Tensor:
        # Each type has rows of its own: type l's position p is row l * 5 + p.
        offsets = torch.arange(self.num_types, device=positions.device) * len(POSITIONS)  # (L,)
        embedded = self.embedding(positions + offsets)  # (B, T, L, D)
        return embedded.flatten(start_dim=2)
