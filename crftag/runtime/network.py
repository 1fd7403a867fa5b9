"""The BiLSTM-CRF's network in NumPy: emission scores from a trained model's weights, computed as
:meth:`crftag.nn.taggers.BiLSTMCRF.emissions` computes them in evaluation mode, without torch.

Weights are the model's state dict as float32 arrays, under the same names. Sequences are packed
as torch packs them: rows sorted longest first, then time-major, so the rows still running at a
step are one contiguous block and padding is never computed. Each LSTM layer projects every
packed position's input for both directions at once (one matrix product), then runs its time
loop: in the compiled kernel (crftag/runtime/_lstm.c) where the extension built, otherwise as one
small NumPy product per step. The character encoder runs once per distinct word of a batch, and
:class:`Network` keeps the encodings across batches (news text repeats its words).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial

import numpy as np

from crftag.runtime.encodings import WordEncodings

try:  # the compiled time loops (crftag/runtime/_lstm.c), built by setup.py where a compiler exists
    from crftag.runtime import _lstm
except ImportError:  # pragma: no cover - exercised only where the extension did not build
    _lstm = None

__all__ = ["CASING_CLASSES", "Network", "casing_kinds", "emissions", "lstm"]

CASING_CLASSES = 8
CACHE_WORDS = 1 << 16  # character encodings a Network keeps: ~13 MB for a 50-wide encoder


@dataclass(frozen=True)
class _Packing:
    """Rows (B,) of lengths (B,) packed time-major, longest first: packed position k holds row
    ``rows[k]`` at step ``steps[k]``; step t is positions ``offsets[t]:offsets[t + 1]``, which
    are the ``counts[t]`` longest rows in ``order`` (B,), so each step's rows are a prefix;
    ``lasts`` (n,) the position of each sorted row's last step (rows of length 0 have none).
    For the compiled loops, which take positions row after row: ``lengths`` (n,) of the sorted
    rows not empty, and ``row_major`` (N,) where each packed position goes in that layout."""

    order: np.ndarray
    rows: np.ndarray
    steps: np.ndarray
    counts: list[int]
    offsets: list[int]
    lasts: np.ndarray
    lengths: np.ndarray
    row_major: np.ndarray


def _pack(lengths: np.ndarray) -> _Packing:
    order = np.argsort(-lengths, kind="stable")
    longest = int(lengths.max(initial=0))
    running = np.arange(longest)[:, None] < lengths[order][None, :]  # (T, B)
    steps, ranks = np.nonzero(running)  # row-major: by step, then rank
    counts = running.sum(1)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    real = np.flatnonzero(lengths[order] > 0)
    lasts = offsets[lengths[order][real] - 1] + real
    sorted_lengths = lengths[order][real].astype(np.int64)
    starts = np.cumsum(sorted_lengths) - sorted_lengths  # each sorted row's first, row-major
    row_major = starts[ranks] + steps
    return _Packing(
        order,
        order[ranks],
        steps,
        counts.tolist(),
        offsets.tolist(),
        lasts,
        sorted_lengths,
        row_major,
    )


@dataclass(frozen=True)
class _Layer:
    """One bidirectional LSTM layer, prepared once. Gates are reordered from torch's i, f, g, o
    to i, f, o, g so that one tanh covers all four, and the sigmoid gates' rows are halved
    (exact in floating point) because sigmoid(x) = 0.5 * tanh(x / 2) + 0.5.

    input_weights (2, D, 4H) and bias (2, 1, 4H) (both biases summed), then recurrent
    (H, 4H): forward, then backward."""

    input_weights: np.ndarray
    bias: np.ndarray
    recurrent: tuple[np.ndarray, np.ndarray]


def _layers(
    weights: Mapping[str, np.ndarray], prefix: str, exact_sums: bool = False
) -> list[_Layer]:
    """The layers of the ``nn.LSTM`` stored under ``prefix``, first to last. ``exact_sums``
    keeps the matrices in float64, so each product is summed in float64 and rounded to float32:
    a row's result is then the same bits whatever other rows share the product (float32 BLAS
    sums in an order that depends on the row count)."""
    layers = []
    while f"{prefix}weight_ih_l{len(layers)}" in weights:
        names = [f"{prefix}%s_l{len(layers)}{suffix}" for suffix in ("", "_reverse")]
        size = weights[names[0] % "weight_hh"].shape[1]  # H
        rows = np.r_[: 2 * size, 3 * size : 4 * size, 2 * size : 3 * size]  # i f o g
        scale = np.where(np.arange(4 * size) < 3 * size, 0.5, 1.0).astype(np.float32)
        inputs = np.stack([weights[name % "weight_ih"][rows] * scale[:, None] for name in names])
        recurrent = [(weights[name % "weight_hh"][rows] * scale[:, None]).T for name in names]
        biases = [(weights[name % "bias_ih"] + weights[name % "bias_hh"])[rows] for name in names]
        input_weights = np.ascontiguousarray(inputs.transpose(0, 2, 1))  # (2, D, 4H)
        bias = (np.stack(biases) * scale)[:, None]  # (2, 1, 4H)
        dtype = np.float64 if exact_sums else np.float32
        recurrent = tuple(np.ascontiguousarray(r, dtype=dtype) for r in recurrent)
        layers.append(_Layer(input_weights.astype(dtype), bias.astype(dtype), recurrent))
    return layers


@dataclass(frozen=True)
class _KernelLayer:
    """One bidirectional LSTM layer for the compiled loops, in ``nn.LSTM``'s gate order (i, f,
    g, o): input_weights (D, 8H), the two directions side by side, and bias (8H,) (both biases
    summed), in float64 with ``exact_sums`` (see :func:`_layers`); recurrent (2, H, 4H) float32,
    each direction's W_hh transposed."""

    input_weights: np.ndarray
    bias: np.ndarray
    recurrent: np.ndarray


def _kernel_layers(
    weights: Mapping[str, np.ndarray], prefix: str, exact_sums: bool = False
) -> list[_KernelLayer]:
    """The layers of the ``nn.LSTM`` stored under ``prefix`` for :func:`_kernel_lstm`."""
    layers = []
    dtype = np.float64 if exact_sums else np.float32
    while f"{prefix}weight_ih_l{len(layers)}" in weights:
        names = [f"{prefix}%s_l{len(layers)}{suffix}" for suffix in ("", "_reverse")]
        inputs = np.concatenate([weights[name % "weight_ih"] for name in names])  # (8H, D)
        bias = np.concatenate(
            [weights[name % "bias_ih"] + weights[name % "bias_hh"] for name in names]
        )
        recurrent = np.stack([weights[name % "weight_hh"].T for name in names])  # (2, H, 4H)
        layers.append(
            _KernelLayer(
                np.ascontiguousarray(inputs.T, dtype=dtype),
                bias.astype(dtype),
                np.ascontiguousarray(recurrent, dtype=np.float32),
            )
        )
    return layers


def _kernel_lstm(
    layers: list[_KernelLayer], inputs: np.ndarray, packing: _Packing
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_packed_lstm` by the compiled loops (crftag/runtime/_lstm.c): the same packed
    inputs (N, D), the same functions up to float rounding: outputs (N, 2H) and final states
    (2, n, H). The loops take positions row after row, so the inputs are reordered on the way
    in and the states on the way out."""
    rows = np.empty_like(inputs)
    rows[packing.row_major] = inputs  # (N, D), row after row
    for layer in layers:
        hidden_size = layer.recurrent.shape[1]
        gates = rows @ layer.input_weights  # (N, 8H)
        gates += layer.bias
        gates = np.ascontiguousarray(gates, dtype=np.float32)
        cells = np.empty((len(rows), 2 * hidden_size), dtype=np.float32)
        rows = np.empty_like(cells)
        _lstm.forward(
            gates,
            cells,
            rows,
            packing.lengths,
            layer.recurrent,
            len(packing.lengths),
            hidden_size,
            1,  # two threads lose here: NumPy's BLAS threads spin for the cores between calls
        )
    # Forward, each row's state at its last position; backward, at its first.
    starts = np.cumsum(packing.lengths) - packing.lengths
    finals = np.stack(
        [rows[starts + packing.lengths - 1, :hidden_size], rows[starts, hidden_size:]]
    )
    return rows[packing.row_major], finals


def _direction(
    projected: np.ndarray,
    packing: _Packing,
    recurrent: np.ndarray,
    reverse: bool,
    outputs: np.ndarray,
) -> None:
    """One LSTM direction over packed positions. projected (N, 4H): the inputs times the
    prepared input weights, plus bias; recurrent (H, 4H). Writes the states into outputs (N, H).

    The previous step's states are read back from outputs: its rows are a prefix of this
    step's going forward, and this step's a prefix of its going back, where the rows past it
    start from zero states."""
    hidden_size = recurrent.shape[0]
    batch = packing.counts[0] if packing.counts else 0
    cell = np.zeros((batch, hidden_size), dtype=np.float32)
    squashed = np.empty_like(cell)
    scores = np.empty((batch, 4 * hidden_size), dtype=np.float32)
    sigmoid_end = 3 * hidden_size
    known, previous = 0, 0  # rows with a previous state, and where they are in outputs
    steps = range(len(packing.counts))
    for step in reversed(steps) if reverse else steps:
        count, start = packing.counts[step], packing.offsets[step]
        gates = scores[:count]  # (n, 4H), gates i f o g
        known = min(known, count)
        if recurrent.dtype == np.float32:
            np.matmul(outputs[previous : previous + known], recurrent, out=gates[:known])
        else:  # float64 sums rounded once: see _layers
            gates[:known] = outputs[previous : previous + known] @ recurrent
        if known < count:
            gates[known:] = 0.0
        gates += projected[start : start + count]
        np.tanh(gates, out=gates)
        sigmoids = gates[:, :sigmoid_end]
        sigmoids *= 0.5
        sigmoids += 0.5
        running_cell = cell[:count]
        running_cell *= gates[:, hidden_size : 2 * hidden_size]
        candidate = gates[:, sigmoid_end:]
        candidate *= gates[:, :hidden_size]
        running_cell += candidate
        np.tanh(running_cell, out=squashed[:count])
        hidden = outputs[start : start + count]
        np.multiply(squashed[:count], gates[:, 2 * hidden_size : sigmoid_end], out=hidden)
        known, previous = count, start


def _packed_lstm(
    layers: list[_Layer] | list[_KernelLayer], inputs: np.ndarray, packing: _Packing
) -> tuple[np.ndarray, np.ndarray]:
    """A bidirectional LSTM over packed inputs (N, D): outputs (N, 2H) and the last layer's final
    states (2, n, H) of the n rows not empty, longest first, forward then backward. Layers from
    :func:`_kernel_layers` run in the compiled loops."""
    if layers and isinstance(layers[0], _KernelLayer):
        if not len(packing.lengths):
            hidden_size = layers[-1].recurrent.shape[1]
            return np.zeros((0, 2 * hidden_size), np.float32), np.zeros(
                (2, 0, hidden_size), np.float32
            )
        return _kernel_lstm(layers, inputs, packing)
    for layer in layers:
        hidden_size = layer.recurrent[0].shape[0]
        projected = np.matmul(inputs, layer.input_weights)  # (2, N, 4H), per direction
        projected += layer.bias
        projected = projected.astype(np.float32, copy=False)
        outputs = np.empty((len(inputs), 2 * hidden_size), dtype=np.float32)
        for k, reverse in ((0, False), (1, True)):
            states = outputs[:, k * hidden_size : (k + 1) * hidden_size]
            _direction(projected[k], packing, layer.recurrent[k], reverse, states)
        inputs = outputs
    forward, backward = np.split(inputs, 2, axis=1)
    # Forward, each row's state at its last step; backward, at step 0.
    first = slice(0, len(packing.lasts))
    return inputs, np.stack([forward[packing.lasts], backward[first]])


def lstm(
    weights: Mapping[str, np.ndarray], prefix: str, inputs: np.ndarray, lengths: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """A bidirectional (multi-layer) ``nn.LSTM`` with ``batch_first=True`` over packed rows.

    inputs (B, T, D), lengths (B,) -> outputs (B, T, 2H) (zeros past each end) and the last
    layer's final states (2, B, H), forward then backward, as ``nn.LSTM`` returns them."""
    layers = _network_layers(weights, prefix)
    packing = _pack(lengths)
    packed, sorted_finals = _packed_lstm(
        layers, np.asarray(inputs[packing.rows, packing.steps], dtype=np.float32), packing
    )
    hidden_size = packed.shape[1] // 2
    outputs = np.zeros((*inputs.shape[:2], 2 * hidden_size), dtype=np.float32)
    outputs[packing.rows, packing.steps] = packed
    finals = np.zeros((2, len(lengths), hidden_size), dtype=np.float32)
    finals[:, packing.order[: sorted_finals.shape[1]]] = sorted_finals  # length 0: zeros
    return outputs, finals


def _network_layers(
    weights: Mapping[str, np.ndarray], prefix: str, exact_sums: bool = False
) -> list[_Layer] | list[_KernelLayer]:
    """The layers for :func:`_packed_lstm`: for the compiled loops where they were built, for
    the NumPy loops otherwise."""
    build = _kernel_layers if _lstm is not None else _layers
    return build(weights, prefix, exact_sums)


def casing_kinds(char_symbols: list[str]) -> np.ndarray:
    """Kind of each character index: 0 padding, 1 upper, 2 lower, 3 digit, 4 anything else
    (indices 0 and 1 are the padding and unknown characters)."""
    kinds = [0, 4] + [
        1 if c.isupper() else 2 if c.islower() else 3 if c.isdigit() else 4
        for c in char_symbols[2:]
    ]
    return np.asarray(kinds, dtype=np.int64)


def _casing_classes(kinds: np.ndarray, chars: np.ndarray) -> np.ndarray:
    """Casing class (N,) of each word's characters (N, C), as
    :class:`crftag.nn.encoders.CasingEmbedding` gives it."""
    char_kinds = kinds[chars]  # (N, C)
    length = (char_kinds != 0).sum(1)
    upper, lower, digits = ((char_kinds == kind).sum(1) for kind in (1, 2, 3))
    classes = np.full(length.shape, 7)
    classes[digits > 0] = 6
    classes[char_kinds[:, 0] == 1] = 5
    classes[upper == length] = 4
    classes[lower == length] = 3
    classes[2 * digits > length] = 2
    classes[digits == length] = 1
    classes[length == 0] = 0
    return classes


def _conv_tables(weights: Mapping[str, np.ndarray]) -> np.ndarray:
    """(k, V, F): every character's embedding times each kernel offset's weights (F, D, k)."""
    kernel_weights = weights["char_encoder.conv.weight"].transpose(2, 1, 0)  # (k, D, F)
    return weights["char_encoder.embedding.weight"] @ kernel_weights


def _char_cnn(tables: np.ndarray, bias: np.ndarray, chars: np.ndarray) -> np.ndarray:
    """chars (M, C) -> (M, F): convolution over each word's characters, max-pooled; tables from
    :func:`_conv_tables`, so each kernel offset is one gather (index 0, padding, maps to 0)."""
    kernel, width = len(tables), chars.shape[1]
    padded = np.pad(chars, ((0, 0), (kernel // 2, kernel // 2)))  # (M, C + k - 1)
    features = tables[0][padded[:, :width]]  # (M, C, F)
    for offset in range(1, kernel):
        features += tables[offset][padded[:, offset : offset + width]]
    features += bias
    features[chars == 0] = -np.inf  # padding characters must not win the max
    pooled = features.max(axis=1)  # (M, F)
    pooled[~np.isfinite(pooled)] = 0.0  # a padding word pools to 0
    return pooled


def _char_lstm(
    weights: Mapping[str, np.ndarray], layers: list[_Layer], chars: np.ndarray
) -> np.ndarray:
    """chars (M, C) -> (M, 2H): the two final states of a BiLSTM over each word (0 for none)."""
    packing = _pack((chars != 0).sum(1))
    embedded = weights["char_encoder.embedding.weight"][chars[packing.rows, packing.steps]]
    _, finals = _packed_lstm(layers, embedded, packing)  # (2, n, H), longest word first
    output = np.zeros((len(chars), 2 * finals.shape[2]), dtype=np.float32)
    output[packing.order[: finals.shape[1]]] = np.concatenate([finals[0], finals[1]], axis=1)
    return output


def _group_means(states: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """states (N, D), groups (N,) ids -> (N, D): each position the mean over the positions with
    its id. Only real positions are packed, so padding (an id of its own) never counts."""
    # Sorted by id, each group's rows are one run: np.add.reduceat sums the runs (np.add.at,
    # which would do it unsorted, is many times slower).
    order = np.argsort(groups, kind="stable")
    sorted_ids = groups[order]
    firsts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    sizes = np.diff(np.r_[firsts, len(groups)])
    means = np.add.reduceat(states[order], firsts, axis=0) / sizes[:, None].astype(np.float32)
    result = np.empty_like(states)
    result[order] = np.repeat(means, sizes, axis=0)
    return result


def _head(
    weights: Mapping[str, np.ndarray], states: np.ndarray, groups: np.ndarray | None
) -> np.ndarray:
    """states (N, D) -> tag scores (N, K): the optional tanh layer, then the projection, over
    the states and, given groups (N,) for document context, their group means beside them."""
    first = "hidden.0" if "hidden.0.weight" in weights else "projection"
    weight, width = weights[f"{first}.weight"], states.shape[1]  # (K', D) or (K', 2D)
    scores = states @ weight[:, :width].T + weights[f"{first}.bias"]  # (N, K')
    if groups is not None:
        # The means enter through a linear map, and the mean of the mapped states is the mapped
        # mean: averaging K' columns instead of D is far cheaper.
        scores += _group_means(states @ weight[:, width:].T, groups)
    if first == "hidden.0":
        scores = np.tanh(scores) @ weights["projection.weight"].T + weights["projection.bias"]
    return scores


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
    lengths (B,); groups (B, T) document groups for a model with document context (padding with
    an id of its own); kinds the :func:`casing_kinds` of the character vocabulary for a model
    with a casing embedding."""
    network = Network(weights, model, [])
    network.kinds = kinds  # given, in place of a character vocabulary's
    return network.emissions(words, chars, lengths, groups)


class Network:
    """A BiLSTM-CRF's emission network on arrays, built once and run batch after batch; it
    keeps the character encodings of the words it has seen.

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
        self.encoder_layers = _network_layers(weights, "encoder.lstm.")
        self.char_encoder = None  # chars (M, C) -> (M, F)
        if model["char_encoder"] == "cnn":
            bias = weights["char_encoder.conv.bias"]
            self.char_encoder = partial(_char_cnn, _conv_tables(weights), bias)
        elif model["char_encoder"] == "lstm":
            # Words are encoded once and kept (WordEncodings): an encoding must not depend on
            # which words shared its batch, or a sentence's scores would depend on the text
            # tagged before it.
            layers = _network_layers(weights, "char_encoder.lstm.", exact_sums=True)
            self.char_encoder = partial(_char_lstm, weights, layers)
        char_count = len(weights.get("char_encoder.embedding.weight", ()))
        self.char_encodings = WordEncodings(CACHE_WORDS, max(char_count, 1))

    def emissions(
        self,
        words: np.ndarray,
        chars: np.ndarray,
        lengths: np.ndarray,
        groups: np.ndarray | None = None,
    ) -> np.ndarray:
        """Emission scores (B, T, K) for words (B, T), chars (B, T, C), lengths (B,) and, for a
        model with document context, groups (B, T), as :func:`emissions` takes them. Only the
        real positions are computed; past each end, the scores of torch's zero states."""
        weights = self.weights
        packing = _pack(lengths)
        token_chars = chars[packing.rows, packing.steps]  # (N, C)
        features = [weights["word_embedding.weight"][words[packing.rows, packing.steps]]]
        if self.char_encoder is not None:
            features.append(self.char_encodings.encode(token_chars, self.char_encoder))
        if self.model.get("casing_dim"):
            classes = _casing_classes(self.kinds, token_chars)
            features.append(weights["casing.embedding.weight"][classes])
        states, _ = _packed_lstm(self.encoder_layers, np.concatenate(features, axis=1), packing)
        context = self.model.get("document_context")
        scores = _head(weights, states, groups[packing.rows, packing.steps] if context else None)
        # Past each end torch's states, and the means of the padding's own group, are zeros.
        zero = np.zeros((1, states.shape[1]), dtype=np.float32)
        padding = _head(weights, zero, np.zeros(1, dtype=np.int64) if context else None)
        result = np.empty((*words.shape, scores.shape[1]), dtype=np.float32)
        result[:] = padding
        result[packing.rows, packing.steps] = scores
        return result
