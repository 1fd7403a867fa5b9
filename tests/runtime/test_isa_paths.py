"""The compiled BiLSTM loops' instruction-set paths (crftag/runtime/_lstm.c) against each other:
avx2 and avx512 give the same bits, generic agrees with them to a few float roundings (it
rounds each product and sum apart where they fuse them), and CRFTAG_ISA forces a path."""

import os
import subprocess
import sys

import pytest
import torch
from torch import nn

from crftag.nn.fused_lstm import bilstm_layer
from tests.nn.test_fused_lstm import gradients, layer_weights

pytestmark = pytest.mark.usefixtures("compiled_loops")

# generic against avx2, relative to the largest magnitude of each output: measured at most
# 3.7e-7 (about six float roundings) on the outputs and gradients below, H from 25 to 200.
GENERIC_TOLERANCE = 1e-6


def lstm_module():
    from crftag.runtime import _lstm

    return _lstm


def outputs_on(path: str, hidden: int) -> list[torch.Tensor]:
    """The layer's outputs and every gradient, on one path: rows of 1 to 13 positions at a
    step reach every panel of the float product."""
    _lstm = lstm_module()
    torch.manual_seed(7)
    lstm = nn.LSTM(12, hidden, batch_first=True, bidirectional=True)
    lengths = torch.arange(13, 0, -1) * 2
    inputs = (3 * torch.randn(13, 26, 12)).requires_grad_(True)
    before = _lstm.use()
    try:
        _lstm.use(path)
        output = bilstm_layer(inputs, lengths, *layer_weights(lstm))
        return [output, *gradients(output, [inputs, *lstm.parameters()])]
    finally:
        _lstm.use(before)


def needs(*paths: str) -> None:
    missing = [path for path in paths if path not in lstm_module().available()]
    if missing:
        pytest.skip(f"this CPU does not run the {', '.join(missing)} path")


@pytest.mark.parametrize("hidden", [25, 100])
def test_avx2_and_avx512_give_the_same_bits(hidden):
    # Sixteen-float vectors add each number's products in the order eight-float ones do.
    needs("avx2", "avx512")
    eights, sixteens = outputs_on("avx2", hidden), outputs_on("avx512", hidden)
    for eight, sixteen in zip(eights, sixteens, strict=True):
        assert torch.equal(eight, sixteen)


@pytest.mark.parametrize("hidden", [25, 100, 200])
def test_generic_agrees_with_avx2_to_a_few_roundings(hidden):
    needs("avx2")
    generics, fused_ones = outputs_on("generic", hidden), outputs_on("avx2", hidden)
    for generic, fused in zip(generics, fused_ones, strict=True):
        scale = fused.abs().max().item()
        assert (generic - fused).abs().max().item() <= GENERIC_TOLERANCE * scale


def test_use_refuses_a_path_this_cpu_does_not_run():
    with pytest.raises(ValueError, match="no instruction-set path sse9"):
        lstm_module().use("sse9")
    assert lstm_module().available()[0] == "generic"


def loaded_path(value: str) -> subprocess.CompletedProcess:
    code = "from crftag.runtime import _lstm; print(_lstm.use(), _lstm.available()[-1])"
    environment = {**os.environ, "CRFTAG_ISA": value}
    return subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=True
    )


def test_crftag_isa_forces_a_path_when_the_module_loads():
    taken = loaded_path("generic")
    assert taken.stdout.split()[0] == "generic"
    assert taken.stderr == ""


def test_crftag_isa_naming_no_path_here_warns_and_takes_the_best():
    taken = loaded_path("sse9")
    chosen, best = taken.stdout.split()
    assert chosen == best
    assert taken.stderr.strip() == (
        f"crftag: warning: CRFTAG_ISA=sse9 is not an instruction-set path of this CPU; "
        f"taking {best}"
    )
