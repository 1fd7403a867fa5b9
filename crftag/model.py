"""The tagger: word embeddings and a character encoder, a BiLSTM, a linear layer to emission
scores, and a CRF on top.
"""

from __future__ import annotations

import torch
from torch import nn

from crftag.batching import Batch
from crftag.config import ModelConfig
from crftag.crf import CRF
from crftag.encoder import CharCNN, CharLSTM, WordBiLSTM

__all__ = ["BiLSTMCRF"]


class BiLSTMCRF(nn.Module):
    """BiLSTM-CRF sequence labeller (Lample et al. 2016; Ma & Hovy 2016).

    ``constraints`` is (allowed (K, K), allowed_start (K,), allowed_end (K,)) booleans for the CRF,
    or None for none.
    """

    def __init__(
        self,
        config: ModelConfig,
        *,
        num_words: int,
        num_chars: int,
        num_tags: int,
        constraints: tuple | None = None,
    ) -> None:
        super().__init__()
        self.word_embedding = nn.Embedding(num_words, config.word_dim, padding_idx=0)
        # Ma & Hovy's initialisation: uniform in +-sqrt(3 / dim), a unit-variance start.
        bound = (3.0 / config.word_dim) ** 0.5
        nn.init.uniform_(self.word_embedding.weight, -bound, bound)
        with torch.no_grad():
            self.word_embedding.weight[0].zero_()
        if config.char_encoder == "cnn":
            self.char_encoder = CharCNN(
                num_chars, config.char_dim, config.char_size, config.char_kernel
            )
        elif config.char_encoder == "lstm":
            self.char_encoder = CharLSTM(num_chars, config.char_dim, config.char_size)
        else:
            self.char_encoder = None
        char_size = self.char_encoder.output_size if self.char_encoder is not None else 0
        self.dropout = nn.Dropout(config.dropout)
        self.encoder = WordBiLSTM(
            config.word_dim + char_size, config.hidden_size, config.num_layers, config.dropout
        )
        self.projection = nn.Linear(self.encoder.output_size, num_tags)
        allowed = dict(
            zip(("allowed", "allowed_start", "allowed_end"), constraints or (), strict=False)
        )
        self.crf = CRF(num_tags, **{k: torch.tensor(v) for k, v in allowed.items()})

    def emissions(self, batch: Batch) -> torch.Tensor:
        """Emission scores (B, T, K) for a batch."""
        features = self.word_embedding(batch.words)  # (B, T, Dw)
        if self.char_encoder is not None:
            features = torch.cat([features, self.char_encoder(batch.chars)], dim=2)
        encoded = self.encoder(self.dropout(features), batch.lengths)  # (B, T, 2H)
        return self.projection(self.dropout(encoded))

    def loss(self, batch: Batch, reduction: str = "sum", amp: bool = False) -> torch.Tensor:
        """CRF negative log-likelihood of the batch's gold tags.

        With ``amp`` the encoder runs under bfloat16 autocast while the CRF's sums of many
        exponentials stay in float32.
        """
        with torch.autocast(batch.words.device.type, dtype=torch.bfloat16, enabled=amp):
            emissions = self.emissions(batch)
        return self.crf.nll(emissions.float(), batch.tags, batch.mask, reduction=reduction)

    def forward(self, batch: Batch, reduction: str = "sum", amp: bool = False) -> torch.Tensor:
        """The training loss: DistributedDataParallel hooks ``forward``, so the loss is it."""
        return self.loss(batch, reduction, amp)

    def decode(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """Viterbi tags (B, T) and their scores (B,)."""
        return self.crf.decode(self.emissions(batch), batch.mask)
