"""Span confidence on NumPy arrays against brute-force enumeration of every tag sequence in
float64, and against the torch span_confidences it stands in for."""

import itertools
import warnings

import numpy as np
import pytest
import torch

from crftag.crf.crf import CRF
from crftag.data.schemes import Span, allowed_transitions, to_spans
from crftag.inference.array_confidence import span_confidences_arrays
from crftag.inference.confidence import span_confidences

LABELS = {
    "bioes": ["O", "B-A", "I-A", "E-A", "S-A"],
    "iob2": ["O", "B-A", "I-A", "B-B", "I-B"],
}


def constrained_potentials(scheme, seed, constrained=True):
    """Random (transitions, start, end) over the scheme's labels, -inf where the scheme forbids."""
    rng = np.random.default_rng(seed)
    num_tags = len(LABELS[scheme])
    transitions = rng.standard_normal((num_tags, num_tags))
    start, end = rng.standard_normal(num_tags), rng.standard_normal(num_tags)
    if constrained:
        allowed, allowed_start, allowed_end = map(
            np.array, allowed_transitions(scheme, LABELS[scheme])
        )
        transitions[~allowed], start[~allowed_start], end[~allowed_end] = -np.inf, -np.inf, -np.inf
    return transitions, start, end


def every_span(lengths, labels):
    """Every span of every label, and of a label the model lacks, in every sentence."""
    types = sorted({tag.split("-")[1] for tag in labels if tag != "O"}) + ["Z"]
    return [
        [Span(s, e, label) for s in range(n) for e in range(s + 1, n + 1) for label in types]
        for n in lengths.tolist()
    ]


@pytest.mark.parametrize("scheme", ["bioes", "iob2"])
@pytest.mark.parametrize("seed", range(3))
def test_span_confidence_equals_brute_force(scheme, seed):
    labels = LABELS[scheme]
    tag_index = {tag: i for i, tag in enumerate(labels)}
    transitions, start, end = constrained_potentials(scheme, seed)
    rng = np.random.default_rng(100 + seed)
    lengths = np.array([4, 1, 3])
    emissions = rng.standard_normal((3, lengths.max(), len(labels)))
    spans = every_span(lengths, labels)
    confidences = span_confidences_arrays(
        emissions, lengths, transitions, start, end, spans, scheme, tag_index
    )
    for b, n in enumerate(lengths.tolist()):
        paths = list(itertools.product(range(len(labels)), repeat=n))
        scores = np.array([path_score(emissions[b], transitions, start, end, p) for p in paths])
        probabilities = np.exp(scores - np.logaddexp.reduce(scores))
        chunks = [to_spans([labels[i] for i in path]) for path in paths]
        for span, confidence in zip(spans[b], confidences[b], strict=True):
            expected = sum(
                p for p, found in zip(probabilities, chunks, strict=True) if span in found
            )
            assert confidence == pytest.approx(expected, abs=1e-9), span
            assert 0.0 <= confidence <= 1.0


def path_score(emissions, transitions, start, end, path):
    total = start[path[0]] + end[path[-1]] + sum(emissions[t, tag] for t, tag in enumerate(path))
    return total + sum(transitions[a, b] for a, b in itertools.pairwise(path))


def torch_crf(potentials, dtype):
    """A torch CRF whose potentials() are exactly ``potentials`` (-inf where forbidden)."""
    transitions, start, end = (torch.from_numpy(p) for p in potentials)
    crf = CRF(
        len(start),
        allowed=torch.isfinite(transitions),
        allowed_start=torch.isfinite(start),
        allowed_end=torch.isfinite(end),
    )
    with torch.no_grad():
        crf.transitions.copy_(transitions.nan_to_num(neginf=0.0))
        crf.start_transitions.copy_(start.nan_to_num(neginf=0.0))
        crf.end_transitions.copy_(end.nan_to_num(neginf=0.0))
    return crf.to(dtype)


@pytest.mark.parametrize("scheme", ["bioes", "iob2"])
@pytest.mark.parametrize("constrained", [True, False])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_span_confidence_equals_torch(scheme, constrained, dtype):
    labels = LABELS[scheme]
    tag_index = {tag: i for i, tag in enumerate(labels)}
    crf = torch_crf(constrained_potentials(scheme, 7, constrained), dtype)
    generator = torch.Generator().manual_seed(7)
    lengths = torch.tensor([9, 1, 6, 2, 9])
    mask = torch.arange(9) < lengths[:, None]
    emissions = (2 * torch.randn(5, 9, len(labels), generator=generator)).to(dtype)
    spans = every_span(lengths, labels)
    spans[3] = []  # a sentence nobody asks about
    expected = span_confidences(crf, emissions, mask, spans, scheme, tag_index)
    potentials = (p.detach().numpy() for p in crf.potentials())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = span_confidences_arrays(
            emissions.numpy(), lengths.numpy(), *potentials, spans, scheme, tag_index
        )
    tolerance = 1e-9 if dtype == torch.float64 else 1e-5
    assert [len(row) for row in got] == [len(row) for row in spans]
    for row_got, row_expected in zip(got, expected, strict=True):
        assert row_got == pytest.approx(row_expected, abs=tolerance)


def test_padding_is_never_read():
    transitions, start, end = constrained_potentials("bioes", 3)
    rng = np.random.default_rng(3)
    lengths = np.array([5, 2])
    emissions = rng.standard_normal((2, 5, len(LABELS["bioes"])))
    spans = every_span(lengths, LABELS["bioes"])
    arguments = (
        transitions,
        start,
        end,
        spans,
        "bioes",
        {t: i for i, t in enumerate(LABELS["bioes"])},
    )
    clean = span_confidences_arrays(emissions, lengths, *arguments)
    emissions[1, 2:] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert span_confidences_arrays(emissions, lengths, *arguments) == clean


def test_no_spans_gives_empty_rows():
    transitions, start, end = constrained_potentials("iob2", 0)
    emissions = np.zeros((2, 3, len(LABELS["iob2"])))
    confidences = span_confidences_arrays(
        emissions, np.array([3, 2]), transitions, start, end, [[], []], "iob2", {}
    )
    assert confidences == [[], []]
