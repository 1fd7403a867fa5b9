"""crftag.crf.posteriors against brute-force enumeration of every tag sequence in float64, and
against the torch CRF it stands in for, on the compiled kernel and on the NumPy fallback."""

import itertools
import warnings

import numpy as np
import pytest
import torch

from crftag.crf.crf import CRF
from crftag.crf.posteriors import (
    log_alphas_arrays,
    log_betas_arrays,
    log_partition_arrays,
    marginals_arrays,
    nbest_arrays,
)
from crftag.data.schemes import allowed_transitions

LABELS = ["O", "B-A", "I-A", "E-A", "S-A", "B-B", "I-B", "E-B", "S-B"]
IOB2_LABELS = ["O", "B-A", "I-A", "B-B", "I-B"]


@pytest.fixture(params=["compiled", "numpy"])
def forward_backward(request, choose_kernel):
    """Run a test with the compiled forward-backward (skipped where it was not built, unless
    CRFTAG_REQUIRE_COMPILED is set) and with the NumPy fallback."""
    return choose_kernel(request.param)


def tiny_model(num_tags, seed):
    """A batch of four rows of lengths 4, 1, 3, 2 and potentials with some moves, a first tag and
    a last tag forbidden (-inf); tag 0 may always start, follow itself and end."""
    rng = np.random.default_rng(seed)
    emissions = rng.standard_normal((4, 4, num_tags))
    lengths = np.array([4, 1, 3, 2])
    transitions = rng.standard_normal((num_tags, num_tags))
    transitions[rng.random((num_tags, num_tags)) < 0.3] = -np.inf
    transitions[0, 0] = 0.5
    start, end = rng.standard_normal(num_tags), rng.standard_normal(num_tags)
    start[num_tags - 1] = -np.inf
    end[1] = -np.inf
    return emissions, lengths, transitions, start, end


def chain_score(emissions, transitions, path, first=None, last=None):
    """The emissions of ``path`` at positions 0.. plus its moves, plus ``first[path[0]]`` and
    ``last[path[-1]]`` where given."""
    total = sum(emissions[t, tag] for t, tag in enumerate(path))
    total += sum(transitions[a, b] for a, b in itertools.pairwise(path))
    if first is not None:
        total += first[path[0]]
    if last is not None:
        total += last[path[-1]]
    return total


def all_paths(emissions, transitions, start, end):
    """Every path of one sentence (n, K) and its score (-inf where forbidden)."""
    length, num_tags = emissions.shape
    paths = list(itertools.product(range(num_tags), repeat=length))
    scores = np.array([chain_score(emissions, transitions, p, start, end) for p in paths])
    return paths, scores


def log_total(scores):
    return np.logaddexp.reduce(np.asarray(scores, dtype=np.float64))


CASES = [(num_tags, seed) for num_tags in (3, 4) for seed in range(3)]


@pytest.mark.parametrize("num_tags,seed", CASES)
def test_log_partition_and_marginals_equal_brute_force(num_tags, seed, forward_backward):
    emissions, lengths, transitions, start, end = tiny_model(num_tags, seed)
    log_z = log_partition_arrays(emissions, lengths, transitions, start, end)
    marginals = marginals_arrays(emissions, lengths, transitions, start, end)
    assert log_z.dtype == marginals.dtype == np.float64
    for b, n in enumerate(lengths):
        paths, scores = all_paths(emissions[b, :n], transitions, start, end)
        assert log_z[b] == pytest.approx(log_total(scores), abs=1e-9)
        probabilities = np.exp(scores - log_total(scores))
        expected = np.zeros((n, num_tags))
        for path, probability in zip(paths, probabilities, strict=True):
            expected[np.arange(n), path] += probability
        np.testing.assert_allclose(marginals[b, :n], expected, rtol=0, atol=1e-9)
        np.testing.assert_allclose(marginals[b, :n].sum(1), 1.0, rtol=0, atol=1e-9)
        assert not marginals[b, n:].any()


@pytest.mark.parametrize("num_tags,seed", CASES)
def test_log_alphas_and_betas_equal_brute_force(num_tags, seed):
    emissions, lengths, transitions, start, end = tiny_model(num_tags, seed)
    alphas = log_alphas_arrays(emissions, lengths, transitions, start, end)
    betas = log_betas_arrays(emissions, lengths, transitions, start, end)
    tags = range(num_tags)
    for b, n in enumerate(lengths):
        row = emissions[b]
        for t in range(n):
            for k in tags:
                prefixes = [p + (k,) for p in itertools.product(tags, repeat=t)]
                alpha = log_total([chain_score(row, transitions, p, first=start) for p in prefixes])
                assert alphas[b, t, k] == pytest.approx(alpha, abs=1e-9)
                # A suffix's score counts the move into it and its emissions, not position t's.
                suffixes = [(k,) + p for p in itertools.product(tags, repeat=n - 1 - t)]
                beta = log_total(
                    [chain_score(row[t:], transitions, p, last=end) - row[t, k] for p in suffixes]
                )
                assert betas[b, t, k] == pytest.approx(beta, abs=1e-9)
        # Past the end: the last alphas carried forward; from the last token on, the end scores.
        np.testing.assert_array_equal(
            alphas[b, n:], np.broadcast_to(alphas[b, n - 1], (4 - n, num_tags))
        )
        np.testing.assert_array_equal(betas[b, n - 1 :], np.broadcast_to(end, (5 - n, num_tags)))


@pytest.mark.parametrize("num_tags,seed", CASES)
def test_nbest_equals_brute_force(num_tags, seed):
    emissions, lengths, transitions, start, end = tiny_model(num_tags, seed)
    count = 7  # more than the length-1 row has paths
    paths, scores = nbest_arrays(emissions, lengths, transitions, start, end, count)
    assert paths.shape == (4, count, 4) and paths.dtype == np.int64 and scores.shape == (4, count)
    for b, n in enumerate(lengths):
        every_path, every_score = all_paths(emissions[b, :n], transitions, start, end)
        ranked = sorted(zip(every_score.tolist(), every_path, strict=True), reverse=True)
        finite = [item for item in ranked if item[0] != -np.inf][:count]
        found = len(finite)
        assert scores[b, :found] == pytest.approx([s for s, _ in finite], abs=1e-9)
        assert [tuple(p[:n]) for p in paths[b, :found].tolist()] == [p for _, p in finite]
        # Missing paths score -inf and are all 0; so is everything past the end.
        assert np.isneginf(scores[b, found:]).all()
        assert not paths[b, found:].any() and not paths[b, :, n:].any()


def torch_model(scheme, dtype, seed):
    """A torch CRF with random parameters, constrained by ``scheme`` unless it is None, and a
    batch of masked rows (a full one, a one-token one) whose padding holds random numbers."""
    labels = IOB2_LABELS if scheme == "iob2" else LABELS
    generator = torch.Generator().manual_seed(seed)
    constraints = {}
    if scheme is not None:
        names = ("allowed", "allowed_start", "allowed_end")
        values = map(torch.tensor, allowed_transitions(scheme, labels))
        constraints = dict(zip(names, values, strict=True))
    crf = CRF(len(labels), **constraints)
    with torch.no_grad():
        for parameter in crf.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator))
    crf = crf.to(dtype)
    emissions = (3 * torch.randn(6, 8, len(labels), generator=generator)).to(dtype)
    lengths = torch.tensor([8, 1, 5, 8, 2, 7])
    mask = torch.arange(8) < lengths[:, None]
    return crf, emissions, mask, lengths


def as_arrays(crf, emissions, lengths):
    potentials = (p.detach().numpy() for p in crf.potentials())
    return (emissions.numpy(), lengths.numpy(), *potentials)


def assert_close_with_infinities(actual, expected, tolerance):
    """Equal within ``tolerance`` (absolute and relative), -inf exactly where expected has it."""
    expected = expected.detach().double().numpy()
    np.testing.assert_array_equal(np.isneginf(actual), np.isneginf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(actual[finite], expected[finite], rtol=tolerance, atol=tolerance)


TORCH_CASES = [
    (scheme, dtype, seed)
    for scheme in (None, "bioes", "iob2")
    for dtype in (torch.float64, torch.float32)
    for seed in range(2)
]


@pytest.mark.parametrize("scheme,dtype,seed", TORCH_CASES)
def test_equal_to_the_torch_crf(scheme, dtype, seed, forward_backward):
    crf, emissions, mask, lengths = torch_model(scheme, dtype, seed)
    arrays = as_arrays(crf, emissions, lengths)
    tolerance = 1e-9 if dtype == torch.float64 else 1e-5
    with torch.no_grad():
        expected = {
            log_alphas_arrays: crf.log_alphas(emissions, mask),
            log_betas_arrays: crf.log_betas(emissions, mask),
            log_partition_arrays: crf.log_partition(emissions, mask),
            marginals_arrays: crf.marginals(emissions, mask),
        }
        expected_paths, expected_scores = crf.decode_nbest(emissions, mask, 5)
    for function, value in expected.items():
        assert_close_with_infinities(function(*arrays), value, tolerance)
    paths, scores = nbest_arrays(*arrays, 5)
    # The same additions in the same order: bit-identical scores, in the emissions' dtype.
    assert scores.dtype == arrays[0].dtype
    np.testing.assert_array_equal(scores, expected_scores.numpy())
    found = np.isfinite(scores)
    np.testing.assert_array_equal(paths[found], expected_paths.numpy()[found])


@pytest.mark.parametrize("scheme", ["bioes", "iob2"])
def test_padding_and_forbidden_moves_give_no_nan_and_no_warnings(scheme, forward_backward):
    crf, emissions, mask, lengths = torch_model(scheme, torch.float64, 0)
    clean = as_arrays(crf, emissions, lengths)
    garbage = clean[0].copy()
    garbage[~mask.numpy()] = np.array([np.nan, np.inf, -np.inf])[np.arange(garbage.shape[2]) % 3]
    functions = (log_alphas_arrays, log_betas_arrays, log_partition_arrays, marginals_arrays)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for function in functions:
            result = function(garbage, *clean[1:])
            assert not np.isnan(result).any()
            np.testing.assert_array_equal(result, function(*clean))
        paths, scores = nbest_arrays(garbage, *clean[1:], 4)
    expected_paths, expected_scores = nbest_arrays(*clean, 4)
    np.testing.assert_array_equal(scores, expected_scores)
    np.testing.assert_array_equal(paths, expected_paths)


def test_one_token_sentences(forward_backward):
    rng = np.random.default_rng(0)
    emissions = rng.standard_normal((3, 1, 4)).astype(np.float32)
    transitions = rng.standard_normal((4, 4))
    start, end = rng.standard_normal(4), rng.standard_normal(4)
    start[1] = end[2] = -np.inf
    lengths = np.ones(3, dtype=np.int64)
    scores = emissions[:, 0].astype(np.float64) + start + end  # (B, K): one path per tag
    log_z = log_total(scores.T)  # reduces over the tags
    np.testing.assert_allclose(
        log_partition_arrays(emissions, lengths, transitions, start, end), log_z, atol=1e-9
    )
    marginals = marginals_arrays(emissions, lengths, transitions, start, end)
    np.testing.assert_allclose(marginals[:, 0], np.exp(scores - log_z[:, None]), atol=1e-9)
    paths, best = nbest_arrays(emissions, lengths, transitions, start, end, 5)
    np.testing.assert_array_equal(paths[:, :2, 0], np.argsort(-scores, axis=1)[:, :2])
    assert np.isneginf(best[:, 2:]).all() and not paths[:, 2:].any()


def test_identities_that_cannot_be_faked(forward_backward):
    """With all-zero potentials every path scores 0: log Z = n log K, marginals are 1/K, and
    the n best paths all score 0."""
    emissions = np.zeros((2, 5, 3))
    lengths = np.array([5, 3])
    zeros = np.zeros((3, 3)), np.zeros(3), np.zeros(3)
    log_z = log_partition_arrays(emissions, lengths, *zeros)
    np.testing.assert_allclose(log_z, lengths * np.log(3), atol=1e-12)
    marginals = marginals_arrays(emissions, lengths, *zeros)
    np.testing.assert_allclose(marginals[0], 1 / 3, atol=1e-12)
    _, scores = nbest_arrays(emissions, lengths, *zeros, 4)
    assert not scores.any()


def test_input_errors_are_value_errors():
    emissions, lengths, transitions, start, end = tiny_model(3, 0)
    with pytest.raises(ValueError, match="expected every length in 1..4"):
        log_alphas_arrays(emissions, np.array([4, 0, 1, 1]), transitions, start, end)
    with pytest.raises(ValueError, match="expected transitions of shape"):
        marginals_arrays(emissions, lengths, transitions[:2], start, end)
    with pytest.raises(ValueError, match="expected n >= 1"):
        nbest_arrays(emissions, lengths, transitions, start, end, 0)
