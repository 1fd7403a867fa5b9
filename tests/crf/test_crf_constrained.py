"""Constrained decoding, constrained partition, span confidence and n-best against brute-force
enumeration of every tag sequence, on random tiny CRFs in float64."""

import itertools

import pytest
import torch

from crftag.crf.crf import CRF
from crftag.data.schemes import Span, allowed_transitions, to_spans
from crftag.inference.confidence import span_confidences

LABELS = {
    "bioes": ["O", "B-A", "I-A", "E-A", "S-A"],
    "iob2": ["O", "B-A", "I-A", "B-B", "I-B"],
}


def random_crf(labels, scheme, seed):
    generator = torch.Generator().manual_seed(seed)
    constraints = allowed_transitions(scheme, labels) if scheme else None
    kwargs = {}
    if constraints:
        kwargs = dict(
            zip(
                ("allowed", "allowed_start", "allowed_end"),
                map(torch.tensor, constraints),
                strict=True,
            )
        )
    crf = CRF(len(labels), **kwargs).double()
    with torch.no_grad():
        for parameter in crf.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator, dtype=torch.float64))
    return crf


def random_batch(batch, length, num_tags, seed):
    generator = torch.Generator().manual_seed(seed)
    emissions = torch.randn(batch, length, num_tags, generator=generator, dtype=torch.float64)
    lengths = torch.randint(1, length + 1, (batch,), generator=generator)
    lengths[0] = length
    mask = torch.arange(length).unsqueeze(0) < lengths.unsqueeze(1)
    return emissions, mask, lengths


@torch.no_grad()
def all_paths(crf, emissions):
    """Every path of one sentence (T, K) with its score (-inf where forbidden)."""
    transitions, start, end = crf.potentials()
    length, num_tags = emissions.shape
    paths = list(itertools.product(range(num_tags), repeat=length))
    scores = []
    for path in paths:
        total = start[path[0]] + end[path[-1]] + emissions[torch.arange(length), list(path)].sum()
        for a, b in itertools.pairwise(path):
            total = total + transitions[a, b]
        scores.append(total)
    return paths, torch.stack(scores)


CASES = [(scheme, seed) for scheme in ("bioes", "iob2") for seed in range(4)]


@pytest.mark.parametrize("scheme,seed", CASES)
def test_constrained_crf_sums_and_maximises_over_allowed_paths_only(scheme, seed):
    labels = LABELS[scheme]
    crf = random_crf(labels, scheme, seed)
    emissions, mask, lengths = random_batch(4, 5, len(labels), seed)
    log_z = crf.log_partition(emissions, mask)
    tags, best = crf.decode(emissions, mask)
    for b in range(4):
        n = int(lengths[b])
        paths, scores = all_paths(crf, emissions[b, :n])
        well_formed = torch.tensor([_well_formed(p, labels, scheme) for p in paths])
        # Exactly the well-formed sequences have a finite score.
        assert torch.equal(torch.isfinite(scores), well_formed)
        torch.testing.assert_close(log_z[b], torch.logsumexp(scores, 0))
        assert tags[b, :n].tolist() == list(paths[int(scores.argmax())])
        torch.testing.assert_close(best[b], scores.max())


def _well_formed(path, labels, scheme):
    from crftag.data.schemes import convert

    tags = [labels[i] for i in path]
    return convert(tags, scheme) == tags


@pytest.mark.parametrize("scheme,seed", CASES)
def test_span_confidence_equals_brute_force(scheme, seed):
    labels = LABELS[scheme]
    tag_index = {tag: i for i, tag in enumerate(labels)}
    crf = random_crf(labels, scheme, seed)
    emissions, mask, lengths = random_batch(3, 4, len(labels), 10 + seed)
    # Ask about every possible span of every label in every sentence.
    spans = [
        [
            Span(s, e, label)
            for s in range(int(n))
            for e in range(s + 1, int(n) + 1)
            for label in sorted({tag.split("-")[1] for tag in labels if tag != "O"})
        ]
        for n in lengths
    ]
    confidences = span_confidences(crf, emissions, mask, spans, scheme, tag_index)
    for b in range(3):
        n = int(lengths[b])
        paths, scores = all_paths(crf, emissions[b, :n])
        probabilities = torch.softmax(scores, 0)
        for span, confidence in zip(spans[b], confidences[b], strict=True):
            expected = sum(
                float(p)
                for path, p in zip(paths, probabilities, strict=True)
                if span in to_spans([labels[i] for i in path])
            )
            assert confidence == pytest.approx(expected, abs=1e-5), span
            assert 0.0 <= confidence <= 1.0


@pytest.mark.parametrize("scheme", [None, "bioes", "iob2"])
@pytest.mark.parametrize("seed", range(3))
def test_nbest_equals_brute_force(scheme, seed):
    labels = LABELS[scheme or "bioes"]
    crf = random_crf(labels, scheme, seed)
    emissions, mask, lengths = random_batch(4, 4, len(labels), 20 + seed)
    k = 7
    tags, scores = crf.decode_nbest(emissions, mask, k)
    assert tags.shape == (4, k, 4) and scores.shape == (4, k)
    for b in range(4):
        n = int(lengths[b])
        paths, all_scores = all_paths(crf, emissions[b, :n])
        ranked = sorted(zip(all_scores.tolist(), paths, strict=True), reverse=True)
        finite = [item for item in ranked if item[0] != float("-inf")]
        expected_scores = [s for s, _ in finite[:k]]
        got = scores[b].tolist()
        assert got[: len(expected_scores)] == pytest.approx(expected_scores, abs=1e-9)
        assert all(s == float("-inf") for s in got[len(expected_scores) :])
        got_paths = [tuple(tags[b, r, :n].tolist()) for r in range(len(expected_scores))]
        assert len(set(got_paths)) == len(got_paths)  # distinct
        for path, score in zip(got_paths, expected_scores, strict=True):
            assert all_scores[paths.index(path)].item() == pytest.approx(score, abs=1e-9)
        assert tags[b, :, n:].eq(0).all()


def test_nbest_first_is_viterbi():
    crf = random_crf(LABELS["bioes"], "bioes", 5)
    emissions, mask, _ = random_batch(8, 9, 5, 5)
    tags, scores = crf.decode(emissions, mask)
    top_tags, top_scores = crf.decode_nbest(emissions, mask, 3)
    assert torch.equal(top_tags[:, 0], tags)
    torch.testing.assert_close(top_scores[:, 0], scores)
    assert (top_scores[:, :-1] >= top_scores[:, 1:]).all()


@pytest.mark.parametrize("scheme", ["bioes", "iob2"])
def test_span_confidence_equals_the_constrained_partition(scheme):
    """The shared-pass formula against the direct definition: a constrained forward pass with
    the span's tags fixed (span_allowed_tags), on longer random sentences."""
    from crftag.inference.confidence import span_allowed_tags

    labels = LABELS[scheme]
    tag_index = {tag: i for i, tag in enumerate(labels)}
    crf = random_crf(labels, scheme, 8)
    emissions, mask, lengths = random_batch(4, 30, len(labels), 8)
    generator = torch.Generator().manual_seed(2)
    spans = []
    for n in lengths.tolist():
        starts = torch.randint(0, n, (6,), generator=generator).tolist()
        spans.append([Span(s, min(n, s + 1 + (s * 7) % 4), "A") for s in starts])
    confidences = span_confidences(crf, emissions, mask, spans, scheme, tag_index)
    log_z = crf.log_partition(emissions, mask)
    for b, row_spans in enumerate(spans):
        for span, confidence in zip(row_spans, confidences[b], strict=True):
            allowed = span_allowed_tags(span, 30, scheme, tag_index, len(labels)).unsqueeze(0)
            direct = crf.constrained_log_partition(emissions[b : b + 1], mask[b : b + 1], allowed)
            expected = float((direct - log_z[b]).exp().detach())
            assert confidence == pytest.approx(expected, abs=1e-9)


def test_constrained_log_partition_equals_brute_force():
    labels = LABELS["iob2"]
    crf = random_crf(labels, None, 3)
    emissions, mask, lengths = random_batch(3, 4, 5, 3)
    generator = torch.Generator().manual_seed(1)
    allowed = torch.rand(3, 4, 5, generator=generator) > 0.4
    allowed[:, :, 0] = True  # keep at least one path
    result = crf.constrained_log_partition(emissions, mask, allowed)
    for b in range(3):
        n = int(lengths[b])
        paths, scores = all_paths(crf, emissions[b, :n])
        keep = torch.tensor([all(allowed[b, t, tag] for t, tag in enumerate(p)) for p in paths])
        torch.testing.assert_close(result[b], torch.logsumexp(scores[keep], 0))
