"""What padded positions hold never reaches a sentence's scores: emissions there may be nan or
infinite (an encoder's padding, a masked fill) and every CRF quantity of the sentence, and its
gradient, is what it is with zeros there."""

import pytest
import torch

from crftag.crf import CRF

MASK = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=torch.bool)
TAGS = torch.tensor([[0, 1, 2, 1], [1, 2, 0, 0]])


def quantities(crf: CRF, emissions: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """(log Z, gold score, nll per sentence, best scores, gradient of the summed nll)."""
    emissions = emissions.clone().requires_grad_(True)
    log_z = crf.log_partition(emissions, MASK)
    score = crf.score(emissions, TAGS, MASK)
    nll = crf.nll(emissions, TAGS, MASK, reduction="none")
    nll.sum().backward()
    _, best = crf.decode(emissions.detach(), MASK)
    return log_z, score, nll, best, emissions.grad


@pytest.mark.parametrize("fill", [float("nan"), float("inf"), -float("inf"), 1e30])
def test_padding_values_do_not_reach_the_sentence(fill):
    torch.manual_seed(0)
    crf = CRF(3)
    clean = torch.randn(2, 4, 3)
    clean[1, 2:] = 0.0
    dirty = clean.clone()
    dirty[1, 2:] = fill
    expected = quantities(crf, clean)
    got = quantities(crf, dirty)
    for want, have in zip(expected, got, strict=True):
        assert torch.isfinite(have).all()
        torch.testing.assert_close(have, want)
