"""CRF.partial_nll, the loss of partially labelled sentences, against brute-force enumeration of
the tag sequences consistent with the allowed tags, value and gradient, in float64."""

import itertools

import pytest
import torch

from crftag.crf.crf import CRF


@pytest.fixture(autouse=True)
def float64():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


@pytest.fixture(params=["default", "numpy", "torch", "scan"])
def recursion_steps(request, choose_kernel):
    """The forward-backward of the install (compiled where built), NumPy's and torch's steps,
    and the parallel scan."""
    return choose_kernel(request.param)


def random_crf(num_tags, seed, constrained):
    generator = torch.Generator().manual_seed(seed)
    allowed = allowed_start = allowed_end = None
    if constrained:  # tag 1 may never follow tag 0 nor start; tag 2 may not end a sentence
        allowed = torch.ones(num_tags, num_tags, dtype=torch.bool)
        allowed[0, 1] = False
        allowed_start = torch.tensor([True, False] + [True] * (num_tags - 2))
        allowed_end = torch.tensor([True, True, False] + [True] * (num_tags - 3))
    crf = CRF(num_tags, allowed=allowed, allowed_start=allowed_start, allowed_end=allowed_end)
    with torch.no_grad():
        crf.transitions.copy_(torch.randn(num_tags, num_tags, generator=generator))
        crf.start_transitions.copy_(torch.randn(num_tags, generator=generator))
        crf.end_transitions.copy_(torch.randn(num_tags, generator=generator))
    return crf.double()


def path_score(crf, emissions, path):
    transitions, start, end = crf.potentials()
    total = start[path[0]] + end[path[-1]] + sum(emissions[t, k] for t, k in enumerate(path))
    return total + sum(transitions[a, b] for a, b in itertools.pairwise(path))


def brute_force_loss(crf, emissions, allowed):
    """-log of the summed probability of the paths through the allowed tags, by enumeration."""
    length, num_tags = emissions.shape
    every, consistent = [], []
    for path in itertools.product(range(num_tags), repeat=length):
        score = path_score(crf, emissions, path)
        every.append(score)
        if all(allowed[t, k] for t, k in enumerate(path)):
            consistent.append(score)
    return torch.logsumexp(torch.stack(every), 0) - torch.logsumexp(torch.stack(consistent), 0)


def random_batch(seed, num_tags=3, lengths=(4, 2, 3)):
    generator = torch.Generator().manual_seed(seed)
    batch_size, length = len(lengths), max(lengths)
    emissions = torch.randn(batch_size, length, num_tags, generator=generator)
    mask = torch.arange(length).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    tags = torch.zeros(batch_size, length, dtype=torch.long)
    allowed = torch.rand(batch_size, length, num_tags, generator=generator) < 0.6
    # Tag 0 is allowed everywhere, so that some allowed path exists under the constraints.
    allowed[:, :, 0] = True
    allowed[1] = torch.nn.functional.one_hot(tags[1], num_tags).bool()  # a fully labelled row
    return emissions, mask, tags, allowed


@pytest.mark.parametrize("constrained", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_value_and_gradient_equal_brute_force(recursion_steps, constrained, seed):
    num_tags = 3
    crf = random_crf(num_tags, seed, constrained)
    emissions, mask, tags, allowed = random_batch(seed, num_tags)
    emissions.requires_grad_(True)
    losses = crf.partial_nll(emissions, tags, mask, allowed, reduction="none")
    loss_grads = torch.autograd.grad(losses.sum(), [emissions, crf.transitions])
    expected = []
    for row in range(emissions.size(0)):
        n = int(mask[row].sum())
        expected.append(brute_force_loss(crf, emissions[row, :n], allowed[row, :n]))
    expected = torch.stack(expected)
    oracle_grads = torch.autograd.grad(expected.sum(), [emissions, crf.transitions])
    torch.testing.assert_close(losses, expected)
    for got, want in zip(loss_grads, oracle_grads, strict=True):
        torch.testing.assert_close(got, want)
    assert bool((losses >= -1e-9).all())


def test_every_tag_allowed_gives_zero_loss():
    crf = random_crf(3, 4, constrained=True)
    emissions, mask, tags, _ = random_batch(4)
    allowed = torch.ones_like(emissions, dtype=torch.bool)
    losses = crf.partial_nll(emissions, tags, mask, allowed, reduction="none")
    torch.testing.assert_close(losses, torch.zeros(3))


def test_fully_labelled_rows_keep_the_exact_nll():
    crf = random_crf(4, 5, constrained=False).float()
    generator = torch.Generator().manual_seed(5)
    emissions = torch.randn(3, 5, 4, generator=generator, dtype=torch.float32)
    mask = torch.arange(5).unsqueeze(0) < torch.tensor([5, 3, 4]).unsqueeze(1)
    tags = torch.randint(0, 4, (3, 5), generator=generator).masked_fill(~mask, 0)
    allowed = torch.nn.functional.one_hot(tags, 4).bool()
    allowed[~mask] = True
    allowed[2, 1] = True  # row 2 has an unknown token; rows 0 and 1 are fully labelled
    partial = crf.partial_nll(emissions, tags, mask, allowed, reduction="none")
    exact = crf.nll(emissions, tags, mask, reduction="none")
    assert torch.equal(partial[:2], exact[:2])
    assert float(partial[2].detach()) < float(exact[2].detach())


@pytest.mark.parametrize("reduction", ["sum", "mean", "token_mean"])
def test_reductions_match_nll_on_fully_labelled_batches(reduction):
    crf = random_crf(3, 6, constrained=False)
    emissions, mask, tags, _ = random_batch(6)
    allowed = torch.nn.functional.one_hot(tags, 3).bool()
    expected = crf.nll(emissions, tags, mask, reduction=reduction)
    assert torch.equal(crf.partial_nll(emissions, tags, mask, allowed, reduction), expected)


def test_an_unknown_reduction_is_an_error():
    crf = random_crf(3, 7, constrained=False)
    emissions, mask, tags, allowed = random_batch(7)
    with pytest.raises(ValueError, match="expected reduction in none"):
        crf.partial_nll(emissions, tags, mask, allowed, reduction="average")
