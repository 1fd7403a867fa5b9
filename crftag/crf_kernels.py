"""Fast kernels for the CRF: the partition function with a hand-written backward pass, and
Viterbi over length-sorted rows.

Autograd through a loop over time records every small operation of every step and replays
them backwards; on a CPU, that bookkeeping costs more than the arithmetic. Here the forward
algorithm runs once without a graph, and the gradient of log Z, which is the posterior marginals
(for emissions and start/end) and the expected transition counts (for transitions), comes from one
backward recursion and a single matrix product.

Both recursions run in probability space with per-step scaling (the scaled forward-backward of
Rabiner 1989): each step is one small matrix product instead of a (B, K, K) log-sum-exp, and the
scale factors, summed in log space, give log Z. A transition more than about 87 (float32) below
the largest one underflows to 0 in ``exp``; learned transitions stay far inside that range, and
forbidden ones are exactly 0, as they should be.

Shapes as in :mod:`crftag.crf`: emissions (B, T, K), mask (B, T) bool prefix, K tags.
"""

from __future__ import annotations

import torch

__all__ = ["log_partition", "viterbi"]


def _finite_max(values: torch.Tensor) -> torch.Tensor:
    """The largest finite entry (a 0-dim tensor), 0 when there is none; no host sync."""
    top = torch.where(torch.isfinite(values), values, float("-inf")).max()
    return torch.where(torch.isfinite(top), top, torch.zeros_like(top))


class _LogPartition(torch.autograd.Function):
    @staticmethod
    def forward(ctx, emissions, mask, transitions, start, end):
        batch_size, length, num_tags = emissions.shape
        shift = _finite_max(transitions)
        weights = (transitions - shift).exp()  # (K, K), forbidden moves are 0
        # Emissions as probabilities scaled per position: exp(e - max_k e).
        top = emissions.amax(dim=2, keepdim=True)  # (B, T, 1)
        top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
        scaled = (emissions - top).exp()  # (B, T, K)

        first = start + emissions[:, 0]  # (B, K), log space
        first_top = first.amax(dim=1, keepdim=True)
        first_top = torch.where(torch.isfinite(first_top), first_top, torch.zeros_like(first_top))
        alpha = (first - first_top).exp()
        norms = emissions.new_ones(batch_size, length)  # s_t: the factor each step was divided by
        norms[:, 0] = alpha.sum(1)
        alpha = alpha / norms[:, 0:1]
        alphas = emissions.new_empty(batch_size, length, num_tags)  # p_t, each row sums to 1
        alphas[:, 0] = alpha
        active = mask.unsqueeze(2)
        for t in range(1, length):
            step = (alpha @ weights) * scaled[:, t]  # (B, K)
            total = step.sum(1, keepdim=True)
            alpha = torch.where(active[:, t], step / total, alpha)
            alphas[:, t] = alpha
            norms[:, t] = total.squeeze(1)
        lengths = mask.sum(1)
        end_shift = _finite_max(end)
        end_weights = (end - end_shift).exp()  # (K,)
        closing = alpha @ end_weights  # (B,) alpha here is each row's last position
        # Padding may hold anything; select it away rather than multiply (0 * inf is nan).
        step_logs = torch.where(mask, norms.log(), 0.0) + torch.where(
            mask, top.squeeze(2) + shift, 0.0
        )
        step_logs[:, 0] = norms[:, 0].log()  # the first step has no transition or emission top
        log_z = first_top.squeeze(1) + step_logs.sum(1) + closing.log() + end_shift
        ctx.save_for_backward(alphas, scaled, norms, weights, end_weights, mask, lengths)
        return log_z

    @staticmethod
    def backward(ctx, grad_log_z):
        alphas, scaled, norms, weights, end_weights, mask, lengths = ctx.saved_tensors
        batch_size, length, num_tags = alphas.shape
        # betas[:, t]: the scaled backward vector; the suffix after t in probability space.
        betas = torch.empty_like(alphas)
        closing = (end_weights / end_weights.sum()).expand(batch_size, num_tags)
        beta = closing
        betas[:, length - 1] = beta
        weights_t = weights.T
        for t in range(length - 2, -1, -1):
            step = (scaled[:, t + 1] * beta) @ weights_t
            step = step / step.sum(1, keepdim=True)
            # Where t + 1 is padding, t is the last token: only the end transition follows.
            beta = torch.where(mask[:, t + 1].unsqueeze(1), step, closing)
            betas[:, t] = beta
        joint = alphas * betas  # proportional to the marginals at each position
        active = mask.unsqueeze(2)
        per_position = torch.where(active, joint.sum(2, keepdim=True), 1.0)  # (B, T, 1)
        weight = grad_log_z.view(-1, 1, 1) * active.to(alphas.dtype)
        marginals = joint / per_position * weight  # (B, T, K), the gradient for emissions

        # Expected transition counts: xi_t(i, j) = p_{t-1}(i) W(i, j) e_t(j) b_t(j) / (s_t Z_t).
        step_norms = torch.where(mask[:, 1:], norms[:, 1:], 1.0).unsqueeze(2)
        following = scaled[:, 1:] * betas[:, 1:] / (step_norms * per_position[:, 1:])
        # Zero on padding (selected, not multiplied: padding may hold inf), scaled by the grad.
        following = torch.where(active[:, 1:], following * weight[:, 1:], 0.0)
        counts = alphas[:, :-1].reshape(-1, num_tags).T @ following.reshape(-1, num_tags)
        grad_transitions = counts * weights
        grad_start = marginals[:, 0].sum(0)
        last = (lengths - 1).view(-1, 1, 1).expand(-1, 1, num_tags)
        grad_end = marginals.gather(1, last).squeeze(1).sum(0)
        return marginals, None, grad_transitions, grad_start, grad_end


def log_partition(
    emissions: torch.Tensor,
    mask: torch.Tensor,
    transitions: torch.Tensor,
    start: torch.Tensor,
    end: torch.Tensor,
) -> torch.Tensor:
    """log Z (B,) by the scaled forward algorithm, differentiable by the backward algorithm."""
    return _LogPartition.apply(emissions, mask, transitions, start, end)


def viterbi(
    emissions: torch.Tensor,
    mask: torch.Tensor,
    transitions: torch.Tensor,
    start: torch.Tensor,
    end: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Best tags (B, T), 0 where masked, and their scores (B,).

    Rows are sorted by length (one host sync for the lengths) so that at time t the sentences
    still running are a prefix of the batch: each step works on that prefix alone, with no
    masking, and the backtrace picks each sentence up at its own last token.
    """
    batch_size, length, num_tags = emissions.shape
    lengths = mask.sum(1)
    order = torch.argsort(lengths, descending=True)
    sorted_lengths = lengths[order].tolist()
    emissions = emissions[order]
    # running[t]: how many sentences have a token at t (a non-increasing list).
    running = []
    count = batch_size
    for t in range(length):
        while count and sorted_lengths[count - 1] <= t:
            count -= 1
        running.append(count)
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
