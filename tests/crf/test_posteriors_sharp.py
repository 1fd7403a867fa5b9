"""log Z and marginals where the scaled recursions underflow: a step whose scores spread by more
than exp's range (about 745 in float64) leaves every path reaching it at 0. The rows where that
happens are computed again in log space; both backends (crf/posteriors.py for the NumPy runtime,
the torch tagger's) against brute-force enumeration in float64."""

import numpy as np
import pytest
import torch

from crftag.crf.crf import CRF
from crftag.crf.posteriors import log_partition_arrays, marginals_arrays
from crftag.inference.tagger import _log_partition_and_marginals
from tests.crf.test_posteriors_arrays import all_paths, forward_backward, log_total, tiny_model

__all__ = ["forward_backward"]  # the fixture, used by name

SHARPNESS = 3000.0  # emissions spread by thousands: far past exp's range in one step


def brute_force(emissions, lengths, transitions, start, end):
    """log Z (B,) and marginals (B, T, K) by enumerating every path of each row."""
    batch_size, length, num_tags = emissions.shape
    log_z = np.empty(batch_size)
    marginals = np.zeros((batch_size, length, num_tags))
    for row in range(batch_size):
        n = lengths[row]
        paths, scores = all_paths(emissions[row, :n], transitions, start, end)
        log_z[row] = log_total(scores)
        for path, score in zip(paths, scores, strict=True):
            for t, tag in enumerate(path):
                marginals[row, t, tag] += np.exp(score - log_z[row])
    return log_z, marginals


def sharp_model(num_tags, seed):
    emissions, lengths, transitions, start, end = tiny_model(num_tags, seed)
    return emissions * SHARPNESS, lengths, transitions, start, end


@pytest.mark.parametrize(("num_tags", "seed"), [(3, 0), (3, 1), (4, 2)])
def test_the_arrays_agree_with_brute_force(forward_backward, num_tags, seed):
    model = sharp_model(num_tags, seed)
    expected_log_z, expected_marginals = brute_force(*model)
    np.testing.assert_allclose(log_partition_arrays(*model), expected_log_z, rtol=1e-12)
    marginals = marginals_arrays(*model)
    np.testing.assert_allclose(marginals, expected_marginals, atol=1e-9)
    real = np.arange(4)[None, :] < model[1][:, None]  # (B, T)
    np.testing.assert_allclose(marginals.sum(axis=2), real.astype(float), atol=1e-9)


@pytest.mark.parametrize(("num_tags", "seed"), [(3, 0), (4, 2)])
def test_the_torch_taggers_agree_with_brute_force(num_tags, seed):
    emissions, lengths, transitions, start, end = sharp_model(num_tags, seed)
    crf = CRF(num_tags)
    with torch.no_grad():
        crf.transitions.copy_(torch.from_numpy(np.nan_to_num(transitions, neginf=-1e4)))
        crf.start_transitions.copy_(torch.from_numpy(np.nan_to_num(start, neginf=-1e4)))
        crf.end_transitions.copy_(torch.from_numpy(np.nan_to_num(end, neginf=-1e4)))
    potentials = [p.detach().double().numpy() for p in crf.potentials()]
    expected_log_z, expected_marginals = brute_force(emissions, lengths, *potentials)
    mask = torch.arange(emissions.shape[1])[None, :] < torch.from_numpy(lengths)[:, None]
    with torch.inference_mode():  # as the tagger calls it
        log_z, marginals = _log_partition_and_marginals(
            crf, torch.from_numpy(emissions), mask, with_marginals=True
        )
    np.testing.assert_allclose(log_z.numpy(), expected_log_z, rtol=1e-12)
    np.testing.assert_allclose(marginals.numpy(), expected_marginals, atol=1e-9)
