"""distinct_rows, the character encoder's once-per-distinct-word grouping, against
``torch.unique(dim=0)``."""

import pytest
import torch

from crftag.nn import encoders
from crftag.nn.encoders import distinct_rows


def random_words(seed, count=300, width=9, chars=6):
    """(count, width) rows of character indices, padded with 0, many repeated, some all 0."""
    generator = torch.Generator().manual_seed(seed)
    words = torch.randint(1, chars, (count // 3, width), generator=generator)
    lengths = torch.randint(1, width + 1, (count // 3, 1), generator=generator)
    words = words * (torch.arange(width) < lengths)
    rows = words[torch.randint(0, len(words), (count,), generator=generator)]
    rows[::5] = 0
    return rows


def check_against_unique(rows):
    distinct, where = distinct_rows(rows)
    expected = torch.unique(rows, dim=0)
    assert torch.equal(distinct[where], rows)
    assert len(distinct) == len(expected)  # every distinct row once
    assert torch.equal(torch.unique(distinct, dim=0), expected)
    if not rows.any(1).all():
        assert not distinct[0].any()  # the padding row first, as the encoder expects


@pytest.mark.parametrize("seed", range(5))
def test_distinct_rows_are_torch_uniques(seed):
    check_against_unique(random_words(seed))


def test_distinct_rows_without_padding_and_of_one_row():
    rows = random_words(7)
    check_against_unique(rows[rows.any(1)])
    check_against_unique(torch.tensor([[3, 1, 0]]))
    check_against_unique(torch.zeros(4, 3, dtype=torch.long))


def test_rows_sharing_a_key_are_never_merged(monkeypatch):
    """Equal weights give [1, 2] and [2, 1] one key: the row check sees it and the exact
    torch.unique answers."""
    monkeypatch.setattr(encoders, "_row_weights", lambda width, device: torch.ones(width).double())
    rows = torch.tensor([[1, 2], [2, 1], [1, 2], [0, 0], [3, 0]])
    distinct, where = distinct_rows(rows)
    assert torch.equal(distinct[where], rows) and len(distinct) == 4
    assert not distinct[0].any()
