"""The BiLSTM-CRF's network in NumPy: emission scores from a trained model's weights, computed as
:meth:`crftag.nn.taggers.BiLSTMCRF.emissions` computes them in evaluation mode, without torch.

Weights are the model's state dict as float32 arrays, under the same names. Recurrences loop over
time only: each LSTM direction projects every position's input at once (one matrix product),
then runs one small product per step, updating only the rows whose sentence (or word) is still
running, which is what packing the sequences does in torch, so padding never changes a result.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from crftag.crf.arrays import running_counts

__all__ = ["CASING_CLASSES", "Network", "casing_kinds", "emissions", "lstm"]

CASING_CLASSES = 8


def _sigmoid(values: np.ndarray) -> np.ndarray:
    return 0.5 * (np.tanh(0.5 * values) + 1.0)  # tanh form: no overflow warning for large -x


def _direction(
    projected: np.ndarray, running: list[int], recurrent: np.ndarray, reverse: bool
) -> tuple[np.ndarray, np.ndarray]:
    """One LSTM direction over rows sorted longest first. projected (B, T, 4H): inputs times
    W_ih plus both biases; running[t] how many rows have a position t; recurrent (4H, H).
    Returns the outputs (B, T, H), zero past each row's end, and each row's final state (B, H):
    at its last position going forward, at position 0 going back. The rows still running at a
    step are a prefix of the batch, so each step works on slices, not gathered copies."""
    batch, steps, gates = projected.shape
    hidden_size = gates // 4
    hidden = np.zeros((batch, hidden_size), dtype=projected.dtype)
    cell = np.zeros_like(hidden)
    outputs = np.zeros((batch, steps, hidden_size), dtype=projected.dtype)
    transposed = np.ascontiguousarray(recurrent.T)  # (H, 4H)
    for step in reversed(range(steps)) if reverse else range(steps):
        count = running[step]
        if not count:
            continue
        scores = projected[:count, step] + hidden[:count] @ transposed  # (n, 4H), gates i f g o
        input_gate = _sigmoid(scores[:, :hidden_size])
        forget_gate = _sigmoid(scores[:, hidden_size : 2 * hidden_size])
        candidate = np.tanh(scores[:, 2 * hidden_size : 3 * hidden_size])
        output_gate = _sigmoid(scores[:, 3 * hidden_size :])
        cell[:count] = forget_gate * cell[:count] + input_gate * candidate
        hidden[:count] = output_gate * np.tanh(cell[:count])
        outputs[:count, step] = hidden[:count]
    return outputs, hidden


def lstm(
    weights: Mapping[str, np.ndarray], prefix: str, inputs: np.ndarray, lengths: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """A bidirectional (multi-layer) ``nn.LSTM`` with ``batch_first=True`` over packed rows.

    inputs (B, T, D), lengths (B,) -> outputs (B, T, 2H) (zeros past each end) and the last
    layer's final states (2, B, H), forward then backward, as ``nn.LSTM`` returns them."""
    order = np.argsort(-lengths, kind="stable")
    running = running_counts(lengths[order].tolist(), inputs.shape[1])
    inputs = inputs[order]
    layer = 0
    finals = []
    while f"{prefix}weight_ih_l{layer}" in weights:
        finals = []
        directions = []
        for suffix, reverse in (("", False), ("_reverse", True)):
            name = f"l{layer}{suffix}"
            # One 2-D product for every position (a 3-D matmul would run one per row).
            flat = inputs.reshape(-1, inputs.shape[2]) @ weights[f"{prefix}weight_ih_{name}"].T
            flat += weights[f"{prefix}bias_ih_{name}"] + weights[f"{prefix}bias_hh_{name}"]
            projected = flat.reshape(inputs.shape[0], inputs.shape[1], -1)
            outputs, final = _direction(
                projected, running, weights[f"{prefix}weight_hh_{name}"], reverse
            )
            directions.append(outputs)
            finals.append(final)
        inputs = np.concatenate(directions, axis=2)
        layer += 1
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return inputs[inverse], np.stack(finals)[:, inverse]


def casing_kinds(char_symbols: list[str]) -> np.ndarray:
    """Kind of each character index: 0 padding, 1 upper, 2 lower, 3 digit, 4 anything else
    (indices 0 and 1 are the padding and unknown characters)."""
    kinds = [0, 4] + [
        1 if c.isupper() else 2 if c.islower() else 3 if c.isdigit() else 4
        for c in char_symbols[2:]
    ]
    return np.asarray(kinds, dtype=np.int64)


def _casing_classes(kinds: np.ndarray, chars: np.ndarray) -> np.ndarray:
    """Casing class (B, T) of each word, as :class:`crftag.nn.encoders.CasingEmbedding` gives."""
    char_kinds = kinds[chars]  # (B, T, C)
    length = (char_kinds != 0).sum(2)
    upper, lower, digits = ((char_kinds == kind).sum(2) for kind in (1, 2, 3))
    classes = np.full(length.shape, 7)
    classes[digits > 0] = 6
    classes[char_kinds[:, :, 0] == 1] = 5
    classes[upper == length] = 4
    classes[lower == length] = 3
    classes[2 * digits > length] = 2
    classes[digits == length] = 1
    classes[length == 0] = 0
    return classes


def _char_cnn(weights: Mapping[str, np.ndarray], chars: np.ndarray) -> np.ndarray:
    """chars (B, T, C) -> (B, T, F): convolution over each word's characters, max-pooled."""
    batch, steps, width = chars.shape
    flat = chars.reshape(-1, width)  # (N, C)
    embedded = weights["char_encoder.embedding.weight"][flat]  # (N, C, D)
    kernel_weights = weights["char_encoder.conv.weight"]  # (F, D, k)
    kernel = kernel_weights.shape[2]
    padding = kernel // 2
    padded = np.pad(embedded, ((0, 0), (padding, padding), (0, 0)))
    features = np.zeros((flat.shape[0], width, kernel_weights.shape[0]), dtype=embedded.dtype)
    for offset in range(kernel):
        features += padded[:, offset : offset + width] @ kernel_weights[:, :, offset].T
    features += weights["char_encoder.conv.bias"]
    features[flat == 0] = -np.inf  # padding characters must not win the max
    pooled = features.max(axis=1)  # (N, F)
    pooled[~np.isfinite(pooled)] = 0.0  # a padding word pools to 0
    return pooled.reshape(batch, steps, -1)


def _char_lstm(weights: Mapping[str, np.ndarray], chars: np.ndarray) -> np.ndarray:
    """chars (B, T, C) -> (B, T, 2H): the two final states of a BiLSTM over each word."""
    batch, steps, width = chars.shape
    flat = chars.reshape(-1, width)
    word_lengths = (flat != 0).sum(1)
    embedded = weights["char_encoder.embedding.weight"][flat]  # (N, C, D)
    _, finals = lstm(weights, "char_encoder.lstm.", embedded, word_lengths)  # (2, N, H)
    output = np.concatenate([finals[0], finals[1]], axis=1)
    output[word_lengths == 0] = 0.0
    return output.reshape(batch, steps, -1)


def _group_means(states: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Each position's mean over the positions with its group id: (B, T, D)."""
    width = states.shape[2]
    flat_ids = groups.reshape(-1)
    count = int(flat_ids.max()) + 1
    # Sorted by id, each group's rows are one run: np.add.reduceat sums the runs (np.add.at,
    # which would do it unsorted, is many times slower).
    order = np.argsort(flat_ids, kind="stable")
    sorted_ids = flat_ids[order]
    firsts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    sums = np.zeros((count, width), dtype=states.dtype)
    sums[sorted_ids[firsts]] = np.add.reduceat(states.reshape(-1, width)[order], firsts, axis=0)
    sizes = np.maximum(np.bincount(flat_ids, minlength=count), 1).astype(states.dtype)
    return (sums / sizes[:, None])[flat_ids].reshape(states.shape)


def emissions(
    weights: Mapping[str, np.ndarray],
    model: Mapping[str, object],
    words: np.ndarray,
    chars: np.ndarray,
    lengths: np.ndarray,
    groups: np.ndarray | None = None,
    kinds: np.ndarray | None = None,
) -> np.ndarray:
    """Emission scores (B, T, K) of a BiLSTM-CRF.

    weights  the state dict as arrays; model  the config's ``model`` section (``char_encoder``,
    ``casing_dim``, ``document_context``); words (B, T) and chars (B, T, C) indices, 0 padding;
    lengths (B,); groups (B, T) document groups for a model with document context; kinds the
    :func:`casing_kinds` of the character vocabulary for a model with a casing embedding."""
    features = [weights["word_embedding.weight"][words]]  # (B, T, Dw)
    if model["char_encoder"] == "cnn":
        features.append(_char_cnn(weights, chars))
    elif model["char_encoder"] == "lstm":
        features.append(_char_lstm(weights, chars))
    if model.get("casing_dim"):
        features.append(weights["casing.embedding.weight"][_casing_classes(kinds, chars)])
    encoded, _ = lstm(weights, "encoder.lstm.", np.concatenate(features, axis=2), lengths)
    if model.get("document_context"):
        encoded = np.concatenate([encoded, _group_means(encoded, groups)], axis=2)
    if "hidden.0.weight" in weights:
        encoded = np.tanh(encoded @ weights["hidden.0.weight"].T + weights["hidden.0.bias"])
    return encoded @ weights["projection.weight"].T + weights["projection.bias"]


class Network:
    """A BiLSTM-CRF's emission network on arrays, built once and run batch after batch.

    weights  the state dict as arrays; model  the config's ``model`` section; char_symbols
    the character vocabulary's symbols (for a casing embedding's character kinds)."""

    def __init__(
        self,
        weights: Mapping[str, np.ndarray],
        model: Mapping[str, object],
        char_symbols: list[str],
    ) -> None:
        self.weights = weights
        self.model = model
        self.kinds = casing_kinds(char_symbols) if model.get("casing_dim") else None

    def emissions(
        self,
        words: np.ndarray,
        chars: np.ndarray,
        lengths: np.ndarray,
        groups: np.ndarray | None = None,
    ) -> np.ndarray:
        """Emission scores (B, T, K) for words (B, T), chars (B, T, C), lengths (B,) and, for a
        model with document context, groups (B, T), as :func:`emissions` takes them."""
        return emissions(self.weights, self.model, words, chars, lengths, groups, self.kinds)
