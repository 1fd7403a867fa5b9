"""Viterbi decoding over length-sorted rows: compiled C on the CPU where it was built, NumPy
views of the same memory where not, and torch on other devices. All three give the same paths.

Shapes as in :mod:`crftag.crf.crf`: emissions (B, T, K), mask (B, T) bool prefix, K tags.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from crftag.crf import kernels
from crftag.crf.kernels import COMPILED_DTYPES, host_array, running_counts

__all__ = ["viterbi", "viterbi_torch"]


def viterbi(
    emissions: torch.Tensor,
    mask: torch.Tensor,
    transitions: torch.Tensor,
    start: torch.Tensor,
    end: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Best tags (B, T), 0 where masked, and their scores (B,).

    Rows are sorted by length (one host sync for the lengths) so that at time t the sentences
    still running are a prefix of the batch, and the backtrace picks each sentence up at its
    own last token with no masking. On other devices each forward step works on that prefix
    alone (:func:`viterbi_torch`). On the CPU the loop runs on NumPy views of the same memory,
    whose per-call overhead is a fraction of torch's (a Viterbi step is a handful of tiny
    calls), and keeps only the best scores, recomputing back-pointers on the way back
    (:func:`_viterbi_numpy`). Where the compiled kernel was built (``crftag.crf._compiled``), the
    CPU runs that same algorithm in C instead, with identical results (:func:`_viterbi_compiled`).
    """
    if emissions.device.type == "cpu" and not emissions.requires_grad:
        if kernels._compiled is not None and emissions.dtype in COMPILED_DTYPES:
            return _viterbi_compiled(emissions, mask, transitions, start, end)
        return _viterbi_numpy(emissions, mask, transitions, start, end)
    return viterbi_torch(emissions, mask, transitions, start, end)


def _viterbi_compiled(emissions, mask, transitions, start, end):
    """:func:`_viterbi_numpy` in C: one call for the whole batch, no sorting needed."""
    batch_size, length, num_tags = emissions.shape
    array = functools.partial(host_array, dtype=emissions.dtype)
    lengths = mask.sum(1).numpy()  # (B,) int64
    path = np.empty((batch_size, length), dtype=np.int64)
    scores = np.empty(batch_size, dtype=array(start).dtype)
    kernels._compiled.viterbi(
        array(emissions),
        lengths,
        array(transitions),
        array(start),
        array(end),
        path,
        scores,
        batch_size,
        length,
        num_tags,
    )
    return torch.from_numpy(path), torch.from_numpy(scores)


def _viterbi_numpy(emissions, mask, transitions, start, end):
    batch_size, length, num_tags = emissions.shape
    lengths = mask.sum(1).numpy()
    order = None
    if np.any(lengths[1:] > lengths[:-1]):
        order = np.argsort(-lengths, kind="stable")
        lengths = lengths[order]
    running = running_counts(lengths.tolist(), length)
    emitted = emissions.detach().numpy()
    if order is not None:
        emitted = emitted[order]
    emitted = np.ascontiguousarray(emitted.transpose(1, 2, 0))  # (T, K, B): batch innermost
    moves = transitions.detach().numpy()  # (K from, K to)
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
    np.add(start.detach().numpy()[:, None], emitted[0], out=bests[0])
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
    closing = bests[lengths - 1, :, rows] + end.detach().numpy()  # (B, K) at each last token
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
    return torch.from_numpy(np.ascontiguousarray(path)), torch.from_numpy(
        np.ascontiguousarray(scores)
    )


def viterbi_torch(
    emissions: torch.Tensor,
    mask: torch.Tensor,
    transitions: torch.Tensor,
    start: torch.Tensor,
    end: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`viterbi` in torch operations, for any device."""
    batch_size, length, num_tags = emissions.shape
    lengths = mask.sum(1)
    order = torch.argsort(lengths, descending=True)
    running = running_counts(lengths[order].tolist(), length)
    emissions = emissions[order]
    best = start + emissions[:, 0]  # (B, K)
    finals = best.new_empty(batch_size, num_tags)  # each sentence's scores at its last token
    backpointers = []
    for t in range(1, length):
        n = running[t]
        ended = running[t - 1]
        if n < ended:  # sentences whose last token was t - 1
            finals[n:ended] = best[n:ended]
        step, pointers = (best[:n].unsqueeze(2) + transitions).max(dim=1)  # (n, K)
        best = step + emissions[:n, t]
        backpointers.append(pointers)
    finals[: running[length - 1]] = best
    scores, tag = (finals + end).max(dim=1)  # (B,)
    path = emissions.new_zeros(batch_size, length, dtype=torch.long)
    current = tag.clone()
    for t in range(length - 1, 0, -1):
        n = running[t]
        path[:n, t] = current[:n]
        current[:n] = backpointers[t - 1].gather(1, current[:n].unsqueeze(1)).squeeze(1)
    path[:, 0] = current
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(batch_size, device=order.device)
    return path[inverse].masked_fill(~mask, 0), scores[inverse]
