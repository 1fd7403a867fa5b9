"""crftag/training/prefetch.py: batches built ahead on a thread are the batches built in turn,
drawn from the CPU generator in the same order, and a stop rewinds the generator to where the
first batch not taken began, so that a resumed run draws what an uninterrupted one draws."""

import pytest
import torch

from crftag.training.prefetch import Prefetcher, prefetcher


def _draw(item: int) -> tuple[int, torch.Tensor]:
    """A stand-in for building a batch: word dropout's draws from the CPU generator."""
    return item, torch.rand(3)


def _in_turn(items, seed):
    torch.manual_seed(seed)
    return list(map(_draw, items))


@pytest.mark.parametrize("ahead", [1, 2, 5])
def test_built_ahead_equals_built_in_turn(ahead):
    expected = _in_turn(range(12), seed=4)
    torch.manual_seed(4)
    with Prefetcher(_draw, range(12), ahead=ahead) as built:
        got = list(built)
    assert [item for item, _ in got] == list(range(12))
    for (_, draws), (_, wanted) in zip(got, expected, strict=True):
        assert torch.equal(draws, wanted)
    next_draws = torch.rand(2)  # the generator is left where building in turn leaves it
    _in_turn(range(12), seed=4)
    assert torch.equal(next_draws, torch.rand(2))


@pytest.mark.parametrize("taken", [0, 1, 4, 10])
def test_rewind_leaves_the_generator_where_the_next_batch_began(taken):
    torch.manual_seed(9)
    list(map(_draw, range(taken)))
    after_taken = torch.rand(3)  # what building batch `taken` draws in an uninterrupted run
    torch.manual_seed(9)
    with Prefetcher(_draw, range(10), ahead=3) as built:
        iterator = iter(built)
        for _ in range(taken):
            next(iterator)
        built.rewind()
        assert torch.equal(torch.rand(3), after_taken)


def test_an_error_while_building_is_raised_where_the_batches_are_taken():
    def make(item):
        if item == 3:
            raise ValueError("bad sentence")
        return item

    taken = []
    with Prefetcher(make, range(6), ahead=2) as built, pytest.raises(ValueError, match="bad"):
        for item in built:
            taken.append(item)
    assert taken == [0, 1, 2]


def test_the_cpu_builds_in_turn_and_a_gpu_ahead():
    assert prefetcher(_draw, range(3), torch.device("cpu"))._ahead == 0
    assert prefetcher(_draw, range(3), torch.device("cuda"))._ahead == 2
