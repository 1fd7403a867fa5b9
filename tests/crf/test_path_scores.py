"""A tag sequence's score in float64, on arrays (crf.posteriors.path_scores_arrays) and in torch
(CRF.score and CRF.log_partition on float64 emissions of a float32 CRF): equal to the sum written
out by hand, to each other, and precise where float32 is not."""

import itertools

import numpy as np
import torch

from crftag.crf.crf import CRF
from crftag.crf.posteriors import log_partition_arrays, path_scores_arrays


def random_potentials(num_tags, seed):
    rng = np.random.default_rng(seed)
    transitions = rng.standard_normal((num_tags, num_tags))
    transitions[rng.random((num_tags, num_tags)) < 0.3] = -np.inf
    transitions[0, 0] = 0.5
    return transitions, rng.standard_normal(num_tags), rng.standard_normal(num_tags)


def by_hand(emissions, transitions, start, end, path):
    total = start[path[0]] + end[path[-1]] + sum(emissions[t, k] for t, k in enumerate(path))
    return total + sum(transitions[a, b] for a, b in itertools.pairwise(path))


def test_every_path_of_a_tiny_batch_scores_as_written_out():
    rng = np.random.default_rng(0)
    transitions, start, end = random_potentials(3, 1)
    emissions = rng.standard_normal((3, 4, 3))
    lengths = np.array([4, 1, 3])
    for b, length in enumerate(lengths):
        paths = [list(p) for p in itertools.product(range(3), repeat=int(length))]
        padded = np.zeros((3, len(paths), 4), dtype=np.int64)
        padded[b, :, :length] = paths
        scores = path_scores_arrays(emissions, lengths, transitions, start, end, padded)[b]
        expected = [by_hand(emissions[b], transitions, start, end, p) for p in paths]
        np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-12)


def test_torch_in_float64_and_the_arrays_agree_on_scores_and_log_z():
    torch.manual_seed(0)
    crf = CRF(5)  # float32 parameters
    emissions = torch.randn(4, 30, 5, dtype=torch.float64) * 20
    lengths = torch.tensor([30, 1, 17, 29])
    mask = torch.arange(30)[None, :] < lengths[:, None]
    tags, _ = crf.decode(emissions.float(), mask)
    potentials = [p.detach().double().numpy() for p in crf.potentials()]
    arrays = path_scores_arrays(emissions.numpy(), lengths.numpy(), *potentials, tags[:, None])
    with torch.no_grad():
        scores = crf.score(emissions, tags, mask)
        log_z = crf.log_partition(emissions, mask)
    assert scores.dtype == log_z.dtype == torch.float64
    np.testing.assert_allclose(scores.numpy(), arrays[:, 0], rtol=0, atol=1e-9)
    expected_log_z = log_partition_arrays(emissions.numpy(), lengths.numpy(), *potentials)
    np.testing.assert_allclose(log_z.numpy(), expected_log_z, rtol=0, atol=1e-9)


def test_float64_keeps_the_digits_a_long_sentence_loses_in_float32():
    """log Z of a long sentence with large scores: float64 emissions of a float32 CRF agree with
    an all-float64 CRF to 1e-9, where float32 emissions drift by far more."""
    torch.manual_seed(1)
    crf = CRF(9)
    wide = CRF(9).double()
    wide.load_state_dict({k: v.double() for k, v in crf.state_dict().items()})
    emissions = torch.randn(2, 400, 9, dtype=torch.float64) * 10 + 5
    mask = torch.ones(2, 400, dtype=torch.bool)
    with torch.no_grad():
        reference = wide.log_partition(emissions, mask)
        assert (crf.log_partition(emissions, mask) - reference).abs().max() < 1e-9
        assert (crf.log_partition(emissions.float(), mask).double() - reference).abs().max() > 1e-6
