"""Viterbi decoding over length-sorted rows: compiled C on the CPU where it was built, NumPy
views of the same memory where not, and torch on other devices. All three give the same paths.

Shapes as in :mod:`crftag.crf.crf`: emissions (B, T, K), mask (B, T) bool prefix, K tags.
"""

from __future__ import annotations

import functools

import torch

from crftag.crf import arrays, scan
from crftag.crf.choice import compiled_loops, forced_kernel
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
    Long sentences on a GPU take the parallel scan (:func:`crftag.crf.scan.viterbi`).
    """
    on_cpu = emissions.device.type == "cpu" and not emissions.requires_grad
    if on_cpu and forced_kernel() not in ("torch", "scan"):
        if compiled_loops() is not None and emissions.dtype in COMPILED_DTYPES:
            return _viterbi_compiled(emissions, mask, transitions, start, end)
        return _viterbi_numpy(emissions, mask, transitions, start, end)
    if scan.preferred(emissions, decoding=True):
        return scan.viterbi(emissions, mask, transitions, start, end)
    return viterbi_torch(emissions, mask, transitions, start, end)


def _viterbi_compiled(emissions, mask, transitions, start, end):
    """:func:`crftag.crf.arrays.viterbi_compiled` on tensors: one C call for the whole batch."""
    array = functools.partial(host_array, dtype=emissions.dtype)
    lengths = mask.sum(1).numpy()  # (B,) int64
    path, scores = arrays.viterbi_compiled(
        array(emissions), lengths, array(transitions), array(start), array(end)
    )
    return torch.from_numpy(path), torch.from_numpy(scores)


def _viterbi_numpy(emissions, mask, transitions, start, end):
    """:func:`crftag.crf.arrays.viterbi_numpy` on NumPy views of the tensors' memory."""
    path, scores = arrays.viterbi_numpy(
        emissions.detach().numpy(),
        mask.sum(1).numpy(),
        transitions.detach().numpy(),
        start.detach().numpy(),
        end.detach().numpy(),
    )
    return torch.from_numpy(path), torch.from_numpy(scores)


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
