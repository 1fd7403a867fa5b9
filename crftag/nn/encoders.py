"""Neural encoders: character encoders for word shape, and the word-level BiLSTM.

Shapes: B sentences, T words, C characters per word, D feature sizes.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from crftag.nn.fused_lstm import bilstm_layer

__all__ = [
    "CasingEmbedding",
    "CharCNN",
    "CharLSTM",
    "Dropout",
    "LockedDropout",
    "WordBiLSTM",
    "WordEmbedding",
    "use_fast_training",
]


class WordEmbedding(nn.Module):
    """Word vectors, (V, D), looked up as ``nn.Embedding(V, D, padding_idx=0)`` does:
    words (B, T) long -> (B, T, D).

    :meth:`fix_rows_from` moves the rows from ``first`` on out of the trained parameter into a
    fixed buffer. Training calls it for the pretrained words added beyond the training data:
    they never occur in a training batch, so their gradient is always zero and SGD with
    momentum or Adam (without weight decay) leaves them exactly as they are. Kept in the
    parameter, they would still cost a dense gradient, a clipping norm and an optimizer update
    over every row of the matrix at every step (80% of the rows with CoNLL-2003 and GloVe).
    The state dict holds one ``weight`` (V, D) either way, so checkpoints do not change.
    """

    def __init__(self, num_words: int, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(num_words, dim))
        self.register_buffer("fixed", torch.empty(0, dim), persistent=False)

    def fix_rows_from(self, first: int) -> None:
        """Train rows [0, first) only; keep rows [first, V) fixed."""
        with torch.no_grad():
            full = torch.cat([self.weight, self.fixed])
            if not 0 < first <= len(full):
                raise ValueError(f"expected 0 < first <= {len(full)}, got {first}")
            self.weight = nn.Parameter(
                full[:first].clone(), requires_grad=self.weight.requires_grad
            )
            self.fixed = full[first:].clone()

    def forward(self, words: torch.Tensor) -> torch.Tensor:
        if not len(self.fixed):
            return F.embedding(words, self.weight, padding_idx=0)
        trained = len(self.weight)
        inside = words < trained
        return torch.where(
            inside.unsqueeze(-1),
            F.embedding(words.clamp(max=trained - 1), self.weight, padding_idx=0),
            F.embedding((words - trained).clamp(min=0), self.fixed),
        )

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        weight = torch.cat([self.weight, self.fixed]) if len(self.fixed) else self.weight
        destination[prefix + "weight"] = weight if keep_vars else weight.detach()

    def _load_from_state_dict(self, state_dict, prefix, *args) -> None:
        key = prefix + "weight"
        full = state_dict.get(key)
        rows = len(self.weight) + len(self.fixed)
        if len(self.fixed) and full is not None and full.shape == (rows, self.fixed.shape[1]):
            with torch.no_grad():
                self.fixed.copy_(full[len(self.weight) :])
            state_dict[key] = full[: len(self.weight)]
        super()._load_from_state_dict(state_dict, prefix, *args)


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
        self.fast_training = False  # see use_fast_training

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        batch_size, length, width = chars.shape
        if chars.numel() == 0:
            return self.embedding.weight.new_zeros(batch_size, length, self.output_size)
        if self.training and not self.fast_training:
            return self._per_word(chars)
        # Once per distinct word of the batch, then gathered: news text repeats its words, so
        # a batch holds about a quarter as many distinct rows as words (padding rows among
        # them, which become the one all-padding row).
        distinct, where = distinct_rows(chars.view(-1, width))
        has_padding = not bool(distinct[0].any())
        encoded = self._encode(distinct[1:] if has_padding else distinct)
        if has_padding:
            encoded = torch.cat([encoded.new_zeros(1, self.output_size), encoded])
        return encoded[where].view(batch_size, length, -1)

    def _per_word(self, chars: torch.Tensor) -> torch.Tensor:
        """chars (B, T, C) -> (B, T, 2H): every word of the batch through the LSTM, as the
        recipe's published runs were trained."""
        batch_size, length, width = chars.shape
        flat = chars.view(-1, width)  # (B*T, C)
        real = flat.ne(0).any(1)  # (B*T,): positions holding a word
        output = flat.new_zeros(flat.size(0), self.output_size, dtype=self.embedding.weight.dtype)
        if bool(real.any()):
            output[real] = self._encode(flat[real]).to(output.dtype)
        return output.view(batch_size, length, -1)

    def _encode(self, words: torch.Tensor) -> torch.Tensor:
        """words (N, C) long, each at least one character, 0 = padding -> (N, 2H): the two
        final states."""
        embedded = self.embedding(words)  # (N, C, D)
        if not len(words):
            return embedded.new_zeros(0, self.output_size)
        lengths = words.ne(0).sum(1)  # (N,)
        if self.fast_training and _needs_fused(embedded, self.lstm):
            states = bilstm_layer(embedded, lengths, *_layer_weights(self.lstm, 0))  # (N, C, 2H)
            hidden_size = self.output_size // 2
            last = (lengths - 1).view(-1, 1, 1).expand(-1, 1, hidden_size)
            forward = states[..., :hidden_size].gather(1, last).squeeze(1)
            return torch.cat([forward, states[:, 0, hidden_size:]], dim=1)
        packed = pack_padded_sequence(
            embedded, lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        _, (hidden, _) = self.lstm(packed)  # hidden (2, N, H)
        return torch.cat([hidden[0], hidden[1]], dim=1)


def distinct_rows(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """rows (N, C) long, values >= 0 -> (distinct (M, C), where (N,)) with
    ``distinct[where] == rows``, the all-zero row (padding) first when there is one: what
    ``torch.unique(rows, dim=0, return_inverse=True)`` gives, up to the order of the other rows,
    at a tenth of its cost. Each row is summarised by one number, the 1-D keys are made unique,
    and the answer is checked row by row: two rows sharing a key (never seen) take the exact
    ``torch.unique`` instead, so no two words are ever merged."""
    weights = _row_weights(rows.size(1), rows.device)  # (C,), every weight positive
    keys = rows.to(torch.float64) @ weights  # (N,): 0 for the all-zero row only
    distinct_keys, where = torch.unique(keys, return_inverse=True)  # ascending: 0 first
    first = torch.empty(len(distinct_keys), dtype=torch.long, device=rows.device)
    first.scatter_(0, where, torch.arange(len(rows), device=rows.device))
    distinct = rows[first]  # (M, C)
    if not torch.equal(distinct[where], rows):
        return torch.unique(rows, dim=0, return_inverse=True)
    return distinct, where


@functools.cache
def _row_weights(width: int, device: torch.device) -> torch.Tensor:
    """(width,) float64 weights in [1, 2), fixed, drawn from a private generator so that the
    random stream training draws from is untouched."""
    generator = torch.Generator().manual_seed(width)
    return (1.0 + torch.rand(width, dtype=torch.float64, generator=generator)).to(device)


class CasingEmbedding(nn.Module):
    """An embedding of each word's casing class (Reimers & Gurevych 2017): lower-cased word
    vectors such as GloVe's cannot tell "Apple" from "apple", so the class says it directly.

    Classes: padding, numeric, mainly numeric, all lower, all upper, initial upper, contains a
    digit, other. They are computed from the character indices with tensor operations, through a
    table from character index to character kind built from the character vocabulary.

    chars (B, T, C) long, 0 = padding -> (B, T, dim)
    """

    NUM_CLASSES = 8

    def __init__(self, char_symbols: list[str], dim: int) -> None:
        super().__init__()
        # 0 padding, 1 upper, 2 lower, 3 digit, 4 anything else; indices 0 and 1 are the
        # padding and unknown characters (whose names must not be read as lower-case letters).
        kinds = [0, 4] + [
            1 if c.isupper() else 2 if c.islower() else 3 if c.isdigit() else 4
            for c in char_symbols[2:]
        ]
        self.register_buffer("char_kinds", torch.tensor(kinds, dtype=torch.long), persistent=False)
        self.embedding = nn.Embedding(self.NUM_CLASSES, dim, padding_idx=0)
        self.output_size = dim

    def classes(self, chars: torch.Tensor) -> torch.Tensor:
        """Casing class (B, T) of each word."""
        kinds = self.char_kinds[chars]  # (B, T, C)
        length = kinds.ne(0).sum(2)  # (B, T)
        upper, lower, digits = (kinds.eq(kind).sum(2) for kind in (1, 2, 3))
        classes = torch.full_like(length, 7)  # other
        classes = torch.where(digits > 0, torch.full_like(classes, 6), classes)
        classes = torch.where(kinds[:, :, 0].eq(1), torch.full_like(classes, 5), classes)
        classes = torch.where(upper.eq(length), torch.full_like(classes, 4), classes)
        classes = torch.where(lower.eq(length), torch.full_like(classes, 3), classes)
        classes = torch.where(2 * digits > length, torch.full_like(classes, 2), classes)
        classes = torch.where(digits.eq(length), torch.full_like(classes, 1), classes)
        return torch.where(length.eq(0), torch.zeros_like(classes), classes)

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        return self.embedding(self.classes(chars))


class Dropout(nn.Module):
    """``nn.Dropout``, with its probability checked when the model is built, drawing
    ``nn.Dropout``'s masks on every path (see :func:`dropout`), so a seed draws the same masks
    whichever encoder path trains.

    inputs (any shape) -> the same shape; the identity outside training
    """

    def __init__(self, p: float) -> None:
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"expected a dropout probability in [0, 1), got {p}")
        self.p = p

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return dropout(inputs, self.p, self.training)


def dropout(inputs: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """``F.dropout(inputs, p, training)``, bit for bit, drawing the same random numbers.

    Where torch's CPU ``bernoulli_`` draws one uniform double per element and compares it with
    the keep probability (every CPU on which torch does not hand it to MKL, AMD's among them),
    drawing those doubles as one vector is the same mask at less than two thirds of the cost
    (3.3 ms against ``F.dropout``'s 5.8 ms for a CoNLL-2003 batch's features, 2026-11-25);
    whether it is so on this machine is checked once per process
    (:func:`_uniform_draws_are_bernoulli`). Elsewhere, and for dtypes other than float32,
    ``F.dropout`` itself runs.
    """
    if not training or p == 0.0 or inputs.numel() == 0:
        return inputs
    exact = inputs.device.type == "cpu" and inputs.dtype == torch.float32
    if not exact or not _uniform_draws_are_bernoulli():
        return F.dropout(inputs, p, training)
    keep = 1.0 - p
    # F.dropout's steps: a 0/1 mask in the input's dtype, divided by keep, times the input.
    noise = (torch.rand(inputs.shape, dtype=torch.float64) < keep).to(inputs.dtype)
    return inputs * noise.div_(keep)


@functools.cache
def _uniform_draws_are_bernoulli() -> bool:
    """Whether ``bernoulli_(keep)`` on a float32 tensor is ``rand(float64) < keep`` and leaves
    the generator where the uniform draws leave it, on a private generator (the global stream
    untouched), at a small and a batch-sized shape."""
    generator = torch.Generator().manual_seed(2016)
    for size in (17, 300_000):
        state = generator.get_state()
        mask = torch.empty(size).bernoulli_(0.7, generator=generator).bool()
        after = generator.get_state()
        generator.set_state(state)
        draws = torch.rand(size, dtype=torch.float64, generator=generator) < 0.7
        if not torch.equal(mask, draws) or not torch.equal(after, generator.get_state()):
            return False
    return True


class LockedDropout(Dropout):
    """Dropout with one mask per sentence, shared by all its words: a feature dropped is dropped
    at every time step (Gal & Ghahramani 2016's variational dropout, on the BiLSTM's inputs and
    outputs; flair's ``LockedDropout``). A fresh mask per word, as ``nn.Dropout`` draws, lets the
    BiLSTM read a dropped feature back from the neighbouring words.

    inputs (B, T, D) -> (B, T, D); the identity outside training
    """

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return inputs
        keep = 1.0 - self.p
        mask = inputs.new_empty(inputs.size(0), 1, inputs.size(2)).bernoulli_(keep)  # (B, 1, D)
        return inputs * mask.div_(keep)


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
        self.fast_training = False  # see use_fast_training

    def forward(self, inputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        if self.fast_training and _needs_fused(inputs, self.lstm):
            return self._fused(inputs, lengths)
        packed = pack_padded_sequence(inputs, lengths, batch_first=True, enforce_sorted=False)
        output, _ = self.lstm(packed)
        padded, _ = pad_packed_sequence(output, batch_first=True, total_length=inputs.size(1))
        return padded

    def _fused(self, inputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The same layers by :func:`bilstm_layer`, with ``nn.LSTM``'s dropout between them."""
        lengths = lengths.to(inputs.device)
        output = inputs
        for layer in range(self.lstm.num_layers):
            # nn.LSTM's dropout between layers. It draws its masks over the packed rows, so with
            # more than one layer a seed's masks differ from nn.LSTM's (the recipes have one).
            if layer:
                output = dropout(output, self.lstm.dropout, self.training)
            output = bilstm_layer(output, lengths, *_layer_weights(self.lstm, layer))
        return output


def use_fast_training(model: nn.Module, fast: bool) -> None:
    """Train ``model``'s BiLSTMs through :func:`bilstm_layer` (a hand-written backward pass) and
    its character LSTM once per distinct word of a batch (``train.fast_encoder``), or as torch's
    modules do. Both compute the same functions up to float summation order and draw the same
    dropout masks, so a seed follows the same trajectory until float rounding moves it:
    docs/training-speed.md says how much faster. Tagging is the same either way."""
    for module in model.modules():
        if hasattr(module, "fast_training"):
            module.fast_training = fast


def _needs_fused(inputs: torch.Tensor, lstm: nn.LSTM) -> bool:
    """Whether to run :func:`bilstm_layer` rather than ``nn.LSTM``: on the CPU when gradients
    will flow (training), where its hand-written backward pass is about 1.8x faster than
    autograd through torch's LSTM. Without gradients (tagging) torch's own forward is a little
    faster, and on a GPU cuDNN's fused kernels are. Under autocast torch's LSTM keeps the lower
    precision autocast asks for, which this layer's in-place steps cannot."""
    if inputs.device.type != "cpu" or not torch.is_grad_enabled():
        return False
    if torch.is_autocast_enabled("cpu"):
        return False
    return inputs.requires_grad or any(p.requires_grad for p in lstm.parameters())


def _layer_weights(lstm: nn.LSTM, layer: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(weights_ih (2, 4H, D), weights_hh (2, 4H, H), biases (2, 4H)) of one layer of a
    bidirectional ``nn.LSTM``, both directions stacked, its two biases added."""
    names = [f"l{layer}", f"l{layer}_reverse"]
    weights_ih = torch.stack([getattr(lstm, f"weight_ih_{name}") for name in names])
    weights_hh = torch.stack([getattr(lstm, f"weight_hh_{name}") for name in names])
    biases = torch.stack(
        [getattr(lstm, f"bias_ih_{name}") + getattr(lstm, f"bias_hh_{name}") for name in names]
    )
    return weights_ih, weights_hh, biases
