"""A batched linear-chain conditional random field, in log space.

Pure tensor math: no I/O, no vocabulary, no device choice. All inputs are batch-first.

Notation, used by every method:
    B  batch size, T  padded length, K  number of tags
    emissions  (B, T, K) float: score of tag k at position t (from the encoder)
    tags       (B, T) long: a tag sequence, any value where masked
    mask       (B, T) bool: true on a prefix of each row, at least one true per row

The score of a tag sequence y_1..y_n of a sentence of length n is

    start[y_1] + sum_t emissions[t, y_t] + sum_{t>1} transitions[y_{t-1}, y_t] + end[y_n]

with one transition convention throughout: ``transitions[i, j]`` scores tag i followed by tag j.
The model is p(y | x) = exp(score(y)) / Z, with log Z computed by the forward algorithm.

Transitions that can never occur (for example ``O -> I-PER`` in IOB2) are given by a boolean
``allowed`` buffer and applied as ``-inf`` in one place, :meth:`CRF.potentials`; there are no
START/STOP pseudo-tags and no -10000 sentinels.

The hot paths (log Z with its gradient, marginals, Viterbi) run in :mod:`crftag.crf.kernels`;
n-best, constrained partitions and the log-space alphas and betas are here.
"""

from __future__ import annotations

import torch
from torch import nn

from crftag.crf import kernels
from crftag.crf.scan import logsumexp
from crftag.crf.viterbi import viterbi

__all__ = ["CRF"]


class CRF(nn.Module):
    """Linear-chain CRF over ``num_tags`` tags.

    Parameters:
        transitions        (K, K): ``transitions[i, j]`` is the score of tag i followed by tag j
        start_transitions  (K,):   score of starting a sentence with each tag
        end_transitions    (K,):   score of ending a sentence with each tag

    Buffers (constraints; all true means unconstrained):
        allowed        (K, K) bool: may tag i be followed by tag j
        allowed_start  (K,) bool:   may a sentence start with tag k
        allowed_end    (K,) bool:   may a sentence end with tag k
    """

    def __init__(
        self,
        num_tags: int,
        *,
        allowed: torch.Tensor | None = None,
        allowed_start: torch.Tensor | None = None,
        allowed_end: torch.Tensor | None = None,
    ) -> None:
        super().__init__()
        if num_tags < 1:
            raise ValueError(f"expected num_tags >= 1, got {num_tags}")
        self.num_tags = num_tags
        self.transitions = nn.Parameter(torch.empty(num_tags, num_tags))
        self.start_transitions = nn.Parameter(torch.empty(num_tags))
        self.end_transitions = nn.Parameter(torch.empty(num_tags))
        self.register_buffer("allowed", _bool_buffer(allowed, (num_tags, num_tags), "allowed"))
        self.register_buffer(
            "allowed_start", _bool_buffer(allowed_start, (num_tags,), "allowed_start")
        )
        self.register_buffer("allowed_end", _bool_buffer(allowed_end, (num_tags,), "allowed_end"))
        # Constraints are fixed at construction; without any, potentials() has nothing to mask.
        self._constrained = any(
            value is not None and not bool(torch.as_tensor(value).all())
            for value in (allowed, allowed_start, allowed_end)
        )
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.uniform_(self.transitions, -0.1, 0.1)
        nn.init.uniform_(self.start_transitions, -0.1, 0.1)
        nn.init.uniform_(self.end_transitions, -0.1, 0.1)

    def extra_repr(self) -> str:
        return f"num_tags={self.num_tags}"

    # ----------------------------------------------------------------------------------------
    # The potentials with constraints applied: the one place where forbidden moves become -inf.

    def potentials(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Return (transitions (K, K), start (K,), end (K,)) with forbidden entries set to -inf."""
        if not self._constrained:
            return self.transitions, self.start_transitions, self.end_transitions
        minus_inf = float("-inf")
        transitions = self.transitions.masked_fill(~self.allowed, minus_inf)
        start = self.start_transitions.masked_fill(~self.allowed_start, minus_inf)
        end = self.end_transitions.masked_fill(~self.allowed_end, minus_inf)
        return transitions, start, end

    def _potentials_for(
        self, emissions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """:meth:`potentials` widened to the emissions' dtype where that is wider, so float64
        emissions get float64 sums all through (the probability of a long sentence needs them);
        float32 and narrower emissions get the parameters as they are."""
        potentials = self.potentials()
        wider = torch.promote_types(potentials[0].dtype, emissions.dtype)
        return tuple(p.to(wider) for p in potentials)

    def _kernel_inputs(
        self, emissions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(emissions, transitions, start, end) in one dtype, the wider of the two and at least
        float32: the kernels take one float dtype, and float16 or bfloat16 sums over a sentence
        would lose the probabilities (a model in half precision still decodes and scores in
        float32). Differentiable: the casts pass gradients back in the callers' dtypes."""
        potentials = self.potentials()
        common = torch.promote_types(potentials[0].dtype, emissions.dtype)
        common = torch.promote_types(common, torch.float32)
        return emissions.to(common), *(p.to(common) for p in potentials)

    def _inference_inputs(
        self, emissions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """:meth:`_kernel_inputs` detached, for the entry points that are never differentiated
        (decoding, n-best, marginals): emissions that still require grad, or parameters that
        do, must neither build a graph nor send Viterbi to the torch loop."""
        return tuple(tensor.detach() for tensor in self._kernel_inputs(emissions))

    # ----------------------------------------------------------------------------------------
    # Public API

    def log_partition(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """log Z for each sentence by the forward algorithm. Returns (B,), in the wider of
        float32 and the emissions' dtype; differentiable."""
        self._validate(emissions, mask)
        emissions, transitions, start, end = self._kernel_inputs(emissions)
        return kernels.log_partition(emissions, mask, transitions, start, end)

    def score(
        self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        """Unnormalised log score of the given tag sequences. Returns (B,)."""
        self._validate(emissions, mask, tags)
        transitions, start, end = self._potentials_for(emissions)
        tags = tags.masked_fill(~mask, 0)
        emitted = emissions.gather(2, tags.unsqueeze(2)).squeeze(2)  # (B, T)
        # Selected away, not multiplied by a 0 mask: padding may hold nan or inf (0 * inf is nan).
        emitted = torch.where(mask, emitted, torch.zeros_like(emitted))
        total = emitted.sum(1) + start[tags[:, 0]]
        if tags.size(1) > 1:
            # One flat gather: cheaper, forwards and backwards, than 2-D advanced indexing.
            moved = transitions.reshape(-1)[tags[:, :-1] * self.num_tags + tags[:, 1:]]  # (B, T-1)
            # Multiplying -inf by a 0 mask gives nan, so padded moves are selected away instead.
            total = total + torch.where(mask[:, 1:], moved, torch.zeros_like(moved)).sum(1)
        last_tags = tags.gather(1, _last_index(mask).unsqueeze(1)).squeeze(1)
        return total + end[last_tags]

    def nll(
        self,
        emissions: torch.Tensor,
        tags: torch.Tensor,
        mask: torch.Tensor,
        reduction: str = "mean",
    ) -> torch.Tensor:
        """Negative log-likelihood -log p(tags | emissions), >= 0.

        reduction: 'none' (B,), 'sum' (), 'mean' over sentences (), or 'token_mean' over
        unmasked tokens ().
        """
        _check_reduction(reduction)
        losses = self.log_partition(emissions, mask) - self.score(emissions, tags, mask)
        return _reduce(losses, mask, reduction)

    def partial_nll(
        self,
        emissions: torch.Tensor,
        tags: torch.Tensor,
        mask: torch.Tensor,
        allowed_tags: torch.Tensor,
        reduction: str = "mean",
    ) -> torch.Tensor:
        """Negative log of the total probability of the tag sequences that use only allowed
        tags, log Z - log Z_allowed, >= 0: the loss of partially labelled sentences.

        allowed_tags (B, T, K) bool: which tags each position may take (every tag at an unknown
        one). A row that allows exactly one tag at every unmasked position is fully labelled:
        those tags must be ``tags``, and its loss is :meth:`nll`'s, computed as :meth:`nll`
        computes it. reduction as for :meth:`nll`.
        """
        _check_reduction(reduction)
        log_z = self.log_partition(emissions, mask)
        consistent = self.score(emissions, tags, mask)  # (B,)
        partial = ((allowed_tags.sum(2) != 1) & mask).any(1)  # (B,) rows with a choice
        if bool(partial.any()):
            rows = partial.nonzero().squeeze(1)
            constrained = self.constrained_log_partition(
                emissions[rows], mask[rows], allowed_tags[rows]
            )
            consistent = consistent.index_put((rows,), constrained)
        return _reduce(log_z - consistent, mask, reduction)

    def decode(
        self, emissions: torch.Tensor, mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Viterbi: the highest-scoring tag sequence of each sentence.

        Returns tags (B, T) long with 0 where masked, and their scores (B,) in the wider of
        float32 and the emissions' dtype, not differentiable (:meth:`score` is).
        """
        self._validate(emissions, mask)
        emissions, transitions, start, end = self._inference_inputs(emissions)
        with torch.no_grad():
            return viterbi(emissions, mask, transitions, start, end)

    def constrained_log_partition(
        self, emissions: torch.Tensor, mask: torch.Tensor, allowed_tags: torch.Tensor
    ) -> torch.Tensor:
        """log of the summed score of the paths that use only allowed tags. Returns (B,).

        allowed_tags (B, T, K) bool: which tags each position may take (ignored where masked).
        ``exp(constrained_log_partition - log_partition)`` is the probability that the tag
        sequence falls in that set, e.g. that a given span is labelled exactly so (Culotta &
        McCallum 2004). A set with no path gives -inf.
        """
        if allowed_tags.shape != emissions.shape:
            raise ValueError(
                f"expected allowed_tags of shape {tuple(emissions.shape)}, "
                f"got {tuple(allowed_tags.shape)}"
            )
        return self.log_partition(emissions.masked_fill(~allowed_tags, float("-inf")), mask)

    def decode_nbest(
        self, emissions: torch.Tensor, mask: torch.Tensor, k: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The k highest-scoring distinct tag sequences of each sentence (list Viterbi).

        Returns tags (B, k, T) long with 0 where masked, and scores (B, k) in decreasing order.
        Where a sentence has fewer than k paths (allowed ones, under constraints) the missing
        ones score -inf and their tags are meaningless.
        """
        self._validate(emissions, mask)
        if k < 1:
            raise ValueError(f"expected k >= 1, got {k}")
        emissions, transitions, start, end = self._inference_inputs(emissions)
        with torch.no_grad():
            return _nbest(emissions, mask, transitions, start, end, k)

    def marginals(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """p(y_t = k | x) at every position, by forward-backward. Returns (B, T, K), 0 if masked,
        in the wider of float32 and the emissions' dtype; not differentiable."""
        self._validate(emissions, mask)
        emissions, transitions, start, end = self._inference_inputs(emissions)
        return kernels.marginals(emissions, mask, transitions, start, end)

    # ----------------------------------------------------------------------------------------
    # The two recursions

    def log_alphas(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """alphas[b, t, k]: log-sum of the scores of all prefixes y_1..y_t with y_t = k.

        Returns (B, T, K); past a sentence's end the last value is carried forward. Log space
        throughout (slower than the scaled kernels, exact in any range), for callers that need
        the alphas themselves, such as span confidence.
        """
        transitions, start, _ = self.potentials()
        alpha = start + emissions[:, 0]  # (B, K)
        alphas = [alpha]
        for t in range(1, emissions.size(1)):
            # (B, K from, 1) + (K from, K to) -> sum over from
            step = logsumexp(alpha.unsqueeze(2) + transitions, dim=1) + emissions[:, t]
            alpha = torch.where(mask[:, t].unsqueeze(1), step, alpha)
            alphas.append(alpha)
        return torch.stack(alphas, dim=1)

    def log_betas(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """betas[b, t, k]: log-sum of the scores of all suffixes after position t given y_t = k,
        the end transition included. Returns (B, T, K); meaningless where masked.
        """
        transitions, _, end = self.potentials()
        length = emissions.size(1)
        beta = end.expand(emissions.size(0), -1)  # (B, K)
        betas = [beta]
        for t in range(length - 2, -1, -1):
            # The suffix from t+1 on: (K from, K to) + (B, 1, K to) -> sum over to.
            step = logsumexp(transitions + (emissions[:, t + 1] + beta).unsqueeze(1), dim=2)
            # Where t+1 is padding, position t is the last token: only the end transition remains.
            beta = torch.where(mask[:, t + 1].unsqueeze(1), step, end.expand_as(step))
            betas.append(beta)
        betas.reverse()
        return torch.stack(betas, dim=1)

    def _validate(
        self, emissions: torch.Tensor, mask: torch.Tensor, tags: torch.Tensor | None = None
    ) -> None:
        if emissions.dim() != 3:
            raise ValueError(f"expected emissions of shape (B, T, K), got {tuple(emissions.shape)}")
        if emissions.size(2) != self.num_tags:
            raise ValueError(
                f"expected emissions with {self.num_tags} tags, got {emissions.size(2)}"
            )
        if emissions.size(1) == 0:
            raise ValueError("expected at least one time step, got emissions with T = 0")
        if mask.shape != emissions.shape[:2]:
            raise ValueError(
                f"expected mask of shape {tuple(emissions.shape[:2])}, got {tuple(mask.shape)}"
            )
        if mask.dtype != torch.bool:
            raise ValueError(f"expected a bool mask, got {mask.dtype}")
        if not bool(mask[:, 0].all()):
            raise ValueError("expected every sentence to have at least one token (mask[:, 0] true)")
        if tags is not None and tags.shape != mask.shape:
            raise ValueError(f"expected tags of shape {tuple(mask.shape)}, got {tuple(tags.shape)}")


def _check_reduction(reduction: str) -> None:
    if reduction not in ("none", "sum", "mean", "token_mean"):
        raise ValueError(f"expected reduction in none|sum|mean|token_mean, got {reduction!r}")


def _reduce(losses: torch.Tensor, mask: torch.Tensor, reduction: str) -> torch.Tensor:
    """losses (B,) reduced: 'none', 'sum', 'mean' over sentences or 'token_mean' over tokens."""
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    if reduction == "mean":
        return losses.mean()
    return losses.sum() / mask.sum()


def _last_index(mask: torch.Tensor) -> torch.Tensor:
    """Index of each row's last true position. mask (B, T) -> (B,) long."""
    return mask.sum(1) - 1


def _bool_buffer(value: torch.Tensor | None, shape: tuple[int, ...], name: str) -> torch.Tensor:
    if value is None:
        return torch.ones(shape, dtype=torch.bool)
    value = torch.as_tensor(value, dtype=torch.bool)
    if tuple(value.shape) != shape:
        raise ValueError(f"expected {name} of shape {shape}, got {tuple(value.shape)}")
    return value.clone()


def _nbest(
    emissions: torch.Tensor,
    mask: torch.Tensor,
    transitions: torch.Tensor,
    start: torch.Tensor,
    end: torch.Tensor,
    k: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """List Viterbi: tags (B, k, T) and scores (B, k), as :meth:`CRF.decode_nbest` returns them.
    Torch operations on any device: on the CPU, NumPy's argsort-based version
    (:func:`crftag.crf.posteriors.nbest_arrays`) is about 2x slower than topk."""
    batch_size, length, num_tags = emissions.shape
    # best[b, j, r]: the r-th best score of a prefix ending in tag j.
    best = emissions.new_full((batch_size, num_tags, k), float("-inf"))
    best[:, :, 0] = start + emissions[:, 0]
    # A back-pointer is a flat index  from_tag * k + from_rank  into the previous step.
    identity = torch.arange(num_tags * k, device=emissions.device).view(1, num_tags, k)
    identity = identity.expand(batch_size, -1, -1)
    backpointers = []
    for t in range(1, length):
        # (B, K from, k, 1) + (1, K from, 1, K to) -> (B, K from * k, K to)
        candidates = (best.unsqueeze(3) + transitions.view(1, num_tags, 1, num_tags)).reshape(
            batch_size, num_tags * k, num_tags
        )
        top, index = candidates.topk(k, dim=1)  # (B, k, K to)
        step = top.transpose(1, 2) + emissions[:, t].unsqueeze(2)  # (B, K to, k)
        active = mask[:, t].view(batch_size, 1, 1)
        best = torch.where(active, step, best)
        backpointers.append(torch.where(active, index.transpose(1, 2), identity))
    final = (best + end.view(1, num_tags, 1)).reshape(batch_size, num_tags * k)
    scores, flat = final.topk(k, dim=1)  # (B, k)
    path = [flat // k]
    for pointers in reversed(backpointers):
        flat = pointers.reshape(batch_size, num_tags * k).gather(1, flat)
        path.append(flat // k)
    path.reverse()
    tags = torch.stack(path, dim=2).masked_fill(~mask.unsqueeze(1), 0)  # (B, k, T)
    return tags, scores
