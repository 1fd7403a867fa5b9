"""Neural encoders: character encoders for word shape, and the word-level BiLSTM.

Shapes: B sentences, T words, C characters per word, D feature sizes.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

__all__ = ["CharCNN", "CharLSTM", "WordBiLSTM"]


class CharCNN(nn.Module):
    """Ma & Hovy (2016): character embeddings, one convolution, max-pooled over each word.

    chars (B, T, C) long, 0 = padding -> (B, T, num_filters)
    """

    def __init__(self, num_chars: int, char_dim: int, num_filters: int, kernel: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(num_chars, char_dim, padding_idx=0)
        self.conv = nn.Conv1d(char_dim, num_filters, kernel, padding=kernel // 2)
        self.output_size = num_filters

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        batch_size, length, width = chars.shape
        flat = chars.view(-1, width)  # (B*T, C)
        embedded = self.embedding(flat).transpose(1, 2)  # (B*T, D, C)
        features = self.conv(embedded)[:, :, :width]  # (B*T, F, C); even kernels add one column
        # Padding characters must not win the max; padding words (no characters) pool to 0.
        padding = (flat == 0).unsqueeze(1)
        pooled = features.masked_fill(padding, float("-inf")).amax(dim=2)  # (B*T, F)
        pooled = torch.where(torch.isfinite(pooled), pooled, torch.zeros_like(pooled))
        return pooled.view(batch_size, length, -1)


class CharLSTM(nn.Module):
    """Lample et al. (2016): a BiLSTM over each word's characters; the two final states.

    chars (B, T, C) long, 0 = padding -> (B, T, 2 * hidden_size)
    """

    def __init__(self, num_chars: int, char_dim: int, hidden_size: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(num_chars, char_dim, padding_idx=0)
        self.lstm = nn.LSTM(char_dim, hidden_size, batch_first=True, bidirectional=True)
        self.output_size = 2 * hidden_size

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        batch_size, length, width = chars.shape
        flat = chars.view(-1, width)  # (B*T, C)
        word_lengths = flat.ne(0).sum(1)  # (B*T,)
        real = word_lengths > 0
        output = flat.new_zeros(flat.size(0), self.output_size, dtype=torch.float)
        output = output.to(self.embedding.weight.dtype)
        if bool(real.any()):
            embedded = self.embedding(flat[real])  # (N, C, D)
            packed = pack_padded_sequence(
                embedded, word_lengths[real].cpu(), batch_first=True, enforce_sorted=False
            )
            _, (hidden, _) = self.lstm(packed)  # hidden (2, N, H)
            output[real] = torch.cat([hidden[0], hidden[1]], dim=1)
        return output.view(batch_size, length, -1)


class WordBiLSTM(nn.Module):
    """A BiLSTM over the words of each sentence, packed so padding costs nothing.

    inputs (B, T, D), lengths (B,) on the CPU -> (B, T, 2 * hidden_size), zeros past each end
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int, dropout: float) -> None:
        super().__init__()
        self.lstm = nn.LSTM(
            input_size,
            hidden_size,
            num_layers=num_layers,
            batch_first=True,
            bidirectional=True,
            dropout=dropout if num_layers > 1 else 0.0,
        )
        self.output_size = 2 * hidden_size

    def forward(self, inputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = pack_padded_sequence(inputs, lengths, batch_first=True, enforce_sorted=False)
        output, _ = self.lstm(packed)
        padded, _ = pad_packed_sequence(output, batch_first=True, total_length=inputs.size(1))
        return padded
