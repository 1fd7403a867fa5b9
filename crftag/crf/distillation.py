"""Structural knowledge distillation between linear-chain CRFs (Wang et al., ACL 2021): a
teacher CRF's exact posteriors, and a student CRF's cross-entropy under them.

The cross-entropy of the student's distribution p over whole tag sequences under the teacher's q,
H(q, p) = -sum_y q(y) log p(y), is a sum over K^T sequences; but log p(y) = score(y) - log Z, and
score(y) is a sum of one term per token and one per adjacent pair, so by linearity of expectation
only the teacher's marginals enter:

    H(q, p) = log Z - sum_t sum_k q_t(k) e_t(k) - sum_{i,j} Q(i, j) A(i, j)
              - sum_k q_1(k) start(k) - sum_k q_n(k) end(k)

with e, A, start and end the student's emissions and potentials, q_t(k) = q(y_t = k) the
teacher's token marginals and Q(i, j) = sum_{t=2..n} q(y_{t-1} = i, y_t = j) its transition
marginals summed over the sentence. Forward-backward gives both exactly
(:func:`crftag.crf.kernels.posteriors_and_counts`), and the gradient in the student's emissions
is p_t - q_t: the student's marginals pulled towards the teacher's.

Shapes as in :mod:`crftag.crf.crf`: emissions (B, T, K), mask (B, T) bool prefix, K tags.
"""

from __future__ import annotations

import math
import warnings

import torch

from crftag.crf import kernels
from crftag.crf.crf import CRF, _check_reduction, _reduce
from crftag.crf.posteriors import log_alphas_arrays, log_betas_arrays

__all__ = ["posterior_cross_entropy", "teacher_marginals"]


def teacher_marginals(
    crf: CRF, emissions: torch.Tensor, mask: torch.Tensor, temperature: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """The exact marginals of p(y) ∝ exp(score(y) / temperature), ``crf``'s distribution over
    whole tag sequences sharpened (temperature < 1) or flattened (> 1): the marginals of p^(1/τ)
    normalised. τ = 1 is the CRF itself, τ -> 0 approaches the Viterbi path's one-hot, large τ
    the uniform distribution over the allowed paths.

    Returns token marginals (B, T, K), q_t(k) = p(y_t = k), 0 on padding, and transition
    marginals (B, K, K), Q(i, j) = sum_{t=2..n} p(y_{t-1} = i, y_t = j) over each sentence
    (all 0 for a sentence of one token), both float32. Computed without a graph in float64 by
    the scaled forward-backward; rows where it underflows (scores / τ spread beyond exp's range
    in one step, as a small τ makes them) are computed again in log space, which has no such
    limit. A sentence with no allowed tag sequence is a ``ValueError``.
    """
    crf._validate(emissions, mask)
    if not (math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"expected a finite temperature > 0, got {temperature}")
    with torch.no_grad():
        scaled = [
            tensor.detach().to(torch.float64) / temperature
            for tensor in (emissions, *crf.potentials())
        ]
        tokens, counts = _exact_marginals(scaled[0], mask, *scaled[1:])
    return tokens.float(), counts.float()


def _exact_marginals(
    emissions: torch.Tensor,
    mask: torch.Tensor,
    transitions: torch.Tensor,
    start: torch.Tensor,
    end: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token marginals (B, T, K) and transition marginals (B, K, K) of float64 inputs: by the
    scaled forward-backward, and in log space for the rows where it is not finite."""
    with warnings.catch_warnings():  # NumPy's steps warn of the underflow redone below
        warnings.simplefilter("ignore", RuntimeWarning)
        log_z, tokens, counts = kernels.posteriors_and_counts(
            emissions, mask, transitions, start, end
        )
    broken = ~torch.isfinite(log_z)
    for values in (tokens, counts):
        broken |= ~torch.isfinite(values).flatten(1).all(1)
    if bool(broken.any()):
        rows = broken.nonzero().squeeze(1)
        tokens[rows], counts[rows] = _log_space_marginals(
            emissions[rows], mask[rows], transitions, start, end
        )
    return tokens, counts


def _log_space_marginals(
    emissions: torch.Tensor,
    mask: torch.Tensor,
    transitions: torch.Tensor,
    start: torch.Tensor,
    end: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token marginals (n, T, K) and transition marginals (n, K, K) of float64 inputs by the
    log-space recursions (:mod:`crftag.crf.posteriors`), exact in any range."""
    arrays = [tensor.cpu().numpy() for tensor in (emissions, mask.sum(1), transitions, start, end)]
    alphas = torch.from_numpy(log_alphas_arrays(*arrays)).to(emissions.device)  # (n, T, K)
    betas = torch.from_numpy(log_betas_arrays(*arrays)).to(emissions.device)
    log_z = torch.logsumexp(alphas[:, -1] + end, dim=1)  # the alphas carry past each end
    if not bool(torch.isfinite(log_z).all()):
        raise ValueError("expected every sentence to have an allowed tag sequence, got none")
    log_z = log_z.view(-1, 1, 1)
    tokens = torch.where(mask.unsqueeze(2), (alphas + betas - log_z).exp(), 0.0)
    # (n, T-1, K from, 1) + (K from, K to) + (n, T-1, 1, K to): log p(y_{t-1} = i, y_t = j).
    pairs = alphas[:, :-1, :, None] + transitions + (emissions + betas)[:, 1:, None, :]
    # Selected, not multiplied: padding may hold anything.
    pairs = torch.where(mask[:, 1:, None, None], (pairs - log_z.unsqueeze(1)).exp(), 0.0)
    return tokens, pairs.sum(1)


def posterior_cross_entropy(
    crf: CRF,
    emissions: torch.Tensor,
    mask: torch.Tensor,
    token_marginals: torch.Tensor,
    transition_marginals: torch.Tensor,
    reduction: str = "sum",
) -> torch.Tensor:
    """H(q, p) = -sum_y q(y) log p(y) of the student ``crf`` on ``emissions`` under a teacher's
    distribution q given by its marginals (:func:`teacher_marginals`), per sentence:

        log Z - sum_t sum_k q_t(k) e_t(k) - sum_{i,j} Q(i, j) A(i, j)
              - sum_k q_1(k) start(k) - sum_k q_n(k) end(k)

    with the student's constraints applied to A, start and end (:meth:`CRF.potentials`).
    Differentiable in the emissions and the crf's parameters, not meant to be in the targets.

    token_marginals (B, T, K): q_t(k); ignored on padding. transition_marginals (B, K, K):
    Q(i, j) summed over each sentence. They are taken as given: rounded ones (float16 storage)
    that do not sum exactly to 1 per token, or to n - 1 per sentence, are not renormalised, so
    the value is the exact linear function of the targets shown above. A term whose target is 0
    adds 0, even where the student's potential is -inf (a forbidden move); a target above 0
    where the student forbids the move or the first or last tag (cross-entropy +inf) is a
    ``ValueError`` instead of an infinite loss. reduction as for :meth:`CRF.nll`.
    """
    _check_reduction(reduction)
    log_z = crf.log_partition(emissions, mask)  # (B,), validates emissions and mask
    batch_size, length, num_tags = emissions.shape
    if token_marginals.shape != emissions.shape:
        raise ValueError(
            f"expected token_marginals of shape {tuple(emissions.shape)}, "
            f"got {tuple(token_marginals.shape)}"
        )
    if transition_marginals.shape != (batch_size, num_tags, num_tags):
        raise ValueError(
            f"expected transition_marginals of shape {(batch_size, num_tags, num_tags)}, "
            f"got {tuple(transition_marginals.shape)}"
        )
    dtype = log_z.dtype
    tokens = torch.where(mask.unsqueeze(2), token_marginals.to(dtype), 0.0)  # padding ignored
    pairs = transition_marginals.to(dtype)
    last = (mask.sum(1) - 1).view(-1, 1, 1).expand(-1, 1, num_tags)
    first_tags, last_tags = tokens[:, 0], tokens.gather(1, last).squeeze(1)  # (B, K) each
    _refuse_forbidden_mass(crf, pairs, first_tags, last_tags)
    transitions, start, end = (potential.to(dtype) for potential in crf.potentials())
    expected_score = (
        _expectation(tokens, emissions.to(dtype))
        + _expectation(pairs, transitions)
        + _expectation(first_tags, start)
        + _expectation(last_tags, end)
    )
    return _reduce(log_z - expected_score, mask, reduction)


def _expectation(weights: torch.Tensor, potentials: torch.Tensor) -> torch.Tensor:
    """sum of weights * potentials over all but the first dimension of ``weights`` (B, ...),
    ``potentials`` broadcast to it; an entry whose weight is 0 adds 0 whatever its potential
    (-inf for a forbidden move, anything on padding), and passes back a gradient of 0."""
    used = weights != 0
    # Selected twice: where() alone would still send 0 * -inf = nan back through the product.
    safe = torch.where(used, potentials, 0.0)
    return torch.where(used, weights * safe, 0.0).flatten(1).sum(1)


def _refuse_forbidden_mass(
    crf: CRF, pairs: torch.Tensor, first_tags: torch.Tensor, last_tags: torch.Tensor
) -> None:
    """A ValueError where the targets put probability on a move, a first or a last tag that the
    student's constraints forbid: the cross-entropy there is +inf (the teacher believes in paths
    the student can never give), which no training step can use."""
    targets = (
        ("transition", pairs, crf.allowed),
        ("first tag", first_tags, crf.allowed_start),
        ("last tag", last_tags, crf.allowed_end),
    )
    misplaced = torch.stack(
        [torch.where(allowed, 0.0, weights).flatten(1).sum(1) for _, weights, allowed in targets]
    )  # (3, B)
    if not bool((misplaced != 0).any()):
        return
    kind, row = divmod(int((misplaced != 0).flatten().nonzero()[0]), misplaced.size(1))
    raise ValueError(
        f"expected no teacher probability where the student CRF forbids a {targets[kind][0]}, "
        f"got {float(misplaced[kind, row]):.3g} in sentence {row}"
    )
