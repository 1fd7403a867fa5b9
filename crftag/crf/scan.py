"""log Z, marginals and Viterbi by a parallel scan: O(log T) sequential depth instead of T.

The forward recursion alpha_t = alpha_{t-1} (x) M_t multiplies the row vector of the start
scores by one (K, K) matrix per position, ``M_t[i, j] = transitions[i, j] + emissions[t, j]``,
in a semiring: (logsumexp, +) for log Z, (max, +) for the Viterbi score. Both are associative,
so the T - 1 matrices can be multiplied pairwise, a level at a time, in ceil(log2 T) levels of
batched (K, K) products (Rush 2020, pytorch-struct's ``linearchain.py``; Särkkä and
García-Fernández 2021). Each level is a handful of large GPU kernels however long the sentence,
where the sequential loop launches a few small ones per position. The work is O(T K^3) against
the loop's O(T K^2), so on a CPU, or for short sentences, the loop wins: :func:`preferred` is the
rule, measured by ``benchmarks/gpu.py``.

Padding positions take the semiring's identity (0 on the diagonal, -inf elsewhere), so each row
stops at its own length with no masking of the result. Gradients come from autograd through the
tree: the gradient of log Z is the marginals, and the gradient of the max-plus score is the
one-hot Viterbi path (each max passes its gradient to the one entry it chose).

Shapes as in :mod:`crftag.crf.crf`: emissions (B, T, K), mask (B, T) bool prefix, K tags.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from crftag.crf.choice import forced_kernel

__all__ = ["log_partition", "logsumexp", "marginals", "preferred", "viterbi"]

# The padded lengths from which a GPU runs the scan. On an H100 (benchmarks/gpu.py, K = 9 and
# 17, B = 1 and 32) log Z with its gradient was faster by the scan at every length measured,
# from T = 4 on; Viterbi, whose loop has no backward pass, from T = 32 on.
MIN_SCAN_LENGTH = 4
MIN_DECODE_SCAN_LENGTH = 32
# The widest level holds B * T/2 * K^3 sums (and autograd keeps them): above this many floats
# the loop runs instead, however long the sentences.
MAX_SCAN_ELEMENTS = 2**28


def preferred(emissions: torch.Tensor, decoding: bool = False) -> bool:
    """Whether the scan is the faster choice for these emissions (B, T, K), for log Z and
    marginals or, ``decoding``, for Viterbi: on a GPU, for sentences long enough and a level that
    fits in memory; never on the CPU, where the compiled loops run."""
    if forced_kernel() == "scan":
        return True
    batch_size, length, num_tags = emissions.shape
    return (
        emissions.device.type == "cuda"
        and length >= (MIN_DECODE_SCAN_LENGTH if decoding else MIN_SCAN_LENGTH)
        and batch_size * (length // 2 + 1) * num_tags**3 <= MAX_SCAN_ELEMENTS
    )


def logsumexp(scores: torch.Tensor, dim: int) -> torch.Tensor:
    """``torch.logsumexp`` whose gradient is 0, not NaN, where every input is ``-inf``.

    Forbidden transitions and the identity's off-diagonal make whole rows ``-inf``; the plain
    logsumexp back-propagates ``exp(-inf - -inf) = nan`` there. Shifting by a finite maximum
    keeps the value exact, and the empty sum's logarithm is selected, not computed.
    """
    maximum = scores.amax(dim=dim, keepdim=True).detach()
    maximum = torch.where(torch.isfinite(maximum), maximum, torch.zeros_like(maximum))
    total = (scores - maximum).exp().sum(dim)
    nonempty = total > 0
    logged = torch.where(nonempty, total, torch.ones_like(total)).log() + maximum.squeeze(dim)
    return torch.where(nonempty, logged, torch.full_like(logged, float("-inf")))


def _log_product(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """(..., K, K) x (..., K, K) -> (..., K, K) in the (logsumexp, +) semiring."""
    return logsumexp(left.unsqueeze(-1) + right.unsqueeze(-3), dim=-2)


def _max_product(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """(..., K, K) x (..., K, K) -> (..., K, K) in the (max, +) semiring."""
    return (left.unsqueeze(-1) + right.unsqueeze(-3)).max(dim=-2).values


def _identity(num_tags: int, like: torch.Tensor) -> torch.Tensor:
    """(K, K): 0 on the diagonal, -inf elsewhere, the identity of both semirings."""
    eye = torch.eye(num_tags, dtype=torch.bool, device=like.device)
    minus_inf = torch.full(
        (num_tags, num_tags), float("-inf"), dtype=like.dtype, device=like.device
    )
    return minus_inf.masked_fill(eye, 0.0)


def _step_matrices(emissions, mask, transitions) -> torch.Tensor:
    """(B, T-1, K, K): position t's ``transitions[i, j] + emissions[t, j]``, the identity where
    t is padding."""
    steps = transitions + emissions[:, 1:].unsqueeze(2)  # (B, T-1, K from, K to)
    identity = _identity(emissions.size(2), emissions)
    return torch.where(mask[:, 1:, None, None], steps, identity)


def _reduce(matrices: torch.Tensor, product: Callable) -> torch.Tensor:
    """The ordered product of (B, N, K, K) matrices, (B, K, K), in ceil(log2 N) levels."""
    while matrices.size(1) > 1:
        if matrices.size(1) % 2:
            identity = _identity(matrices.size(-1), matrices)
            padding = identity.expand(matrices.size(0), 1, *identity.shape)
            matrices = torch.cat([matrices, padding], dim=1)
        matrices = product(matrices[:, 0::2], matrices[:, 1::2])
    return matrices[:, 0]


def _path_totals(emissions, mask, transitions, start, end, product) -> torch.Tensor:
    """(B, K, K): the semiring sum of the scores of the paths from first tag i to last tag j,
    start and end transitions included."""
    first = start + emissions[:, 0]  # (B, K)
    if emissions.size(1) == 1:
        identity = _identity(emissions.size(2), emissions)
        return first.unsqueeze(2) + identity + end
    middle = _reduce(_step_matrices(emissions, mask, transitions), product)  # (B, K, K)
    return first.unsqueeze(2) + middle + end


def log_partition(emissions, mask, transitions, start, end) -> torch.Tensor:
    """log Z (B,) by the (logsumexp, +) scan; differentiable through autograd."""
    totals = _path_totals(emissions, mask, transitions, start, end, _log_product)
    return logsumexp(totals.flatten(1), dim=1)


def _recordable(*tensors: torch.Tensor) -> list[torch.Tensor]:
    """Detached copies that autograd may record: tensors made under ``torch.inference_mode``
    (a tagger's) can take no part in a graph, so those are cloned, outside it."""
    return [tensor.clone() if tensor.is_inference() else tensor.detach() for tensor in tensors]


def marginals(emissions, mask, transitions, start, end) -> torch.Tensor:
    """p(y_t = k | x) (B, T, K), 0 where masked: the gradient of log Z in the emissions."""
    with torch.inference_mode(False), torch.enable_grad():
        leaf, mask, transitions, start, end = _recordable(emissions, mask, transitions, start, end)
        leaf.requires_grad_()
        log_z = log_partition(leaf, mask, transitions, start, end)
        (posterior,) = torch.autograd.grad(log_z.sum(), leaf)
    return posterior.masked_fill(~mask.unsqueeze(2), 0.0)


def viterbi(emissions, mask, transitions, start, end) -> tuple[torch.Tensor, torch.Tensor]:
    """Best tags (B, T), 0 where masked, and their scores (B,), by the (max, +) scan. The path is
    the gradient of the best score in the emissions: one 1 per position, at the chosen tag."""
    with torch.inference_mode(False), torch.enable_grad():
        leaf, mask, transitions, start, end = _recordable(emissions, mask, transitions, start, end)
        leaf.requires_grad_()
        totals = _path_totals(leaf, mask, transitions, start, end, _max_product)
        scores = totals.flatten(1).max(dim=1).values  # (B,)
        (chosen,) = torch.autograd.grad(scores.sum(), leaf)  # (B, T, K), one-hot where unmasked
    return chosen.argmax(dim=2).masked_fill(~mask, 0), scores.detach()
