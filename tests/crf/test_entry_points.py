"""Every public CRF entry point takes the compiled kernel on the CPU whatever the emissions are
like (requiring grad, float16, bfloat16, float64, not contiguous) and answers as it does on
detached float32 emissions: decoding never builds a graph, and narrow floats are summed in
float32."""

import pytest
import torch

from crftag.crf import kernels, viterbi
from crftag.crf.crf import CRF

BATCH, LENGTH, TAGS = 6, 9, 5


@pytest.fixture
def crf():
    generator = torch.Generator().manual_seed(3)
    allowed = torch.rand(TAGS, TAGS, generator=generator) > 0.2
    model = CRF(TAGS, allowed=allowed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator))
    return model


@pytest.fixture
def batch():
    generator = torch.Generator().manual_seed(4)
    emissions = torch.randn(BATCH, LENGTH, TAGS, generator=generator)
    lengths = torch.tensor([9, 1, 4, 9, 6, 2])
    mask = torch.arange(LENGTH)[None, :] < lengths[:, None]
    return emissions, mask


VARIANTS = {
    "requires grad": lambda e: e.clone().requires_grad_(True),
    "float16": lambda e: e.half(),
    "bfloat16": lambda e: e.bfloat16(),
    "float64": lambda e: e.double(),
    "not contiguous": lambda e: e.transpose(0, 1).contiguous().transpose(0, 1),
}


@pytest.fixture
def kernel_calls(monkeypatch, compiled_kernels):
    """Counts of calls into the compiled Viterbi and forward-backward."""
    calls = {"viterbi": 0, "forward_backward": 0}

    def counting(name, function):
        def wrapped(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)

        return wrapped

    monkeypatch.setattr(
        viterbi, "_viterbi_compiled", counting("viterbi", viterbi._viterbi_compiled)
    )
    monkeypatch.setattr(
        kernels,
        "_forward_backward_compiled",
        counting("forward_backward", kernels._forward_backward_compiled),
    )
    return calls


def reference_for(variant, emissions):
    """What the variant's answers are compared with: the same numbers in float32 (narrow
    floats rounded first, as the variant's emissions are), or float64 for float64."""
    changed = VARIANTS[variant](emissions).detach()
    return changed.double() if variant == "float64" else changed.float()


@pytest.mark.parametrize("variant", VARIANTS)
def test_decode_takes_the_compiled_viterbi_and_answers_alike(crf, batch, kernel_calls, variant):
    emissions, mask = batch
    tags, scores = crf.decode(VARIANTS[variant](emissions), mask)
    assert kernel_calls["viterbi"] == 1
    assert not scores.requires_grad and scores.dtype in (torch.float32, torch.float64)
    expected_tags, expected_scores = crf.decode(reference_for(variant, emissions), mask)
    assert torch.equal(tags, expected_tags)
    assert torch.equal(scores, expected_scores)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("entry", ["marginals", "log_partition", "constrained_log_partition"])
def test_posteriors_take_the_compiled_forward_backward(crf, batch, kernel_calls, variant, entry):
    emissions, mask = batch
    allowed = torch.ones(BATCH, LENGTH, TAGS, dtype=torch.bool)
    allowed[:, 2, 0] = False

    def call(values):
        if entry == "constrained_log_partition":
            return crf.constrained_log_partition(values, mask, allowed)
        return getattr(crf, entry)(values, mask)

    result = call(VARIANTS[variant](emissions))
    assert kernel_calls["forward_backward"] == 1
    assert result.dtype in (torch.float32, torch.float64)
    torch.testing.assert_close(result.detach(), call(reference_for(variant, emissions)))


def test_marginals_and_nbest_build_no_graph(crf, batch):
    emissions, mask = batch
    leaf = emissions.clone().requires_grad_(True)
    assert not crf.marginals(leaf, mask).requires_grad
    tags, scores = crf.decode_nbest(leaf, mask, 3)
    assert not scores.requires_grad
    expected_tags, expected_scores = crf.decode_nbest(emissions, mask, 3)
    assert torch.equal(tags, expected_tags) and torch.equal(scores, expected_scores)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_log_partition_of_narrow_emissions_passes_gradients_back_in_their_dtype(crf, batch, dtype):
    emissions, mask = batch
    narrow = emissions.to(dtype).requires_grad_(True)
    (gradient,) = torch.autograd.grad(crf.log_partition(narrow, mask).sum(), narrow)
    assert gradient.dtype == dtype
    torch.testing.assert_close(
        gradient.float(), crf.marginals(narrow.detach(), mask), atol=1e-2, rtol=1e-2
    )
