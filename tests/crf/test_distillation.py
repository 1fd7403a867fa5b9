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


def one_hot_targets(tags, mask, num_tags):
    """The marginals of the distribution with all its mass on the tags (B, T): token (B, T, K)
    0 on padding, transition (B, K, K) counting each sentence's moves."""
    one_hot = torch.nn.functional.one_hot(tags, num_tags).double() * mask.unsqueeze(2)
    moves = one_hot[:, :-1].unsqueeze(3) * one_hot[:, 1:].unsqueeze(2)  # (B, T-1, K, K)
    return one_hot, moves.sum(1)


@pytest.mark.parametrize(("num_tags", "seed", "constrained"), CASES)
def test_one_hot_targets_give_the_nll_of_their_path(num_tags, seed, constrained, any_kernel):
    crf = random_crf(num_tags, seed, constrained)
    emissions, mask, lengths = random_batch(5, 6, num_tags, seed)
    # An allowed path: the Viterbi one, with garbage past each end.
    tags, _ = crf.decode(emissions, mask)
    tags = torch.where(mask, tags, torch.randint(num_tags, tags.shape))
    tokens, pairs = one_hot_targets(tags, mask, num_tags)
    loss = posterior_cross_entropy(crf, emissions, mask, tokens, pairs, reduction="none")
    # CRF.score multiplies the emissions by the mask, so its padding must be finite.
    clean = torch.where(mask.unsqueeze(2), emissions, 0.0)
    torch.testing.assert_close(loss, crf.nll(clean, tags, mask, reduction="none"))


@pytest.mark.parametrize("seed", range(3))
def test_one_hot_targets_give_pytorch_crfs_negative_log_likelihood(seed):
    torchcrf = pytest.importorskip("torchcrf")
    num_tags = 4
    reference = torchcrf.CRF(num_tags, batch_first=True).double()
    crf = CRF(num_tags).double()
    with torch.no_grad():
        crf.transitions.copy_(reference.transitions)
        crf.start_transitions.copy_(reference.start_transitions)
        crf.end_transitions.copy_(reference.end_transitions)
    # pytorch-crf multiplies padding by 0, so its padding must be finite.
    emissions, mask, _ = random_batch(6, 7, num_tags, seed, garbage=False)
    tags = torch.randint(num_tags, mask.shape, generator=torch.Generator().manual_seed(seed))
    tokens, pairs = one_hot_targets(tags, mask, num_tags)
    loss = posterior_cross_entropy(crf, emissions, mask, tokens, pairs, reduction="none")
    expected = -reference(emissions, tags, mask.to(torch.uint8), reduction="none")
    torch.testing.assert_close(loss, expected)


@pytest.mark.parametrize(("num_tags", "seed", "constrained"), CASES)
def test_the_cross_entropy_is_at_least_the_teachers_entropy_equal_for_the_teacher(
    num_tags, seed, constrained
):
    """H(q, p) = H(q) + KL(q || p) >= H(q), with equality when the student is the teacher."""
    teacher = random_crf(num_tags, seed, constrained)
    student = random_crf(num_tags, seed + 200, constrained)
    emissions, mask, lengths = random_batch(4, length_for(num_tags), num_tags, seed)
    tokens, pairs = (m.double() for m in teacher_marginals(teacher, emissions, mask))
    with torch.no_grad():
        expected = entropy(teacher, emissions, lengths)
        own = posterior_cross_entropy(teacher, emissions, mask, tokens, pairs, reduction="none")
        other = posterior_cross_entropy(student, emissions, mask, tokens, pairs, reduction="none")
    torch.testing.assert_close(own, expected, atol=1e-5, rtol=0)
    assert (other > expected + 1e-3).all()  # these random students differ from the teacher


def test_the_reductions_are_those_of_nll(any_kernel):
    teacher, student = random_crf(3, 10), random_crf(3, 11)
    emissions, mask, _ = random_batch(4, 5, 3, 10)
    tokens, pairs = teacher_marginals(teacher, emissions, mask)
    losses = posterior_cross_entropy(student, emissions, mask, tokens, pairs, reduction="none")
    assert losses.shape == (4,)
    expected = {
        "sum": losses.sum(),
        "mean": losses.mean(),
        "token_mean": losses.sum() / mask.sum(),
    }
    for reduction, value in expected.items():
        result = posterior_cross_entropy(student, emissions, mask, tokens, pairs, reduction)
        torch.testing.assert_close(result, value)
    assert posterior_cross_entropy(student, emissions, mask, tokens, pairs).shape == ()
    with pytest.raises(ValueError, match="reduction"):
        posterior_cross_entropy(student, emissions, mask, tokens, pairs, reduction="max")


def test_padding_and_batching_change_nothing():
    """Each row alone, cut to its length, gives the values and gradients it gives in a batch
    whose padding holds garbage (in the emissions and in the token targets)."""
    teacher, student = random_crf(5, 12, True), random_crf(5, 13, True)
    emissions, mask, lengths = random_batch(5, 6, 5, 12)
    tokens, pairs = teacher_marginals(teacher, emissions, mask)
    noisy_tokens = torch.where(mask.unsqueeze(2), tokens, float("nan"))
    leaf = emissions.clone().requires_grad_()
    losses = posterior_cross_entropy(student, leaf, mask, noisy_tokens, pairs, reduction="none")
    (gradient,) = torch.autograd.grad(losses.sum(), leaf)
    assert torch.isfinite(gradient).all() and (gradient[~mask] == 0).all()
    for row, n in enumerate(lengths):
        alone = emissions[row : row + 1, :n].clone().requires_grad_()
        alone_mask = mask[row : row + 1, :n]
        alone_tokens, alone_pairs = teacher_marginals(teacher, alone, alone_mask)
        torch.testing.assert_close(alone_tokens, tokens[row : row + 1, :n])
        torch.testing.assert_close(alone_pairs, pairs[row : row + 1])
        loss = posterior_cross_entropy(student, alone, alone_mask, alone_tokens, alone_pairs)
        (alone_gradient,) = torch.autograd.grad(loss, alone)
        torch.testing.assert_close(loss, losses[row])
        torch.testing.assert_close(alone_gradient[0], gradient[row, :n])


@pytest.mark.parametrize("constrained", [False, True])
def test_a_batch_of_one_sentence_of_one_token(constrained, recursion_steps):
    teacher, student = random_crf(5, 14, constrained), random_crf(5, 15, constrained)
    emissions = torch.randn(1, 1, 5, generator=torch.Generator().manual_seed(14))
    mask = torch.ones(1, 1, dtype=torch.bool)
    tokens, pairs = teacher_marginals(teacher, emissions, mask, temperature=0.5)
    expected_tokens, _ = brute_force_marginals(teacher, emissions, [1], 0.5)
    torch.testing.assert_close(tokens.double(), expected_tokens, atol=1e-6, rtol=0)
    assert pairs.shape == (1, 5, 5) and (pairs == 0).all()
    tokens, pairs = teacher_marginals(teacher, emissions, mask)
    loss = posterior_cross_entropy(student, emissions, mask, tokens, pairs)
    expected = brute_force_cross_entropy(teacher, student, emissions, emissions, [1])
    torch.testing.assert_close(loss, expected.sum(), atol=1e-6, rtol=0)


def test_targets_are_taken_as_given_not_renormalised():
    """Rounded targets (float16 storage) that do not sum to 1 give the exact linear function of
    the targets: H(c q) = log Z - c (log Z - H(q))."""
    teacher, student = random_crf(5, 16, True), random_crf(5, 17, True)
    emissions, mask, _ = random_batch(4, 5, 5, 16)
    tokens, pairs = (m.double() for m in teacher_marginals(teacher, emissions, mask))
    with torch.no_grad():
        exact = posterior_cross_entropy(student, emissions, mask, tokens, pairs, "none")
        scaled = posterior_cross_entropy(
            student, emissions, mask, 1.01 * tokens, 1.01 * pairs, "none"
        )
        log_z = student.log_partition(emissions, mask)
        rounded = posterior_cross_entropy(
            student, emissions, mask, tokens.half(), pairs.half(), "none"
        )
    torch.testing.assert_close(scaled, log_z - 1.01 * (log_z - exact))
    assert rounded.dtype == torch.float64
    torch.testing.assert_close(rounded, exact, atol=0.05, rtol=0)  # float16's rounding


@pytest.mark.parametrize("position", ["transition", "first tag", "last tag"])
def test_teacher_mass_where_the_student_forbids_a_move_is_refused(position):
    """A student that forbids what the teacher believes in has cross-entropy +inf: refused in
    one message, rather than an infinite loss."""
    o, b_b, i_a = LABELS.index("O"), LABELS.index("B-B"), LABELS.index("I-A")
    allowed, allowed_start, allowed_end = map(torch.tensor, allowed_transitions("iob2", LABELS))
    allowed_end[b_b] = False  # IOB2 may end on any tag: forbid one ending here
    student = CRF(5, allowed=allowed, allowed_start=allowed_start, allowed_end=allowed_end)
    emissions, mask, lengths = random_batch(3, 4, 5, 18)
    tags, _ = student.decode(emissions, mask)
    tokens, pairs = one_hot_targets(tags, mask, 5)  # all on allowed paths
    assert posterior_cross_entropy(student, emissions.float(), mask, tokens, pairs).isfinite()
    if position == "transition":
        pairs[1, o, i_a] = 0.25  # O -> I-A: not IOB2
    elif position == "first tag":
        tokens[1, 0, i_a] = 0.25  # a sentence cannot start inside a span
    else:
        tokens[1, lengths[1] - 1, b_b] = 0.25
    expected = f"forbids a {position}, got 0.25 in sentence 1"
    with pytest.raises(ValueError, match=expected):
        posterior_cross_entropy(student, emissions.float(), mask, tokens, pairs)


def test_bad_arguments_are_value_errors():
    crf = random_crf(3, 19)
    emissions, mask, _ = random_batch(2, 4, 3, 19)
    for temperature in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="temperature > 0"):
            teacher_marginals(crf, emissions, mask, temperature)
    with pytest.raises(ValueError, match="3 tags"):
        teacher_marginals(crf, emissions[:, :, :2], mask)
    tokens, pairs = teacher_marginals(crf, emissions, mask)
    with pytest.raises(ValueError, match=r"token_marginals of shape \(2, 4, 3\)"):
        posterior_cross_entropy(crf, emissions, mask, tokens[:, :3], pairs)
    with pytest.raises(ValueError, match=r"transition_marginals of shape \(2, 3, 3\)"):
        posterior_cross_entropy(crf, emissions, mask, tokens, pairs[0])


def test_a_sentence_with_no_allowed_path_is_refused():
    """One tag that may neither start nor end a sentence: no path of one token."""
    crf = CRF(1, allowed_start=torch.tensor([False]))
    with pytest.raises(ValueError, match="no allowed tag sequence|an allowed tag sequence"):
        teacher_marginals(crf, torch.zeros(1, 1, 1), torch.ones(1, 1, dtype=torch.bool))
