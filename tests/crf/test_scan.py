"""The parallel scan (crftag/crf/scan.py) against brute-force enumeration under constraints,
against the sequential recursions on long sentences, and its choice rule. The brute-force
oracles of tests/crf/test_crf.py and test_partial_labels.py also run through the scan (their
"scan" variants)."""

import itertools
import types

import pytest
import torch

from crftag.crf import kernels, scan
from crftag.crf.viterbi import viterbi


def random_problem(batch_size, length, num_tags, seed, dtype=torch.float64, forbidden=0.0):
    """Emissions, a prefix mask with one full row, and potentials with a share of -inf."""
    generator = torch.Generator().manual_seed(seed)
    emissions = torch.randn(batch_size, length, num_tags, generator=generator, dtype=dtype)
    lengths = torch.randint(1, length + 1, (batch_size,), generator=generator)
    lengths[0] = length
    mask = torch.arange(length).unsqueeze(0) < lengths.unsqueeze(1)
    transitions = torch.randn(num_tags, num_tags, generator=generator, dtype=dtype)
    banned = torch.rand(num_tags, num_tags, generator=generator) < forbidden
    transitions = transitions.masked_fill(banned, float("-inf"))
    start = torch.randn(num_tags, generator=generator, dtype=dtype)
    end = torch.randn(num_tags, generator=generator, dtype=dtype)
    return emissions, mask, lengths, transitions, start, end


def brute_force(emissions, transitions, start, end):
    """Every path of one sentence (T, K) and its score."""
    length, num_tags = emissions.shape
    paths = list(itertools.product(range(num_tags), repeat=length))
    scores = []
    for path in paths:
        total = start[path[0]] + end[path[-1]] + sum(emissions[t, k] for t, k in enumerate(path))
        scores.append(total + sum(transitions[a, b] for a, b in itertools.pairwise(path)))
    return paths, torch.stack(scores)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("length", [1, 2, 3, 5])
def test_scan_equals_brute_force_with_forbidden_transitions(seed, length):
    emissions, mask, lengths, transitions, start, end = random_problem(
        4, length, 3, seed, forbidden=0.3
    )
    log_z = scan.log_partition(emissions, mask, transitions, start, end)
    tags, best = scan.viterbi(emissions, mask, transitions, start, end)
    posterior = scan.marginals(emissions, mask, transitions, start, end)
    for b in range(4):
        n = int(lengths[b])
        paths, scores = brute_force(emissions[b, :n], transitions, start, end)
        torch.testing.assert_close(log_z[b], torch.logsumexp(scores, 0), atol=1e-10, rtol=0)
        torch.testing.assert_close(best[b], scores.max(), atol=1e-10, rtol=0)
        if torch.isfinite(scores.max()):
            assert tags[b, :n].tolist() == list(paths[int(scores.argmax())])
            probabilities = (scores - torch.logsumexp(scores, 0)).exp()
            for t in range(n):
                expected = [probabilities[[p[t] == k for p in paths]].sum() for k in range(3)]
                torch.testing.assert_close(
                    posterior[b, t], torch.stack(expected), atol=1e-10, rtol=0
                )
        assert tags[b, n:].eq(0).all() and posterior[b, n:].eq(0).all()


def test_gradients_through_forbidden_transitions_are_finite_and_match_the_loop():
    emissions, mask, _, transitions, start, end = random_problem(5, 7, 4, 3, forbidden=0.4)
    inputs = [tensor.clone().requires_grad_() for tensor in (emissions, transitions, start, end)]
    for_loop = [tensor.clone().requires_grad_() for tensor in (emissions, transitions, start, end)]
    scan.log_partition(inputs[0], mask, *inputs[1:]).sum().backward()
    kernels._LogPartition.apply(for_loop[0], mask, *for_loop[1:]).sum().backward()
    for ours, reference in zip(inputs, for_loop, strict=True):
        assert torch.isfinite(ours.grad).all()
        torch.testing.assert_close(ours.grad, reference.grad, atol=1e-10, rtol=0)


@pytest.mark.parametrize("length", [129, 500])
def test_long_sentences_agree_with_the_sequential_recursions(length):
    emissions, mask, _, transitions, start, end = random_problem(6, length, 9, length)
    emissions = emissions * 3  # log Z in the thousands, where float rounding would show
    with torch.no_grad():
        expected_log_z = kernels._LogPartition.apply(emissions, mask, transitions, start, end)
    torch.testing.assert_close(
        scan.log_partition(emissions, mask, transitions, start, end), expected_log_z
    )
    tags, scores = scan.viterbi(emissions, mask, transitions, start, end)
    # The CPU's own sequential Viterbi (compiled, or NumPy where that was not built): the same
    # paths as the torch loop (tests/crf/test_crf.py checks all three against brute force), at
    # a fraction of its per-step cost.
    expected_tags, expected_scores = viterbi(emissions, mask, transitions, start, end)
    assert torch.equal(tags, expected_tags)
    torch.testing.assert_close(scores, expected_scores)


def test_float32_scan_stays_close_to_float64():
    emissions, mask, _, transitions, start, end = random_problem(4, 300, 9, 7)
    exact = scan.log_partition(emissions, mask, transitions, start, end)
    single = scan.log_partition(
        *(tensor.float() for tensor in (emissions,)),
        mask,
        transitions.float(),
        start.float(),
        end.float(),
    )
    assert ((single.double() - exact).abs() / exact.abs()).max() < 1e-6


def test_the_scan_is_chosen_for_long_sentences_on_a_gpu_only():
    def emissions(batch_size, length, num_tags, device):
        return types.SimpleNamespace(
            shape=(batch_size, length, num_tags), device=torch.device(device)
        )

    assert scan.preferred(emissions(32, 500, 9, "cuda"))
    assert not scan.preferred(emissions(32, 500, 9, "cpu"))
    assert not scan.preferred(emissions(32, scan.MIN_SCAN_LENGTH - 1, 9, "cuda"))
    assert scan.preferred(emissions(32, scan.MIN_DECODE_SCAN_LENGTH, 9, "cuda"), decoding=True)
    short = emissions(32, scan.MIN_DECODE_SCAN_LENGTH - 1, 9, "cuda")
    assert scan.preferred(short) and not scan.preferred(short, decoding=True)
    # A level too wide for memory runs the loop, however long the sentences.
    assert not scan.preferred(emissions(512, 5000, 50, "cuda"))
    assert not scan.preferred(torch.zeros(32, 500, 9))


@pytest.mark.parametrize("context", [torch.inference_mode, torch.no_grad])
def test_decoding_and_marginals_work_where_a_tagger_runs(context):
    """A tagger decodes under inference mode, whose tensors autograd cannot record: the scan's
    Viterbi and marginals, which are gradients, must still answer, and answer alike."""
    emissions, mask, _, transitions, start, end = random_problem(3, 40, 5, 11)
    expected_tags, expected_scores = scan.viterbi(emissions, mask, transitions, start, end)
    expected_marginals = scan.marginals(emissions, mask, transitions, start, end)
    with context():
        inputs = [tensor.clone() for tensor in (emissions, mask, transitions, start, end)]
        tags, scores = scan.viterbi(*inputs)
        posterior = scan.marginals(*inputs)
    assert torch.equal(tags, expected_tags) and torch.equal(scores, expected_scores)
    torch.testing.assert_close(posterior, expected_marginals, atol=0, rtol=0)
