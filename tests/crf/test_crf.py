"""The CRF against brute-force enumeration of every tag sequence, in float64, and against
pytorch-crf as an independent implementation."""

import itertools
import math
import warnings

import pytest
import torch

from crftag.crf.crf import CRF


@pytest.fixture(autouse=True)
def float64():
    """The brute-force oracles compare in float64; restored afterwards for the other tests."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


@pytest.fixture(params=["compiled", "numpy", "torch", "scan"])
def recursion_steps(request, choose_kernel):
    """Run a test with the compiled forward-backward (crftag/crf/_compiled.c; skipped where it was
    not built), with the scaled recursions' NumPy steps (CPU without it), with their torch
    steps (the ones any other device takes) and with the parallel scan (long sentences on a
    GPU)."""
    return choose_kernel(request.param)


def random_crf(num_tags, seed, allowed=None, allowed_start=None, allowed_end=None):
    generator = torch.Generator().manual_seed(seed)
    crf = CRF(num_tags, allowed=allowed, allowed_start=allowed_start, allowed_end=allowed_end)
    with torch.no_grad():
        crf.transitions.copy_(torch.randn(num_tags, num_tags, generator=generator))
        crf.start_transitions.copy_(torch.randn(num_tags, generator=generator))
        crf.end_transitions.copy_(torch.randn(num_tags, generator=generator))
    return crf.double()


def random_batch(batch_size, max_length, num_tags, seed):
    generator = torch.Generator().manual_seed(seed)
    emissions = torch.randn(batch_size, max_length, num_tags, generator=generator)
    lengths = torch.randint(1, max_length + 1, (batch_size,), generator=generator)
    lengths[0] = max_length  # at least one full row
    mask = torch.arange(max_length).unsqueeze(0) < lengths.unsqueeze(1)
    return emissions, mask, lengths


def path_score(crf, emissions, path):
    """Score of one path written out by hand from the model definition."""
    transitions, start, end = crf.potentials()
    total = start[path[0]] + end[path[-1]]
    for t, tag in enumerate(path):
        total = total + emissions[t, tag]
        if t > 0:
            total = total + transitions[path[t - 1], tag]
    return total


def enumerate_paths(crf, emissions):
    """Every path of one sentence (T, K) with its score."""
    length, num_tags = emissions.shape
    paths = list(itertools.product(range(num_tags), repeat=length))
    scores = torch.stack([path_score(crf, emissions, p) for p in paths])
    return paths, scores


CASES = [(num_tags, seed) for num_tags in (1, 2, 3, 5) for seed in range(3)]


@pytest.mark.parametrize("num_tags,seed", CASES)
def test_log_partition_equals_brute_force(num_tags, seed, recursion_steps):
    crf = random_crf(num_tags, seed)
    emissions, mask, lengths = random_batch(4, 4, num_tags, seed)
    log_z = crf.log_partition(emissions, mask)
    for b in range(4):
        _, scores = enumerate_paths(crf, emissions[b, : lengths[b]])
        torch.testing.assert_close(log_z[b], torch.logsumexp(scores, 0), atol=1e-10, rtol=0)


@pytest.mark.parametrize("num_tags,seed", CASES)
def test_score_equals_hand_computed_path_score(num_tags, seed):
    crf = random_crf(num_tags, seed)
    emissions, mask, lengths = random_batch(4, 5, num_tags, seed)
    tags = torch.randint(0, num_tags, (4, 5), generator=torch.Generator().manual_seed(seed))
    scores = crf.score(emissions, tags, mask)
    for b in range(4):
        n = int(lengths[b])
        expected = path_score(crf, emissions[b, :n], tags[b, :n].tolist())
        torch.testing.assert_close(scores[b], expected, atol=1e-10, rtol=0)


@pytest.mark.parametrize("implementation", ["compiled", "numpy", "torch", "scan"])
@pytest.mark.parametrize("num_tags,seed", CASES)
def test_viterbi_equals_brute_force(num_tags, seed, implementation, choose_kernel):
    """Every decoder: compiled (crftag/crf/_compiled.c, skipped where it was not built), the
    NumPy loop, torch's (the path other devices take), and the parallel scan (long sentences
    on a GPU)."""
    choose_kernel(implementation)
    crf = random_crf(num_tags, seed)
    emissions, mask, lengths = random_batch(4, 5, num_tags, seed)
    tags, scores = crf.decode(emissions, mask)
    for b in range(4):
        n = int(lengths[b])
        paths, all_scores = enumerate_paths(crf, emissions[b, :n])
        best = int(all_scores.argmax())
        assert tags[b, :n].tolist() == list(paths[best])
        assert tags[b, n:].eq(0).all()
        torch.testing.assert_close(scores[b], all_scores[best], atol=1e-10, rtol=0)


@pytest.mark.parametrize("num_tags,seed", CASES)
def test_marginals_equal_brute_force(num_tags, seed, recursion_steps):
    crf = random_crf(num_tags, seed)
    emissions, mask, lengths = random_batch(3, 4, num_tags, seed)
    marginals = crf.marginals(emissions, mask)
    for b in range(3):
        n = int(lengths[b])
        paths, scores = enumerate_paths(crf, emissions[b, :n])
        probabilities = torch.softmax(scores, 0)
        expected = torch.zeros(n, num_tags)
        for path, p in zip(paths, probabilities, strict=True):
            for t, tag in enumerate(path):
                expected[t, tag] += p
        torch.testing.assert_close(marginals[b, :n], expected, atol=1e-10, rtol=0)
        assert marginals[b, n:].eq(0).all()


def test_identities_that_cannot_be_faked():
    crf = CRF(4).double()
    with torch.no_grad():
        for parameter in crf.parameters():
            parameter.zero_()
    emissions = torch.zeros(2, 6, 4)
    mask = torch.ones(2, 6, dtype=torch.bool)
    # All-zero potentials: every one of K^T paths scores 0, so log Z = T log K.
    torch.testing.assert_close(
        crf.log_partition(emissions, mask), torch.full((2,), 6 * math.log(4))
    )
    crf = random_crf(4, 7)
    emissions, mask, _ = random_batch(5, 7, 4, 7)
    tags, best = crf.decode(emissions, mask)
    torch.testing.assert_close(crf.score(emissions, tags, mask), best)
    assert (best <= crf.log_partition(emissions, mask)).all()
    marginals = crf.marginals(emissions, mask)
    torch.testing.assert_close(marginals.sum(2), mask.double())
    assert (crf.nll(emissions, tags, mask, reduction="none") >= 0).all()


def random_kernel_case(generator, limits, dtype):
    """A random padded batch for the kernel comparisons: limits = (least size, then the bounds
    on batch size, length and tags). Returns emissions, mask and [transitions, start, end]."""
    low, *highs = limits
    batch, length, num_tags = (int(torch.randint(low, n, (1,), generator=generator)) for n in highs)
    lengths = torch.randint(1, length + 1, (batch,), generator=generator)
    mask = torch.arange(length).unsqueeze(0) < lengths.unsqueeze(1)
    emissions = torch.randn(batch, length, num_tags, generator=generator, dtype=dtype)
    moves = [
        torch.randn(*shape, generator=generator, dtype=dtype)
        for shape in ((num_tags, num_tags), (num_tags,), (num_tags,))
    ]
    return emissions, mask, moves


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_compiled_viterbi_is_bit_identical_to_the_numpy_loop(dtype, compiled_kernels):
    """The C kernel follows the NumPy loop's floating-point order and tie rule (lowest index),
    so paths and scores agree exactly, on ties, forbidden (-inf) moves and inf padding too."""
    from crftag.crf import viterbi as crf_viterbi

    generator = torch.Generator().manual_seed(5)
    for case in range(200):
        emissions, mask, moves = random_kernel_case(generator, (1, 40, 30, 20), dtype)
        num_tags = emissions.size(2)
        if case % 2:  # integer scores: many exact ties
            emissions, moves = emissions.round(), [m.round() for m in moves]
        if case % 3 == 0:  # forbidden moves, and padding that holds inf
            moves[0][torch.rand(num_tags, num_tags, generator=generator) < 0.3] = float("-inf")
            emissions = emissions.masked_fill(~mask.unsqueeze(2), float("inf"))
        expected_tags, expected_scores = crf_viterbi._viterbi_numpy(emissions, mask, *moves)
        tags, scores = crf_viterbi._viterbi_compiled(emissions, mask, *moves)
        assert torch.equal(tags, expected_tags), case
        assert torch.equal(scores, expected_scores), case
        assert scores.dtype == dtype


def log_partition_and_gradients(emissions, mask, moves, compiled):
    """log Z and the gradients of a weighted sum of it, by the compiled kernel or by the
    NumPy-stepped recursions."""
    from crftag.crf import kernels as crf_kernels
    from crftag.crf.choice import use_kernel

    with use_kernel("compiled" if compiled else "numpy"):
        leaves = [tensor.clone().requires_grad_(True) for tensor in (emissions, *moves)]
        log_z = crf_kernels.log_partition(leaves[0], mask, *leaves[1:])
        (log_z * torch.linspace(0.5, 1.5, log_z.numel())).sum().backward()
    return [log_z.detach()] + [leaf.grad for leaf in leaves]


def test_compiled_forward_backward_agrees_with_the_recursions_in_float32(compiled_kernels):
    """The float32 kernel against the NumPy-stepped recursions (the brute-force tests cover
    float64): same log Z and gradients to rounding, with forbidden moves and inf padding."""

    generator = torch.Generator().manual_seed(9)
    for case in range(60):
        emissions, mask, moves = random_kernel_case(generator, (2, 20, 30, 19), torch.float32)
        emissions, num_tags = emissions * 3, emissions.size(2)
        if case % 2:
            moves[0][torch.rand(num_tags, num_tags, generator=generator) < 0.3] = float("-inf")
            moves[0][:, 0] = 0.0  # every sentence keeps a path
            emissions = emissions.masked_fill(~mask.unsqueeze(2), float("inf"))
        compiled = log_partition_and_gradients(emissions, mask, moves, True)
        expected = log_partition_and_gradients(emissions, mask, moves, False)
        allowed = torch.isfinite(moves[0])
        compiled[1], expected[1] = compiled[1][mask], expected[1][mask]  # padding: 0 vs nothing
        compiled[2], expected[2] = compiled[2][allowed], expected[2][allowed]
        for got, want in zip(compiled, expected, strict=True):
            assert torch.isfinite(got).all(), case
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_padding_invariance_and_batched_equals_one_at_a_time():
    crf = random_crf(3, 11)
    emissions, mask, lengths = random_batch(6, 7, 3, 11)
    tags = torch.randint(0, 3, (6, 7), generator=torch.Generator().manual_seed(3))
    # Garbage in padded positions must change nothing.
    noisy = emissions.masked_fill(~mask.unsqueeze(2), 1e4)
    noisy_tags = tags.masked_fill(~mask, 2)
    for method in ("log_partition", "marginals"):
        torch.testing.assert_close(
            getattr(crf, method)(noisy, mask), getattr(crf, method)(emissions, mask)
        )
    torch.testing.assert_close(crf.score(noisy, noisy_tags, mask), crf.score(emissions, tags, mask))
    torch.testing.assert_close(crf.decode(noisy, mask), crf.decode(emissions, mask))
    for garbage in (float("inf"), float("-inf"), float("nan")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no overflow or invalid-value warning either
            decoded = crf.decode(emissions.masked_fill(~mask.unsqueeze(2), garbage), mask)
        torch.testing.assert_close(decoded, crf.decode(emissions, mask))
    batched_nll = crf.nll(emissions, tags, mask, reduction="none")
    batched_tags, batched_scores = crf.decode(emissions, mask)
    for b in range(6):
        n = int(lengths[b])
        one_mask = torch.ones(1, n, dtype=torch.bool)
        one_emissions, one_tags = emissions[b : b + 1, :n], tags[b : b + 1, :n]
        torch.testing.assert_close(
            crf.nll(one_emissions, one_tags, one_mask, reduction="none"), batched_nll[b : b + 1]
        )
        single_tags, single_score = crf.decode(one_emissions, one_mask)
        assert single_tags[0].tolist() == batched_tags[b, :n].tolist()
        torch.testing.assert_close(single_score, batched_scores[b : b + 1])


def test_reductions():
    crf = random_crf(3, 5)
    emissions, mask, _ = random_batch(4, 6, 3, 5)
    tags = torch.zeros(4, 6, dtype=torch.long)
    losses = crf.nll(emissions, tags, mask, reduction="none")
    torch.testing.assert_close(crf.nll(emissions, tags, mask, reduction="sum"), losses.sum())
    torch.testing.assert_close(crf.nll(emissions, tags, mask), losses.mean())
    torch.testing.assert_close(
        crf.nll(emissions, tags, mask, reduction="token_mean"), losses.sum() / mask.sum()
    )
    with pytest.raises(ValueError, match="reduction"):
        crf.nll(emissions, tags, mask, reduction="average")


def test_gradcheck(recursion_steps):
    crf = random_crf(3, 2)
    emissions, mask, _ = random_batch(3, 4, 3, 2)
    emissions.requires_grad_(True)
    tags = torch.randint(0, 3, (3, 4), generator=torch.Generator().manual_seed(0))
    assert torch.autograd.gradcheck(lambda e: crf.nll(e, tags, mask, reduction="sum"), (emissions,))
    assert torch.autograd.gradcheck(lambda e: crf.log_partition(e, mask), (emissions,))


def test_marginals_are_the_gradient_of_log_partition(recursion_steps):
    crf = random_crf(4, 9)
    emissions, mask, _ = random_batch(3, 6, 4, 9)
    emissions.requires_grad_(True)
    (gradient,) = torch.autograd.grad(crf.log_partition(emissions, mask).sum(), emissions)
    torch.testing.assert_close(crf.marginals(emissions.detach(), mask), gradient)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_stable_for_long_sequences_and_large_scores(dtype, recursion_steps):
    # Long enough that a forward recursion left unscaled underflows to 0 in either dtype: on
    # these scores it does within 31-49 steps in float32 and 251-299 in float64 (2,000 random
    # rows each); both rows here run at least half as long again as that.
    length = 600
    crf = random_crf(5, 1).to(dtype)
    emissions = torch.randn(2, length, 5, dtype=torch.float64).to(dtype) * 1000
    mask = torch.ones(2, length, dtype=torch.bool)
    mask[1, length * 3 // 4 :] = False
    log_z = crf.log_partition(emissions, mask)
    tags, best = crf.decode(emissions, mask)
    assert torch.isfinite(log_z).all() and torch.isfinite(best).all()
    # With scores this large one path holds nearly all the mass: 0 <= log Z - best <= log K^T.
    # The scores are about 7e5, where float32 resolves 0.0625 and 600 rounded additions drift
    # by a few tenths, so the bound is relative to the numbers' own precision.
    slack = 1e-5 * best.abs() if dtype == torch.float32 else torch.full_like(best, 1e-6)
    assert ((log_z - best) >= -slack).all(), (log_z - best, slack)
    assert ((log_z - best) <= length * math.log(5)).all()
    rtol = 1e-5 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(crf.score(emissions, tags, mask), best, rtol=rtol, atol=0)
    marginals = crf.marginals(emissions, mask)
    assert torch.isfinite(marginals).all()
    torch.testing.assert_close(marginals.sum(2), mask.to(dtype), atol=1e-3, rtol=0)


def test_constraints_forbid_paths_everywhere():
    allowed = torch.ones(3, 3, dtype=torch.bool)
    allowed[0, 2] = False  # tag 0 may never be followed by tag 2
    allowed_start = torch.tensor([True, True, False])
    allowed_end = torch.tensor([True, False, True])
    crf = random_crf(3, 4, allowed, allowed_start, allowed_end)
    emissions, mask, lengths = random_batch(4, 4, 3, 4)
    emissions.requires_grad_(True)
    log_z = crf.log_partition(emissions, mask)
    tags, scores = crf.decode(emissions, mask)
    marginals = crf.marginals(emissions.detach(), mask)
    (gradient,) = torch.autograd.grad(log_z.sum(), emissions)
    assert torch.isfinite(gradient).all()
    for b in range(4):
        n = int(lengths[b])
        paths, all_scores = enumerate_paths(crf, emissions[b, :n].detach())
        finite = torch.isfinite(all_scores)
        torch.testing.assert_close(log_z[b], torch.logsumexp(all_scores[finite], 0))
        best = int(all_scores.argmax())
        assert tags[b, :n].tolist() == list(paths[best])
        torch.testing.assert_close(scores[b], all_scores[best])
        expected = torch.zeros(n, 3)
        for path, p in zip(paths, torch.softmax(all_scores, 0), strict=True):
            for t, tag in enumerate(path):
                expected[t, tag] += p
        torch.testing.assert_close(marginals[b, :n], expected)


def test_input_errors_are_value_errors():
    crf = CRF(3)
    emissions = torch.zeros(2, 4, 3)
    mask = torch.ones(2, 4, dtype=torch.bool)
    with pytest.raises(ValueError, match="3 tags"):
        crf.log_partition(torch.zeros(2, 4, 5), mask)
    with pytest.raises(ValueError, match="bool mask"):
        crf.log_partition(emissions, mask.long())
    bad = mask.clone()
    bad[1, 0] = False
    with pytest.raises(ValueError, match="at least one token"):
        crf.decode(emissions, bad)


@pytest.mark.parametrize("num_tags", [9, 18])
def test_same_as_pytorch_crf_with_copied_parameters(num_tags):
    torchcrf = pytest.importorskip("torchcrf")
    reference = torchcrf.CRF(num_tags, batch_first=True).double()
    ours = CRF(num_tags).double()
    with torch.no_grad():
        ours.transitions.copy_(reference.transitions)
        ours.start_transitions.copy_(reference.start_transitions)
        ours.end_transitions.copy_(reference.end_transitions)
    for seed in range(3):
        emissions, mask, lengths = random_batch(16, 30, num_tags, 100 + seed)
        tags = torch.randint(0, num_tags, (16, 30), generator=torch.Generator().manual_seed(seed))
        expected_llh = reference(emissions, tags, mask.to(torch.uint8), reduction="none")
        torch.testing.assert_close(
            -ours.nll(emissions, tags, mask, reduction="none"), expected_llh, atol=1e-4, rtol=0
        )
        expected_paths = reference.decode(emissions, mask.to(torch.uint8))
        decoded, _ = ours.decode(emissions, mask)
        for b in range(16):
            assert decoded[b, : lengths[b]].tolist() == expected_paths[b]
