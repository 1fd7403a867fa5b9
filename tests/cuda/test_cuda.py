"""On a CUDA device: the CRF's quantities against the CPU's within float tolerance, a training
step of the tiny model, and predict's tags against the CPU's. Marked ``cuda``
(``pytest -m cuda``, what ``make bench-gpu`` runs); skipped, and said so, where torch sees no
GPU."""

import pytest
import torch

from crftag.crf.crf import CRF
from crftag.data.schemes import allowed_transitions
from crftag.inference.tagger import Tagger
from crftag.training.optimizers import make_optimizer
from crftag.training.step import train_step
from tests.training.test_loop import _tiny_model_and_batch

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
]

CUDA = torch.device("cuda")
TAGS = ["O", "B-PER", "I-PER", "E-PER", "S-PER", "B-LOC", "I-LOC", "E-LOC", "S-LOC"]


def _constrained_crf() -> CRF:
    """A BIOES CRF of 9 tags with its forbidden transitions and random scores."""
    allowed = allowed_transitions("bioes", TAGS)
    crf = CRF(
        len(TAGS),
        **{
            k: torch.tensor(v)
            for k, v in zip(("allowed", "allowed_start", "allowed_end"), allowed, strict=True)
        },
    )
    with torch.no_grad():
        for parameter in crf.parameters():
            parameter.normal_(generator=torch.Generator().manual_seed(parameter.numel()))
    return crf


def _inputs(batch_size: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """emissions (B, T, K) and a prefix mask (B, T) of random lengths, the first row full."""
    generator = torch.Generator().manual_seed(length)
    emissions = 3 * torch.randn(batch_size, length, len(TAGS), generator=generator)
    lengths = torch.randint(1, length + 1, (batch_size,), generator=generator)
    lengths[0] = length
    return emissions, torch.arange(length).unsqueeze(0) < lengths.unsqueeze(1)


# T = 3 runs the sequential loop on the GPU, 40 and 300 the parallel scan (crftag/crf/scan.py).
@pytest.mark.parametrize("length", [3, 40, 300])
def test_crf_on_the_gpu_equals_the_cpu(length):
    crf = _constrained_crf()
    emissions, mask = _inputs(16, length)
    tags, _ = crf.decode(emissions, mask)
    on_gpu = _constrained_crf().to(CUDA)
    gpu_inputs = emissions.to(CUDA), mask.to(CUDA)
    cpu_log_z = crf.log_partition(emissions, mask)
    torch.testing.assert_close(
        on_gpu.log_partition(*gpu_inputs).cpu(), cpu_log_z, rtol=1e-5, atol=1e-4
    )
    torch.testing.assert_close(
        on_gpu.nll(gpu_inputs[0], tags.to(CUDA), gpu_inputs[1], reduction="none").cpu(),
        crf.nll(emissions, tags, mask, reduction="none"),
        rtol=1e-5,
        atol=1e-3,
    )
    # Probabilities from float32 sums of up to 300 steps whose log Z is in the thousands: equal
    # to a ten-thousandth.
    torch.testing.assert_close(
        on_gpu.marginals(*gpu_inputs).cpu(), crf.marginals(emissions, mask), rtol=0, atol=1e-4
    )
    gpu_tags, gpu_scores = on_gpu.decode(*gpu_inputs)
    _, cpu_scores = crf.decode(emissions, mask)
    torch.testing.assert_close(gpu_scores.cpu(), cpu_scores, rtol=1e-5, atol=1e-3)
    # A different path is a tie within float32 rounding: it must score as the CPU's does.
    gpu_path_scores = crf.score(emissions, gpu_tags.cpu(), mask)
    torch.testing.assert_close(gpu_path_scores, cpu_scores, rtol=1e-5, atol=1e-3)


def test_the_crf_gradient_on_the_gpu_equals_the_cpu():
    emissions, mask = _inputs(8, 40)
    gradients = []
    for device in ("cpu", CUDA):
        crf = _constrained_crf().to(device)
        leaf = emissions.to(device).requires_grad_()
        tags, _ = crf.decode(leaf.detach(), mask.to(device))
        crf.nll(leaf, tags, mask.to(device), reduction="sum").backward()
        gradients.append([leaf.grad.cpu(), crf.transitions.grad.cpu()])
    for cpu, gpu in zip(*gradients, strict=True):
        torch.testing.assert_close(gpu, cpu, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("amp", [False, True])
def test_a_training_step_on_the_gpu(tiny_config, amp):
    config = tiny_config(model__dropout=0.0, train__amp=amp)
    model, batch = _tiny_model_and_batch(config)
    expected = model.loss(batch, reduction=config.train.loss_reduction).detach()
    model.to(CUDA)
    optimizer = make_optimizer(config, model)
    before = [p.detach().clone() for p in model.parameters()]
    loss = train_step(model, optimizer, batch.to(CUDA), config.train)
    assert loss.device.type == "cuda"
    # bfloat16 keeps 8 bits of mantissa; float32 on cuDNN differs from the CPU in rounding only.
    tolerance = 0.05 if amp else 1e-4
    assert float(loss) == pytest.approx(float(expected), rel=tolerance)
    moved = [
        not torch.equal(b, p.detach()) for b, p in zip(before, model.parameters(), strict=True)
    ]
    assert all(moved[i] for i, p in enumerate(model.parameters()) if p.requires_grad)
    losses = [float(train_step(model, optimizer, batch.to(CUDA), config.train)) for _ in range(4)]
    assert losses[-1] < float(loss)


def test_predict_on_the_gpu_gives_the_cpu_tags(sample_model):
    from crftag.inference.loading import load

    sentences = [
        "John Smith lives in Berlin .".split(),
        "The European Commission met in Brussels on Tuesday .".split(),
        ["Paris"],
    ]
    on_cpu = load(str(sample_model), "cpu")
    on_gpu = load(str(sample_model), "cuda")
    assert isinstance(on_gpu, Tagger) and on_gpu.device.type == "cuda"
    assert on_gpu.tag(sentences, batch_size=2) == on_cpu.tag(sentences, batch_size=2)
    for cpu, gpu in zip(
        on_cpu.predict(sentences, probs="tag"), on_gpu.predict(sentences, probs="tag"), strict=True
    ):
        assert gpu.tags == cpu.tags
        assert gpu.probability == pytest.approx(cpu.probability, abs=1e-4)
        assert gpu.token_probs == pytest.approx(cpu.token_probs, abs=1e-4)
