"""Span confidence by constrained forward-backward (Culotta & McCallum 2004).

The confidence of a span is the probability, under the CRF, that the output labels exactly
these tokens with this label: the summed score of every tag sequence that writes the span's
tags on its tokens and does not extend it at either end, divided by Z. Each span is one row of a
batched constrained forward pass, so a whole batch's spans cost one call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from crftag.crf.crf import CRF
from crftag.data.schemes import Span, span_pattern

__all__ = ["span_allowed_tags", "span_confidences"]


def span_allowed_tags(
    span: Span, length: int, scheme: str, tag_index: Mapping[str, int], num_tags: int
) -> torch.Tensor:
    """(T, K) bool: the tags each position may take in a sequence that contains exactly ``span``.

    A pattern tag the model does not have (never seen in training) allows nothing, so the span
    gets probability 0.
    """
    allowed = torch.ones(length, num_tags, dtype=torch.bool)
    pattern, forbidden_next = span_pattern(span, scheme)
    allowed[span.start : span.end] = False
    for offset, tag in enumerate(pattern):
        if tag in tag_index:
            allowed[span.start + offset, tag_index[tag]] = True
    if forbidden_next in tag_index and span.end < length:
        allowed[span.end, tag_index[forbidden_next]] = False
    return allowed


def span_confidences(
    crf: CRF,
    emissions: torch.Tensor,
    mask: torch.Tensor,
    spans: Sequence[Sequence[Span]],
    scheme: str,
    tag_index: Mapping[str, int],
) -> list[list[float]]:
    """p(exactly this span | x) for each span of each sentence.

    emissions (B, T, K), mask (B, T); ``spans[b]`` the spans asked about in sentence b, read in
    the model's tag ``scheme`` (``bioes`` or ``iob2``) whose tag -> index map is ``tag_index``.

    The constrained sum of :func:`span_allowed_tags` differs from Z only on the span and the token
    after it, so it is computed from one forward and one backward pass shared by all spans:
    alpha just before the span, the fixed path through it, and beta from the token after it.
    That costs O(span length + K) a span instead of a forward pass each. Sums run in float64 so
    that long sentences keep their precision. Exact when the CRF forbids the transitions the
    scheme never makes; without constraints, malformed sequences that also read as the span are
    not counted.
    """
    flat = [(row, span) for row, row_spans in enumerate(spans) for span in row_spans]
    if not flat:
        return [[] for _ in spans]
    device = emissions.device
    emissions = emissions.double()
    transitions, start, end = (p.double() for p in crf.potentials())
    alphas = crf.log_alphas(emissions, mask)  # (B, T, K)
    betas = crf.log_betas(emissions, mask)  # (B, T, K)
    lengths = mask.sum(1)  # (B,)
    last = alphas.gather(1, (lengths - 1).view(-1, 1, 1).expand(-1, 1, alphas.size(2))).squeeze(1)
    log_z = torch.logsumexp(last + end, dim=1)  # (B,)

    # Per span: its sentence, first and last position, and the tag ids of its fixed path.
    rows, firsts, lasts, forbidden = [], [], [], []
    path_rows, path_positions, path_tags, path_owner = [], [], [], []
    possible = []
    for number, (row, span) in enumerate(flat):
        pattern, forbidden_next = span_pattern(span, scheme)
        rows.append(row)
        firsts.append(span.start)
        lasts.append(span.end - 1)
        forbidden.append(tag_index.get(forbidden_next, -1) if forbidden_next else -1)
        possible.append(all(tag in tag_index for tag in pattern))
        for offset, tag in enumerate(pattern):
            path_rows.append(row)
            path_positions.append(span.start + offset)
            path_tags.append(tag_index.get(tag, 0))
            path_owner.append(number)
    as_long = {"dtype": torch.long, "device": device}
    rows_t, firsts_t, lasts_t = (torch.tensor(x, **as_long) for x in (rows, firsts, lasts))
    path_rows_t, path_positions_t, path_tags_t, owner_t = (
        torch.tensor(x, **as_long) for x in (path_rows, path_positions, path_tags, path_owner)
    )
    count = len(flat)

    # The fixed path: its emissions, plus the transitions between its consecutive tags.
    inside = torch.zeros(count, dtype=torch.float64, device=device)
    inside.index_add_(0, owner_t, emissions[path_rows_t, path_positions_t, path_tags_t])
    follows = owner_t[1:] == owner_t[:-1]  # consecutive path entries of one span
    moves = transitions[path_tags_t[:-1], path_tags_t[1:]]
    inside.index_add_(0, owner_t[1:][follows], moves[follows])
    first_tags = path_tags_t[torch.searchsorted(owner_t, torch.arange(count, device=device))]
    last_tags = path_tags_t[
        torch.searchsorted(owner_t, torch.arange(count, device=device), right=True) - 1
    ]

    # Into the span: start transition at position 0, else all prefixes before it.
    before = alphas[rows_t, (firsts_t - 1).clamp(min=0)]  # (S, K)
    entering = torch.logsumexp(before + transitions[:, first_tags].T, dim=1)
    entering = torch.where(firsts_t == 0, start[first_tags], entering)

    # Out of the span: end transition at the sentence end, else every continuation that does
    # not extend the span.
    after_position = (lasts_t + 1).clamp(max=emissions.size(1) - 1)
    after = (
        transitions[last_tags] + emissions[rows_t, after_position] + betas[rows_t, after_position]
    )  # (S, K)
    forbidden_t = torch.tensor(forbidden, **as_long)
    blocked = torch.zeros_like(after, dtype=torch.bool)
    has_forbidden = forbidden_t >= 0
    blocked[has_forbidden, forbidden_t[has_forbidden]] = True
    leaving = torch.logsumexp(after.masked_fill(blocked, float("-inf")), dim=1)
    leaving = torch.where(lasts_t + 1 >= lengths[rows_t], end[last_tags], leaving)

    log_probability = entering + inside + leaving - log_z[rows_t]
    probabilities = log_probability.exp().clamp(max=1.0)
    probabilities = torch.where(
        torch.tensor(possible, device=device), probabilities, torch.zeros_like(probabilities)
    ).tolist()
    result: list[list[float]] = []
    position = 0
    for row_spans in spans:
        result.append(probabilities[position : position + len(row_spans)])
        position += len(row_spans)
    return result
