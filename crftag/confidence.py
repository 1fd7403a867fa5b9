"""Span confidence by constrained forward-backward (Culotta & McCallum 2004).

The confidence of a span is the probability, under the CRF, that the output labels exactly
these tokens with this label: the summed score of every tag sequence that writes the span's
tags on its tokens and does not extend it at either end, divided by Z. Each span is one row of a
batched constrained forward pass, so a whole batch's spans cost one call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from crftag.crf import CRF
from crftag.schemes import Span, span_pattern

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
    log_z: torch.Tensor | None = None,
) -> list[list[float]]:
    """p(exactly this span | x) for each span of each sentence.

    emissions (B, T, K), mask (B, T); ``spans[b]`` the spans asked about in sentence b, read in
    the model's tag ``scheme`` (``bioes`` or ``iob2``) whose tag -> index map is ``tag_index``.
    ``log_z`` (B,) may be passed when already computed. Exact when the CRF forbids the
    transitions the scheme never makes; without constraints, malformed sequences that also read
    as the span are not counted.
    """
    owners = [row for row, row_spans in enumerate(spans) for _ in row_spans]
    if not owners:
        return [[] for _ in spans]
    if log_z is None:
        log_z = crf.log_partition(emissions, mask)
    length, num_tags = emissions.shape[1:]
    allowed = torch.stack(
        [
            span_allowed_tags(span, length, scheme, tag_index, num_tags)
            for row_spans in spans
            for span in row_spans
        ]
    ).to(emissions.device)  # (S, T, K)
    index = torch.tensor(owners, device=emissions.device)
    constrained = crf.constrained_log_partition(emissions[index], mask[index], allowed)
    probabilities = (constrained - log_z[index]).exp().clamp(max=1.0).tolist()
    result: list[list[float]] = []
    position = 0
    for row_spans in spans:
        result.append(probabilities[position : position + len(row_spans)])
        position += len(row_spans)
    return result
