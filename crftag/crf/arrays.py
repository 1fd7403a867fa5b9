"""CRF decoding on NumPy arrays, without torch: the compiled C kernel where it was built, the same
algorithm in NumPy where not, with identical results. :mod:`crftag.crf.viterbi` runs these on
the CPU; the torch-free runtime (:mod:`crftag.runtime`) calls them directly.

Shapes: emissions (B, T, K), lengths (B,) int64 (each at least 1), transitions (K, K) indexed
[from, to] with -inf where a move is not allowed, start and end (K,).
"""

from __future__ import annotations

import numpy as np

from crftag.crf.choice import COMPILED, compiled_loops

__all__ = [
    "COMPILED_ARRAY_DTYPES",
    "running_counts",
    "viterbi_arrays",
    "viterbi_compiled",
    "viterbi_numpy",
]

COMPILED_ARRAY_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def running_counts(sorted_lengths: list[int], length: int) -> list[int]:
    """For lengths sorted in decreasing order: how many sentences have a token at each t."""
    running = []
    count = len(sorted_lengths)
    for t in range(length):
        while count and sorted_lengths[count - 1] <= t:
            count -= 1
        running.append(count)
    return running


def viterbi_arrays(emissions, lengths, transitions, start, end) -> tuple[np.ndarray, np.ndarray]:
    """Best paths (B, T) int64 (0 past each end) and their scores (B,): compiled where built."""
    if compiled_loops() is not None and emissions.dtype in COMPILED_ARRAY_DTYPES:
        return viterbi_compiled(emissions, lengths, transitions, start, end)
    return viterbi_numpy(emissions, lengths, transitions, start, end)


def viterbi_compiled(emissions, lengths, transitions, start, end) -> tuple[np.ndarray, np.ndarray]:
    """:func:`viterbi_numpy` in C: one call for the whole batch, no sorting needed."""
    batch_size, length, num_tags = emissions.shape
    dtype = emissions.dtype
    path = np.empty((batch_size, length), dtype=np.int64)
    scores = np.empty(batch_size, dtype=dtype)
    COMPILED.viterbi(
        np.ascontiguousarray(emissions),
        np.ascontiguousarray(lengths, dtype=np.int64),
        np.ascontiguousarray(transitions, dtype=dtype),
        np.ascontiguousarray(start, dtype=dtype),
        np.ascontiguousarray(end, dtype=dtype),
        path,
        scores,
        batch_size,
        length,
        num_tags,
    )
    return path, scores


def viterbi_numpy(
    emissions: np.ndarray,
    lengths: np.ndarray,
    transitions: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Best paths (B, T) int64, 0 past each end, and their scores (B,), in NumPy.

    emissions (B, T, K); lengths (B,) int64, each at least 1; transitions (K, K) [from, to];
    start, end (K,). Rows are sorted by length so that at time t the sentences still running
    are a prefix of the batch, and the backtrace picks each sentence up at its own last token.
    """
    batch_size, length, num_tags = emissions.shape
    order = None
    if np.any(lengths[1:] > lengths[:-1]):
        order = np.argsort(-lengths, kind="stable")
        lengths = lengths[order]
    running = running_counts(lengths.tolist(), length)
    emitted = emissions
    if order is not None:
        emitted = emitted[order]
    emitted = np.ascontiguousarray(emitted.transpose(1, 2, 0))  # (T, K, B): batch innermost
    moves = transitions  # (K from, K to)
    # The forward pass keeps only the best scores, bests[t] (K, B) with the batch innermost, so
    # each step is three calls over whole contiguous slabs: add the transitions (tiled over the
    # batch once here), reduce the "from" axis with an elementwise maximum (many times faster
    # than an argmax over 18 numbers per cell), add the emissions. The back-pointers are not
    # stored: the backtrace recomputes the argmax for the one tag it follows at each step, from
    # the very same sums, so ties resolve to the same (lowest) index an argmax here would give.
    tiled_moves = np.ascontiguousarray(
        np.broadcast_to(moves[:, :, None], (num_tags, num_tags, batch_size))
    )
    bests = np.empty((length, num_tags, batch_size), dtype=emitted.dtype)
    np.add(start[:, None], emitted[0], out=bests[0])
    candidates = np.empty((num_tags, num_tags, batch_size), dtype=emitted.dtype)
    widened = bests[:, :, None, :]  # (T, K from, 1, B)
    add, reduce = np.add, np.maximum.reduce
    # Every step runs the whole batch, with no per-step slicing: a sentence that has ended is
    # extended over its padding, but its scores are read at its own last step and the backtrace
    # never looks past it. Padding may hold anything, inf included, hence the errstate.
    with np.errstate(invalid="ignore", over="ignore"):
        for t in range(1, length):
            step = bests[t]
            add(widened[t - 1], tiled_moves, out=candidates)
            reduce(candidates, axis=0, out=step)
            add(step, emitted[t], out=step)
    rows = np.arange(batch_size)
    closing = bests[lengths - 1, :, rows] + end  # (B, K) at each last token
    current = closing.argmax(axis=1)
    scores = closing[rows, current]
    path = np.zeros((length, batch_size), dtype=np.int64)  # time-major; padding stays 0
    into = np.ascontiguousarray(moves.T)  # (K to, K from): the moves into each tag
    best_rows = np.ascontiguousarray(bests.transpose(0, 2, 1))  # (T, B, K from)
    previous = np.empty((batch_size, num_tags), dtype=emitted.dtype)
    for t in range(length - 1, 0, -1):
        n = running[t]
        tags = current[:n]  # a view: the argmax below writes the step's tags back into it
        path[t, :n] = tags
        sums = previous[:n]
        np.take(into, tags, axis=0, out=sums)
        np.add(sums, best_rows[t - 1, :n], out=sums)
        sums.argmax(axis=1, out=tags)
    path[0] = current
    path = path.T
    if order is not None:
        inverse = np.empty_like(order)
        inverse[order] = rows
        path, scores = path[inverse], scores[inverse]
    return np.ascontiguousarray(path), np.ascontiguousarray(scores)
