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

On the CPU, where the optional C extension built (``crftag/crf/_compiled.c``, see setup.py), both
algorithms run there instead: the same recursions with no per-call overhead, Viterbi with
bit-identical results, the forward-backward to float rounding. The loops here remain for other
devices and dtypes and for installs without a C compiler.

Shapes as in :mod:`crftag.crf.crf`: emissions (B, T, K), mask (B, T) bool prefix, K tags.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import torch

from crftag.crf import scan
from crftag.crf.arrays import running_counts
from crftag.crf.choice import COMPILED, compiled_loops, forced_kernel

__all__ = ["compiled_kernels_available", "log_partition", "marginals", "posteriors_and_counts"]


def _finite_max(values: torch.Tensor) -> torch.Tensor:
    """The largest finite entry (a 0-dim tensor), 0 when there is none; no host sync."""
    top = torch.where(torch.isfinite(values), values, float("-inf")).max()
    return torch.where(torch.isfinite(top), top, torch.zeros_like(top))


def _length_order(mask: torch.Tensor) -> tuple[torch.Tensor | None, list[int]]:
    """A permutation putting rows in decreasing length (None when they already are), and for
    each time step how many rows, in that order, are still running. One host sync."""
    lengths = mask.sum(1)
    as_list = lengths.tolist()
    if all(a >= b for a, b in itertools.pairwise(as_list)):
        return None, running_counts(as_list, mask.size(1))
    order = torch.argsort(lengths, descending=True)
    return order, running_counts(lengths[order].tolist(), mask.size(1))


class _TorchSteps:
    """The scaled recursions' step operations on torch tensors, for any device."""

    @staticmethod
    def array(tensor: torch.Tensor) -> torch.Tensor:
        return tensor

    @staticmethod
    def rows(tensor: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tensor.unbind(0)

    @staticmethod
    def mm(a, b, out) -> None:
        torch.mm(a, b, out=out)

    @staticmethod
    def mul(a, b, out) -> None:
        torch.mul(a, b, out=out)

    @staticmethod
    def div(a, b, out) -> None:
        torch.div(a, b, out=out)


class _NumpySteps:
    """The same on NumPy views of CPU tensors' memory: a NumPy call on these tiny arrays costs
    a third to a half of the torch call, and a step is nothing but such calls."""

    @staticmethod
    def array(tensor: torch.Tensor) -> np.ndarray:
        return tensor.numpy()

    @staticmethod
    def rows(tensor: torch.Tensor) -> list[np.ndarray]:
        return list(tensor.numpy())

    @staticmethod
    def mm(a, b, out) -> None:
        np.matmul(a, b, out=out)

    @staticmethod
    def mul(a, b, out) -> None:
        np.multiply(a, b, out=out)

    @staticmethod
    def div(a, b, out) -> None:
        np.divide(a, b, out=out)


def _steps_for(tensor: torch.Tensor) -> type[_TorchSteps] | type[_NumpySteps]:
    cpu = tensor.device.type == "cpu" and tensor.dtype in (torch.float32, torch.float64)
    if cpu and forced_kernel() != "torch":
        return _NumpySteps
    return _TorchSteps


class _Forward:
    """The scaled forward pass over rows sorted longest first, and what the backward needs."""

    def __init__(self, emissions, mask, transitions, start, end):
        order, running = _length_order(mask)
        if order is not None:
            emissions, mask = emissions[order], mask[order]
        self.order, self.running, self.mask = order, running, mask
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
        # The loop runs time-major, (T, B, K), so each step's rows are one contiguous block
        # that the small in-place operations below write straight into.
        scaled_steps = scaled.transpose(0, 1).contiguous()
        alphas_steps = emissions.new_zeros(length, batch_size, num_tags)  # p_t, rows sum to 1
        # norms[t]: the factor step t was divided by (1 on padding, so its log adds nothing)
        norms_steps = emissions.new_ones(length, batch_size)
        alpha = (first - first_top).exp()
        torch.sum(alpha, dim=1, out=norms_steps[0])
        torch.div(alpha, norms_steps[0].unsqueeze(1), out=alphas_steps[0])
        steps = _steps_for(emissions)
        # One call makes every step's view; indexing inside the loop would cost a call each.
        alpha_rows, scaled_rows = steps.rows(alphas_steps), steps.rows(scaled_steps)
        norm_rows = steps.rows(norms_steps.unsqueeze(2))
        step_weights, ones = steps.array(weights), steps.array(weights.new_ones(num_tags, 1))
        for t in range(1, length):
            n = running[t]
            if n == 0:
                break
            step = alpha_rows[t][:n]
            steps.mm(alpha_rows[t - 1][:n], step_weights, step)
            steps.mul(step, scaled_rows[t][:n], step)
            total = norm_rows[t][:n]
            steps.mm(step, ones, total)  # row sums: a product with ones is the cheapest call
            steps.div(step, total, step)
        alphas = alphas_steps.transpose(0, 1)  # (B, T, K) views
        norms = norms_steps.transpose(0, 1)
        self.scaled_steps = scaled_steps
        self.alphas_steps = alphas_steps
        lengths = mask.sum(1)
        last = alphas.gather(1, (lengths - 1).view(-1, 1, 1).expand(-1, 1, num_tags)).squeeze(1)
        end_shift = _finite_max(end)
        end_weights = (end - end_shift).exp()  # (K,)
        # Padding may hold anything; select it away rather than multiply (0 * inf is nan).
        tops = torch.where(mask[:, 1:], top[:, 1:, 0] + shift, 0.0)
        log_z = (
            first_top.squeeze(1)
            + norms.log().sum(1)
            + tops.sum(1)
            + (last * end_weights).sum(1).log()
            + end_shift
        )
        self.alphas, self.scaled, self.norms = alphas, scaled, norms
        self.weights, self.end_weights, self.lengths = weights, end_weights, lengths
        self.log_z = log_z  # in sorted order

    def betas(self) -> torch.Tensor:
        """The scaled backward vectors (B, T, K), sorted order: the suffix after each t."""
        batch_size, length, num_tags = self.alphas.shape
        # At each sentence's last token only the end transition follows: the starting fill.
        closing = self.end_weights / self.end_weights.sum()
        betas_steps = closing.expand(length, batch_size, num_tags).clone()  # time-major
        steps = _steps_for(betas_steps)
        weights_t = steps.array(self.weights.T.contiguous())
        ones = steps.array(betas_steps.new_ones(num_tags, 1))
        beta_rows, scaled_rows = steps.rows(betas_steps), steps.rows(self.scaled_steps)
        following = steps.array(betas_steps.new_empty(batch_size, num_tags))
        totals = steps.array(betas_steps.new_empty(batch_size, 1))
        for t in range(length - 2, -1, -1):
            n = self.running[t + 1]  # sentences that go on after t
            if n == 0:
                continue
            step = beta_rows[t][:n]
            steps.mul(scaled_rows[t + 1][:n], beta_rows[t + 1][:n], following[:n])
            steps.mm(following[:n], weights_t, step)
            steps.mm(step, ones, totals[:n])
            steps.div(step, totals[:n], step)
        return betas_steps.transpose(0, 1)

    def posteriors(self, betas: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """p(y_t = k | x) (B, T, K), 0 on padding, and the per-position normaliser (B, T, 1)
        (1 on padding) that the expected transition counts divide by as well."""
        joint = self.alphas * betas  # proportional to the marginals at each position
        active = self.mask.unsqueeze(2)
        per_position = torch.where(active, joint.sum(2, keepdim=True), 1.0)
        return torch.where(active, joint / per_position, 0.0), per_position

    def following(self, betas: torch.Tensor, per_position: torch.Tensor) -> torch.Tensor:
        """(B, T-1, K): at each t >= 1, the factor by which tag j there multiplies the previous
        position's alphas in the pairwise posteriors, xi_t(i, j) = p_{t-1}(i) W(i, j) e_t(j)
        b_t(j) / (s_t Z_t) = alphas[t-1, i] * W(i, j) * following[t-1, j]; 0 on padding."""
        scaled, norms = self.scaled[:, 1:], self.norms[:, 1:, None]
        following = scaled * betas[:, 1:] / (norms * per_position[:, 1:])
        # Selected, not multiplied: padding may hold inf.
        return torch.where(self.mask[:, 1:].unsqueeze(2), following, 0.0)

    def unsort(self, values: torch.Tensor) -> torch.Tensor:
        if self.order is None:
            return values
        return torch.empty_like(values).index_copy_(0, self.order, values)


class _LogPartition(torch.autograd.Function):
    """log Z; rows are taken longest first, so at step t the running sentences are a prefix
    ``[:running[t]]`` and no step needs a mask."""

    @staticmethod
    def forward(ctx, emissions, mask, transitions, start, end):
        ctx.compiled = None
        if _runs_compiled(emissions, transitions, start, end):
            # Everything the gradient needs is computed now, in the same pass over the data.
            wanted = 2 if ctx.needs_input_grad[2] else int(any(ctx.needs_input_grad))
            log_z, marginals, counts = _forward_backward_compiled(
                emissions, mask, transitions, start, end, wanted
            )
            ctx.compiled = (marginals, counts, mask.sum(1))
            return log_z
        forward = _Forward(emissions, mask, transitions, start, end)
        ctx.forward = forward
        return forward.unsort(forward.log_z)

    @staticmethod
    def backward(ctx, grad_log_z):
        if ctx.compiled is not None:
            return _compiled_gradients(ctx.compiled, grad_log_z)
        forward = ctx.forward  # kept: backward may run again with retain_graph
        alphas = forward.alphas
        num_tags = alphas.size(2)
        if forward.order is not None:
            grad_log_z = grad_log_z[forward.order]
        betas = forward.betas()
        posterior, per_position = forward.posteriors(betas)
        active = forward.mask.unsqueeze(2)
        weight = grad_log_z.view(-1, 1, 1) * active.to(alphas.dtype)
        marginals = posterior * weight  # (B, T, K), the gradient for emissions

        # Expected transition counts, each sentence's weighted by its grad.
        following = forward.following(betas, per_position) * grad_log_z.view(-1, 1, 1)
        counts = alphas[:, :-1].reshape(-1, num_tags).T @ following.reshape(-1, num_tags)
        grad_transitions = counts * forward.weights
        grad_start = marginals[:, 0].sum(0)
        last = (forward.lengths - 1).view(-1, 1, 1).expand(-1, 1, num_tags)
        grad_end = marginals.gather(1, last).squeeze(1).sum(0)
        return forward.unsort(marginals), None, grad_transitions, grad_start, grad_end


def _runs_compiled(emissions, transitions, start, end) -> bool:
    """Whether the compiled forward-backward takes these inputs: CPU, one float dtype."""
    return (
        compiled_loops() is not None
        and emissions.dtype in COMPILED_DTYPES
        and all(
            tensor.device.type == "cpu" and tensor.dtype == emissions.dtype
            for tensor in (emissions, transitions, start, end)
        )
    )


def _forward_backward_compiled(emissions, mask, transitions, start, end, wanted):
    """log Z (B,); with wanted >= 1 the marginals (B, T, K), with wanted == 2 also each
    sentence's expected transition counts (B, K, K) (None where not wanted)."""
    batch_size, length, num_tags = emissions.shape
    array = functools.partial(host_array, dtype=emissions.dtype)
    log_z = emissions.new_empty(batch_size)
    marginals = emissions.new_empty((batch_size, length, num_tags) if wanted >= 1 else (0,))
    counts = emissions.new_empty((batch_size, num_tags, num_tags) if wanted == 2 else (0,))
    COMPILED.forward_backward(
        array(emissions),
        mask.sum(1).numpy(),
        array(transitions),
        array(start),
        array(end),
        log_z.numpy(),
        marginals.numpy(),
        counts.numpy(),
        batch_size,
        length,
        num_tags,
        wanted,
    )
    return log_z, marginals if wanted >= 1 else None, counts if wanted == 2 else None


def _compiled_gradients(saved, grad_log_z):
    """The gradients of sum_b grad_log_z[b] * log Z_b from the compiled pass's marginals and
    expected counts: d log Z / d emissions = marginals, / d transitions = expected counts, / d
    start and end = the first and last positions' marginals."""
    marginals, counts, lengths = saved
    weight = grad_log_z.view(-1, 1, 1)
    grad_emissions = grad_transitions = grad_start = grad_end = None
    if marginals is not None:
        grad_emissions = marginals * weight
        grad_start = grad_emissions[:, 0].sum(0)
        last = (lengths - 1).view(-1, 1, 1).expand(-1, 1, marginals.size(2))
        grad_end = grad_emissions.gather(1, last).squeeze(1).sum(0)
    if counts is not None:
        grad_transitions = (counts * weight).sum(0)
    return grad_emissions, None, grad_transitions, grad_start, grad_end


def marginals(
    emissions: torch.Tensor,
    mask: torch.Tensor,
    transitions: torch.Tensor,
    start: torch.Tensor,
    end: torch.Tensor,
) -> torch.Tensor:
    """p(y_t = k | x) (B, T, K), 0 where masked, by the same scaled forward-backward (by the
    parallel scan where :func:`crftag.crf.scan.preferred` says it is faster)."""
    if scan.preferred(emissions):
        return scan.marginals(emissions, mask, transitions, start, end)
    with torch.no_grad():
        if _runs_compiled(emissions, transitions, start, end):
            return _forward_backward_compiled(emissions, mask, transitions, start, end, 1)[1]
        forward = _Forward(emissions, mask, transitions, start, end)
        posterior, _ = forward.posteriors(forward.betas())
        return forward.unsort(posterior)


def posteriors_and_counts(
    emissions: torch.Tensor,
    mask: torch.Tensor,
    transitions: torch.Tensor,
    start: torch.Tensor,
    end: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """log Z (B,), the marginals p(y_t = k | x) (B, T, K), 0 where masked, and each sentence's
    expected transition counts (B, K, K), ``counts[b, i, j] = sum_{t>1} p(y_{t-1} = i, y_t = j
    | x_b)``, by the scaled forward-backward (the gradient of log Z, per sentence); no graph.
    Where a step underflows (see the module's docstring) a row's values are not finite."""
    with torch.no_grad():
        if _runs_compiled(emissions, transitions, start, end):
            return _forward_backward_compiled(emissions, mask, transitions, start, end, 2)
        forward = _Forward(emissions, mask, transitions, start, end)
        betas = forward.betas()
        posterior, per_position = forward.posteriors(betas)
        following = forward.following(betas, per_position)  # (B, T-1, K to)
        counts = torch.bmm(forward.alphas[:, :-1].transpose(1, 2), following) * forward.weights
        return forward.unsort(forward.log_z), forward.unsort(posterior), forward.unsort(counts)


def log_partition(
    emissions: torch.Tensor,
    mask: torch.Tensor,
    transitions: torch.Tensor,
    start: torch.Tensor,
    end: torch.Tensor,
) -> torch.Tensor:
    """log Z (B,) by the scaled forward algorithm, differentiable by the backward algorithm (by
    the parallel scan and autograd where :func:`crftag.crf.scan.preferred` says it is faster)."""
    if scan.preferred(emissions):
        return scan.log_partition(emissions, mask, transitions, start, end)
    return _LogPartition.apply(emissions, mask, transitions, start, end)


COMPILED_DTYPES = (torch.float32, torch.float64)


def host_array(tensor: torch.Tensor, dtype: torch.dtype) -> np.ndarray:
    """A C-contiguous NumPy view (a copy only where needed) of a CPU tensor, as the C kernels
    read their inputs."""
    return tensor.detach().to(dtype).contiguous().numpy()


def compiled_kernels_available() -> bool:
    """Whether the compiled kernels (crftag/crf/_compiled.c) were built: the CPU runs them
    unless another kernel is named (:mod:`crftag.crf.choice`)."""
    return COMPILED is not None
