"""The windows of a batch's subwords and the encoder calls they are grouped into
(crftag/data/subword_windows.py), against the windows and assignments of crftag/data/subwords.py
and against the bounds the calls promise."""

import random

import pytest

from crftag.data.subword_windows import SLACK, encoder_calls, lay_out_windows
from crftag.data.subwords import Subwords, assign_windows, window_starts


def _sentence(count: int, first_id: int) -> Subwords:
    ids = list(range(first_id, first_id + count))
    return Subwords(ids, list(range(count)), [1] * count)


@pytest.mark.parametrize("width", [2, 4, 7])
def test_every_subword_is_placed_on_its_own_id_in_the_window_subwords_py_assigns(width):
    pieces = [_sentence(count, 100 * row) for row, count in enumerate([1, 4, 5, 17, 3])]
    layout = lay_out_windows(pieces, width, ([101], [102, 103]))
    assert all(w[0] == 101 and w[-2:] == [102, 103] for w in layout.windows)
    assert all(len(w) <= width + 3 for w in layout.windows)
    first = 0
    for found, placed in zip(pieces, layout.places, strict=True):
        starts = window_starts(len(found.ids), width)
        assigned = assign_windows(len(found.ids), width, starts)
        assert placed == [(first + w, 1 + o) for w, o in assigned]
        assert [layout.windows[w][o] for w, o in placed] == found.ids
        first += len(starts)
    assert first == len(layout.windows)


@pytest.mark.parametrize("seed", range(5))
def test_calls_hold_every_window_once_within_their_bounds(seed):
    draw = random.Random(seed)
    lengths = [draw.randint(1, 130) for _ in range(draw.randint(1, 300))]
    budget = draw.choice([130, 1000, 8192])
    calls = encoder_calls(lengths, budget)
    assert sorted(index for call in calls for index in call) == list(range(len(lengths)))
    for call in calls:
        longest = max(lengths[index] for index in call)
        assert lengths[call[0]] == longest
        assert len(call) == 1 or len(call) * longest <= budget
        assert all(longest - lengths[index] <= max(SLACK, longest // 4) for index in call)
    # Longest first, so calls of equal lengths fill up: none is split needlessly.
    same = encoder_calls([10] * 100, 250)
    assert [len(call) for call in same] == [25] * 4
