"""The BiLSTM of the NumPy runtime: bidirectional (multi-layer) ``nn.LSTM`` layers over packed
rows, from a trained model's weights, without torch.

Sequences are packed as torch packs them: rows sorted longest first, then time-major, so the
rows still running at a step are one contiguous block and padding is never computed. Each layer
projects every packed position's input for both directions at once (one matrix product), then
runs its time loop: in the compiled kernel (crftag/runtime/_lstm.c) where the extension built,
otherwise as one small NumPy product per step.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

try:  # the compiled time loops (crftag/runtime/_lstm.c), built by setup.py where a compiler exists
    from crftag.runtime import _lstm
except ImportError:  # pragma: no cover - exercised only where the extension did not build
    _lstm = None

__all__ = ["Packing", "lstm", "network_layers", "pack", "packed_lstm"]

_helper_thread: tuple[int, ThreadPoolExecutor] | None = None  # (process id, executor)


@dataclass(frozen=True)
class Packing:
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


def pack(lengths: np.ndarray) -> Packing:
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
    return Packing(
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
    layers: list[_KernelLayer], inputs: np.ndarray, packing: Packing, threads: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`packed_lstm` by the compiled loops (crftag/runtime/_lstm.c): the same packed
    inputs (N, D), the same functions up to float rounding: outputs (N, 2H) and final states
    (2, n, H). The loops take positions row after row, so the inputs are reordered on the way
    in and the states on the way out."""
    rows = np.empty_like(inputs)
    rows[packing.row_major] = inputs  # (N, D), row after row
    for layer in layers:
        hidden_size = layer.recurrent.shape[1]
        gates = _input_products(rows, layer, threads)  # (N, 8H)
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
            threads,
            False,  # no backward pass: the activated gates and the cells are not kept
            True,  # never OpenMP's pool, which hangs after a fork: the partner, or a thread
        )
    # Forward, each row's state at its last position; backward, at its first.
    starts = np.cumsum(packing.lengths) - packing.lengths
    finals = np.stack(
        [rows[starts + packing.lengths - 1, :hidden_size], rows[starts, hidden_size:]]
    )
    return rows[packing.row_major], finals


def _input_products(rows: np.ndarray, layer: _KernelLayer, threads: int) -> np.ndarray:
    """rows (N, D) -> (N, 8H) float32: each position's input times W_ih plus the biases, both
    directions side by side. Each direction's half is one product, on any number of threads,
    so that the numbers never depend on it (a BLAS may round another split of the columns
    differently); on two threads the second half runs on a helper thread, with NumPy's BLAS
    held to one thread meanwhile (crftag/runtime/threads.py), and a product releases the GIL."""
    width = layer.input_weights.shape[1]
    products = np.empty((len(rows), width), dtype=layer.input_weights.dtype)
    halves = [slice(0, width // 2), slice(width // 2, width)]

    def product(columns: slice) -> None:
        np.matmul(rows, layer.input_weights[:, columns], out=products[:, columns])
        products[:, columns] += layer.bias[columns]

    second = _helper().submit(product, halves[1]) if threads > 1 else None
    product(halves[0])
    if second is None:
        product(halves[1])
    else:
        second.result()
    return products.astype(np.float32, copy=False)


def _helper() -> ThreadPoolExecutor:
    """The one helper thread of :func:`_input_products`, started on first use in each process
    (a forked child has the parent's executor but not its thread)."""
    global _helper_thread
    if _helper_thread is None or _helper_thread[0] != os.getpid():
        _helper_thread = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix="crftag-lstm"))
    return _helper_thread[1]


def _direction(
    projected: np.ndarray,
    packing: Packing,
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


def packed_lstm(
    layers: list[_Layer] | list[_KernelLayer],
    inputs: np.ndarray,
    packing: Packing,
    threads: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """A bidirectional LSTM over packed inputs (N, D): outputs (N, 2H) and the last layer's final
    states (2, n, H) of the n rows not empty, longest first, forward then backward. Layers from
    :func:`_kernel_layers` run in the compiled loops, the two directions on ``threads`` (1 or
    2) threads; two only where NumPy's BLAS is held to one (crftag/runtime/threads.py)."""
    if layers and isinstance(layers[0], _KernelLayer):
        if not len(packing.lengths):
            hidden_size = layers[-1].recurrent.shape[1]
            return np.zeros((0, 2 * hidden_size), np.float32), np.zeros(
                (2, 0, hidden_size), np.float32
            )
        return _kernel_lstm(layers, inputs, packing, threads)
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
    layers = network_layers(weights, prefix)
    packing = pack(lengths)
    packed, sorted_finals = packed_lstm(
        layers, np.asarray(inputs[packing.rows, packing.steps], dtype=np.float32), packing
    )
    hidden_size = packed.shape[1] // 2
    outputs = np.zeros((*inputs.shape[:2], 2 * hidden_size), dtype=np.float32)
    outputs[packing.rows, packing.steps] = packed
    finals = np.zeros((2, len(lengths), hidden_size), dtype=np.float32)
    finals[:, packing.order[: sorted_finals.shape[1]]] = sorted_finals  # length 0: zeros
    return outputs, finals


def network_layers(
    weights: Mapping[str, np.ndarray], prefix: str, exact_sums: bool = False
) -> list[_Layer] | list[_KernelLayer]:
    """The layers for :func:`packed_lstm`: for the compiled loops where they were built, for
    the NumPy loops otherwise."""
    build = _kernel_layers if _lstm is not None else _layers
    return build(weights, prefix, exact_sums)
