"""The public switch of the CRF kernel: CRFTAG_CRF_KERNEL for a process, use_kernel for a block."""

import os
import subprocess
import sys

import pytest
import torch

from crftag.crf import kernels, scan
from crftag.crf.choice import KERNELS, VARIABLE, compiled_loops, forced_kernel, use_kernel

SHOW = (
    "from crftag.crf.choice import compiled_loops, forced_kernel\n"
    "print(forced_kernel(), compiled_loops() is None)"
)


def run_with(value: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, VARIABLE: value}
    return subprocess.run(
        [sys.executable, "-c", SHOW], env=environment, capture_output=True, text=True, check=True
    )


@pytest.mark.parametrize("name", ["numpy", "torch", "scan"])
def test_the_environment_names_a_kernel_for_the_process(name):
    done = run_with(name)
    assert done.stdout.split() == [name, "True"] and done.stderr == ""


def test_an_unknown_name_in_the_environment_is_one_warning_and_the_default():
    done = run_with("sse9")
    assert done.stdout.split() == ["None", str(kernels.COMPILED is None)]
    assert done.stderr == (
        f"crftag: warning: {VARIABLE}=sse9 is not a CRF kernel ({', '.join(KERNELS)}); "
        "the default choice runs\n"
    )


def test_use_kernel_switches_for_the_block_and_back():
    assert forced_kernel() is None
    with use_kernel("scan"):
        assert forced_kernel() == "scan" and compiled_loops() is None
        assert scan.preferred(torch.zeros(2, 3, 4))  # the scan on the CPU too
        assert kernels._steps_for(torch.zeros(1)) is kernels._NumpySteps
    with use_kernel("torch"):
        assert kernels._steps_for(torch.zeros(1)) is kernels._TorchSteps
    assert forced_kernel() is None and not scan.preferred(torch.zeros(2, 3, 4))


def test_use_kernel_refuses_an_unknown_name():
    with pytest.raises(ValueError, match="expected a CRF kernel"), use_kernel("fast"):
        pass
    assert forced_kernel() is None


@pytest.mark.parametrize("name", ["numpy", "torch", "scan"])
def test_every_kernel_decodes_and_scores_alike(name):
    generator = torch.Generator().manual_seed(4)
    emissions = torch.randn(3, 6, 5, generator=generator, dtype=torch.float64)
    mask = torch.arange(6) < torch.tensor([[6], [2], [4]])
    moves = [
        torch.randn(*shape, generator=generator, dtype=torch.float64)
        for shape in ((5, 5), (5,), (5,))
    ]
    from crftag.crf.viterbi import viterbi

    expected = kernels.log_partition(emissions, mask, *moves), viterbi(emissions, mask, *moves)
    with use_kernel(name):
        log_z, (tags, scores) = (
            kernels.log_partition(emissions, mask, *moves),
            viterbi(emissions, mask, *moves),
        )
    torch.testing.assert_close(log_z, expected[0])
    assert torch.equal(tags, expected[1][0])
    torch.testing.assert_close(scores, expected[1][1])
