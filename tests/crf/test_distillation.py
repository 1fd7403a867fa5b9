"""Distillation between CRFs against brute-force enumeration of every tag sequence, in float64:
the teacher's marginals at a temperature, and the student's cross-entropy under them, its
value and its gradients; with and without constraints, on rows of different lengths whose
padding holds garbage, on each CRF kernel."""

import itertools
import math
import warnings

import pytest
import torch

from crftag.crf import kernels
from crftag.crf.crf import CRF
from crftag.crf.distillation import posterior_cross_entropy, teacher_marginals
from crftag.data.schemes import allowed_transitions

LABELS = ["O", "B-A", "I-A", "B-B", "I-B"]
TEMPERATURES = (0.5, 1.0, 3.0)
GARBAGE = (float("nan"), float("inf"), float("-inf"), 1e30)


@pytest.fixture(params=["compiled", "numpy", "torch"])
def recursion_steps(request, choose_kernel):
    """The teacher's forward-backward on each of its kernels (the compiled one where built)."""
    return choose_kernel(request.param)


@pytest.fixture(params=["compiled", "numpy", "torch", "scan"])
def any_kernel(request, choose_kernel):
    """The student's log Z and its gradient on each kernel, the parallel scan included."""
    return choose_kernel(request.param)


def random_crf(num_tags, seed, constrained=False):
    """A CRF with parameters drawn from N(0, 1); ``constrained``: IOB2 over LABELS (K = 5)."""
    generator = torch.Generator().manual_seed(seed)
    constraints = {}
    if constrained:
        assert num_tags == len(LABELS)
        allowed, allowed_start, allowed_end = allowed_transitions("iob2", LABELS)
        constraints = {
            "allowed": torch.tensor(allowed),
            "allowed_start": torch.tensor(allowed_start),
            "allowed_end": torch.tensor(allowed_end),
        }
    crf = CRF(num_tags, **constraints).double()
    with torch.no_grad():
        for parameter in crf.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator, dtype=torch.float64))
    return crf


def random_batch(batch_size, length, num_tags, seed, garbage=True):
    """Emissions (B, T, K) from N(0, 1), rows of lengths 1..T (the first full, the last of
    one token), and padding holding nan, inf and huge values unless not ``garbage``."""
    generator = torch.Generator().manual_seed(seed)
    emissions = torch.randn(batch_size, length, num_tags, generator=generator, dtype=torch.float64)
    lengths = torch.randint(1, length + 1, (batch_size,), generator=generator)
    lengths[0], lengths[-1] = length, 1
    mask = torch.arange(length).unsqueeze(0) < lengths.unsqueeze(1)
    if garbage:
        fill = torch.tensor(GARBAGE, dtype=torch.float64)
        noise = fill[torch.randint(len(GARBAGE), emissions.shape, generator=generator)]
        emissions = torch.where(mask.unsqueeze(2), emissions, noise)
    return emissions, mask, lengths.tolist()


def path_scores(crf, emissions):
    """Every path of one sentence (n, K) as (K^n, n) long, with its score (-inf where
    forbidden), differentiable in the emissions and the crf's parameters."""
    length, num_tags = emissions.shape
    paths = torch.tensor(list(itertools.product(range(num_tags), repeat=length)))
    transitions, start, end = crf.potentials()
    scores = start[paths[:, 0]] + end[paths[:, -1]]
    scores = scores + emissions[torch.arange(length), paths].sum(1)
    if length > 1:
        scores = scores + transitions[paths[:, :-1], paths[:, 1:]].sum(1)
    return paths, scores


def enumerated_marginals(paths, probabilities, num_tags):
    """Token marginals (n, K) and transition marginals (K, K) of a distribution over paths."""
    one_hot = torch.nn.functional.one_hot(paths, num_tags).double()  # (N, n, K)
    tokens = torch.einsum("p,ptk->tk", probabilities, one_hot)
    pairs = torch.einsum("p,pti,ptj->ij", probabilities, one_hot[:, :-1], one_hot[:, 1:])
    return tokens, pairs


def brute_force_marginals(crf, emissions, lengths, temperature):
    """teacher_marginals by enumeration: p(y) = softmax(score / temperature) over all paths."""
    batch_size, length, num_tags = emissions.shape
    tokens = torch.zeros(batch_size, length, num_tags, dtype=torch.float64)
    pairs = torch.zeros(batch_size, num_tags, num_tags, dtype=torch.float64)
    with torch.no_grad():
        for row, n in enumerate(lengths):
            paths, scores = path_scores(crf, emissions[row, :n])
            probabilities = torch.softmax(scores / temperature, dim=0)
            tokens[row, :n], pairs[row] = enumerated_marginals(paths, probabilities, num_tags)
    return tokens, pairs


def brute_force_cross_entropy(teacher, student, emissions, teacher_emissions, lengths):
    """(B,): -sum_y q(y) log p(y) with q the teacher's and p the student's distributions,
    enumerated; differentiable in the student's emissions and parameters."""
    losses = []
    for row, n in enumerate(lengths):
        with torch.no_grad():
            _, scores = path_scores(teacher, teacher_emissions[row, :n])
            q = torch.softmax(scores, dim=0)
        _, scores = path_scores(student, emissions[row, :n])
        log_p = scores - torch.logsumexp(scores, dim=0)
        # q = 0 where the student forbids a path: no term there (0 * -inf is not nan here).
        used = q > 0
        losses.append(-torch.where(used, q * torch.where(used, log_p, 0.0), 0.0).sum())
    return torch.stack(losses)


def entropy(crf, emissions, lengths):
    """(B,): the entropy of each row's distribution, enumerated."""
    values = []
    for row, n in enumerate(lengths):
        _, scores = path_scores(crf, emissions[row, :n])
        log_q = scores - torch.logsumexp(scores, dim=0)
        q = log_q.exp()
        values.append(-torch.where(q > 0, q * log_q, 0.0).sum())
    return torch.stack(values)


CASES = [(2, 0, False), (3, 1, False), (3, 2, False), (5, 3, True), (5, 4, True)]


def length_for(num_tags):
    return 4 if num_tags <= 3 else 3


@pytest.mark.parametrize("temperature", TEMPERATURES)
@pytest.mark.parametrize(("num_tags", "seed", "constrained"), CASES)
def test_teacher_marginals_equal_brute_force(
    num_tags, seed, constrained, temperature, recursion_steps
):
    crf = random_crf(num_tags, seed, constrained)
    emissions, mask, lengths = random_batch(4, length_for(num_tags), num_tags, seed)
    tokens, pairs = teacher_marginals(crf, emissions, mask, temperature)
    assert tokens.dtype == pairs.dtype == torch.float32
    expected_tokens, expected_pairs = brute_force_marginals(crf, emissions, lengths, temperature)
    torch.testing.assert_close(tokens.double(), expected_tokens, atol=1e-6, rtol=0)
    torch.testing.assert_close(pairs.double(), expected_pairs, atol=1e-6, rtol=0)
    # Each real token's row sums to 1, padding is 0, and a sentence has n - 1 transitions.
    torch.testing.assert_close(tokens.sum(2), mask.float())
    moves = torch.tensor(lengths, dtype=torch.float32) - 1
    torch.testing.assert_close(pairs.sum((1, 2)), moves)


@pytest.mark.parametrize(("num_tags", "seed", "constrained"), CASES)
def test_posterior_cross_entropy_equals_brute_force_in_value_and_gradient(
    num_tags, seed, constrained, any_kernel
):
    teacher = random_crf(num_tags, seed, constrained)
    student = random_crf(num_tags, seed + 100, constrained)
    teacher_emissions, mask, lengths = random_batch(4, length_for(num_tags), num_tags, seed)
    emissions, _, _ = random_batch(4, length_for(num_tags), num_tags, seed + 100, garbage=False)
    emissions = torch.where(mask.unsqueeze(2), emissions, teacher_emissions)  # its garbage
    tokens, pairs = teacher_marginals(teacher, teacher_emissions, mask)

    leaf = emissions.clone().requires_grad_()
    loss = posterior_cross_entropy(student, leaf, mask, tokens, pairs, reduction="none")
    parameters = [student.transitions, student.start_transitions, student.end_transitions]
    gradients = torch.autograd.grad(loss.sum(), [leaf, *parameters])

    reference_leaf = emissions.clone().requires_grad_()
    expected = brute_force_cross_entropy(
        teacher, student, reference_leaf, teacher_emissions, lengths
    )
    expected_gradients = torch.autograd.grad(expected.sum(), [reference_leaf, *parameters])
    # float32 targets: the value is exact to their rounding.
    torch.testing.assert_close(loss, expected, atol=1e-5, rtol=0)
    for gradient, reference in zip(gradients, expected_gradients, strict=True):
        assert torch.isfinite(gradient).all()
        torch.testing.assert_close(gradient, reference, atol=1e-5, rtol=0)


@pytest.mark.parametrize("temperature", TEMPERATURES)
@pytest.mark.parametrize(("num_tags", "seed", "constrained"), [(3, 5, False), (5, 6, True)])
def test_teacher_marginals_are_the_gradients_of_log_z(num_tags, seed, constrained, temperature):
    """The independent route: the crf with every potential divided by the temperature; token
    marginals are d log Z / d emissions, transition marginals d log Z_b / d transitions."""
    crf = random_crf(num_tags, seed, constrained)
    emissions, mask, lengths = random_batch(3, 5, num_tags, seed)
    tokens, pairs = teacher_marginals(crf, emissions, mask, temperature)
    tempered = random_crf(num_tags, seed, constrained)
    with torch.no_grad():
        for parameter in tempered.parameters():
            parameter.div_(temperature)
    leaf = (emissions / temperature).requires_grad_()
    (gradient,) = torch.autograd.grad(tempered.log_partition(leaf, mask).sum(), leaf)
    gradient = torch.where(mask.unsqueeze(2), gradient, 0.0)
    torch.testing.assert_close(tokens.double(), gradient, atol=1e-6, rtol=0)
    for row in range(len(lengths)):
        log_z = tempered.log_partition(leaf[row : row + 1], mask[row : row + 1])
        (counts,) = torch.autograd.grad(log_z.sum(), tempered.transitions)
        torch.testing.assert_close(pairs[row].double(), counts, atol=1e-6, rtol=0)


def test_a_small_temperature_approaches_the_viterbi_path():
    """At τ -> 0 all the mass goes to the best path: each other path keeps at most
    exp(-gap / τ) of it, with gap the best path's lead over the second."""
    crf = random_crf(5, 7, constrained=True)
    emissions, mask, lengths = random_batch(4, 6, 5, 7)
    temperature = 0.02
    tokens, pairs = teacher_marginals(crf, emissions, mask, temperature)
    best, _ = crf.decode(emissions, mask)
    _, scores = crf.decode_nbest(emissions, mask, 2)
    for row, n in enumerate(lengths):
        gap = float(scores[row, 0] - scores[row, 1]) if n > 1 else math.inf
        bound = 5**n * math.exp(-gap / temperature) + 1e-6  # and float32 rounding
        one_hot = torch.nn.functional.one_hot(best[row, :n], 5).double()
        path_pairs = torch.einsum("ti,tj->ij", one_hot[:-1], one_hot[1:])
        assert (tokens[row, :n].double() - one_hot).abs().max() <= bound
        assert (pairs[row].double() - path_pairs).abs().max() <= bound * n


def test_a_very_small_temperature_is_computed_in_log_space_and_still_exact(recursion_steps):
    """Scores / τ spread by thousands in one step underflow the scaled recursions; those rows
    are computed again in log space, and still equal enumeration."""
    crf = random_crf(5, 8, constrained=True)
    emissions, mask, lengths = random_batch(4, 3, 5, 8)
    temperature = 1e-3
    scaled = [t.detach() / temperature for t in (emissions, *crf.potentials())]
    with warnings.catch_warnings():  # NumPy's steps warn of the underflow
        warnings.simplefilter("ignore", RuntimeWarning)
        _, marginals, _ = kernels.posteriors_and_counts(scaled[0], mask, *scaled[1:])
    assert not torch.isfinite(marginals).all()  # the case this test is for
    tokens, pairs = teacher_marginals(crf, emissions, mask, temperature)
    expected_tokens, expected_pairs = brute_force_marginals(crf, emissions, lengths, temperature)
    torch.testing.assert_close(tokens.double(), expected_tokens, atol=1e-6, rtol=0)
    torch.testing.assert_close(pairs.double(), expected_pairs, atol=1e-6, rtol=0)


def test_a_large_temperature_approaches_uniform_over_the_allowed_paths():
    crf = random_crf(5, 9, constrained=True)
    emissions, mask, lengths = random_batch(3, 3, 5, 9)
    tokens, pairs = teacher_marginals(crf, emissions, mask, temperature=1e6)
    for row, n in enumerate(lengths):
        paths, scores = path_scores(crf, emissions[row, :n].detach())
        allowed = torch.isfinite(scores)
        uniform = allowed.double() / allowed.sum()
        expected_tokens, expected_pairs = enumerated_marginals(paths, uniform, 5)
        torch.testing.assert_close(tokens[row, :n].double(), expected_tokens, atol=1e-5, rtol=0)
        torch.testing.assert_close(pairs[row].double(), expected_pairs, atol=1e-5, rtol=0)
