"""Span confidence on NumPy arrays, without torch: the algorithm of
:func:`crftag.inference.confidence.span_confidences` (Culotta & McCallum 2004) for the torch-free
runtime, from the same one forward and one backward pass, in float64.

Shapes as in :mod:`crftag.crf.posteriors`: emissions (B, T, K), lengths (B,) int64, transitions
(K, K) [from, to], start and end (K,), with -inf where the model forbids a move.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from crftag.crf.posteriors import log_alphas_arrays, log_betas_arrays, logsumexp
from crftag.data.schemes import Span, span_pattern

__all__ = ["span_confidences_arrays"]


@dataclass(frozen=True)
class _SpanPaths:
    """The S spans asked about, flattened over the batch, and the fixed tag path of each.

    rows, firsts, lasts (S,): each span's sentence and its first and last position
    first_tags, last_tags (S,): the tag ids its path starts and ends with
    forbidden (S,): the tag that may not follow it (it would extend the span), -1 for none
    possible (S,) bool: whether the model has every tag of its pattern
    path_rows, path_positions, path_tags, path_owner (P,): every token of every path, grouped
        by span in order, with the span number it belongs to
    """

    rows: np.ndarray
    firsts: np.ndarray
    lasts: np.ndarray
    first_tags: np.ndarray
    last_tags: np.ndarray
    forbidden: np.ndarray
    possible: np.ndarray
    path_rows: np.ndarray
    path_positions: np.ndarray
    path_tags: np.ndarray
    path_owner: np.ndarray


def _span_paths(
    flat: Sequence[tuple[int, Span]], scheme: str, tag_index: Mapping[str, int]
) -> _SpanPaths:
    """How ``scheme`` writes each (row, span) of ``flat``, as tag ids; a pattern tag the model
    does not have reads as tag 0 and marks the span impossible."""
    columns: dict[str, list] = {name: [] for name in _SpanPaths.__dataclass_fields__}
    for number, (row, span) in enumerate(flat):
        pattern, forbidden_next = span_pattern(span, scheme)
        ids = [tag_index.get(tag, 0) for tag in pattern]
        columns["rows"].append(row)
        columns["firsts"].append(span.start)
        columns["lasts"].append(span.end - 1)
        columns["first_tags"].append(ids[0])
        columns["last_tags"].append(ids[-1])
        columns["forbidden"].append(tag_index.get(forbidden_next, -1) if forbidden_next else -1)
        columns["possible"].append(all(tag in tag_index for tag in pattern))
        columns["path_rows"] += [row] * len(ids)
        columns["path_positions"] += range(span.start, span.end)
        columns["path_tags"] += ids
        columns["path_owner"] += [number] * len(ids)
    arrays = {name: np.asarray(values, dtype=np.int64) for name, values in columns.items()}
    arrays["possible"] = arrays["possible"].astype(bool)
    return _SpanPaths(**arrays)


def span_confidences_arrays(
    emissions: np.ndarray,
    lengths: np.ndarray,
    transitions: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    spans: Sequence[Sequence[Span]],
    scheme: str,
    tag_index: Mapping[str, int],
) -> list[list[float]]:
    """p(exactly this span | x) for each span of each sentence, as
    :func:`crftag.inference.confidence.span_confidences` gives it.

    ``spans[b]`` are the spans asked about in sentence b, read in the model's tag ``scheme``
    (``bioes`` or ``iob2``) whose tag -> index map is ``tag_index``. A span's constrained sum
    differs from Z only on the span and the token after it: alpha just before the span, the fixed
    path through it, and beta from the token after it, with the tag that would extend the span
    left out. Exact when the transitions forbid what the scheme never writes; a span whose pattern
    uses a tag the model does not have gets 0.
    """
    flat = [(row, span) for row, row_spans in enumerate(spans) for span in row_spans]
    if not flat:
        return [[] for _ in spans]
    emissions = np.asarray(emissions, dtype=np.float64)
    lengths = np.asarray(lengths, dtype=np.int64)
    transitions, start, end = (np.asarray(p, dtype=np.float64) for p in (transitions, start, end))
    alphas = log_alphas_arrays(emissions, lengths, transitions, start, end)  # (B, T, K)
    betas = log_betas_arrays(emissions, lengths, transitions, start, end)  # (B, T, K)
    last = alphas[np.arange(len(lengths)), lengths - 1]  # (B, K)
    log_z = logsumexp(last + end, axis=1)  # (B,)
    paths = _span_paths(flat, scheme, tag_index)

    # The fixed path: its emissions, plus the transitions between its consecutive tags.
    inside = np.zeros(len(flat))
    owner = paths.path_owner
    np.add.at(inside, owner, emissions[paths.path_rows, paths.path_positions, paths.path_tags])
    follows = owner[1:] == owner[:-1]  # consecutive path entries of one span
    moves = transitions[paths.path_tags[:-1], paths.path_tags[1:]]
    np.add.at(inside, owner[1:][follows], moves[follows])

    # Into the span: the start transition at position 0, else all prefixes before it.
    before = alphas[paths.rows, np.maximum(paths.firsts - 1, 0)]  # (S, K)
    entering = logsumexp(before + transitions[:, paths.first_tags].T, axis=1)
    entering = np.where(paths.firsts == 0, start[paths.first_tags], entering)

    leaving = _leaving(paths, emissions, lengths, transitions, end, betas)
    log_probability = entering + inside + leaving - log_z[paths.rows]
    probabilities = np.minimum(np.exp(log_probability), 1.0)
    probabilities = np.where(paths.possible, probabilities, 0.0).tolist()
    result: list[list[float]] = []
    position = 0
    for row_spans in spans:
        result.append(probabilities[position : position + len(row_spans)])
        position += len(row_spans)
    return result


def _leaving(paths: _SpanPaths, emissions, lengths, transitions, end, betas) -> np.ndarray:
    """Out of each span (S,): the end transition at the sentence end, else every continuation
    that does not extend the span. Only spans that go on read the token after them, so padding
    is never read."""
    leaving = end[paths.last_tags]
    goes_on = np.flatnonzero(paths.lasts + 1 < lengths[paths.rows])
    rows, after_position = paths.rows[goes_on], paths.lasts[goes_on] + 1
    after = (
        transitions[paths.last_tags[goes_on]]
        + emissions[rows, after_position]
        + betas[rows, after_position]
    )  # (S going on, K)
    forbidden = paths.forbidden[goes_on]
    blocked = np.flatnonzero(forbidden >= 0)
    after[blocked, forbidden[blocked]] = -np.inf
    leaving[goes_on] = logsumexp(after, axis=1)
    return leaving
