"""CRF kernel speed against pytorch-crf, measured in one process on the same inputs.

Reports, per shape, the median time of NLL forward+backward and of Viterbi decoding for crftag's
CRF and for pytorch-crf (the reference), and their ratio. Values are checked to agree first.

    python benchmarks/crf_kernels.py [--threads 2] [--repeats 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import torch
import torchcrf

from crftag.crf.crf import CRF
from crftag.crf.kernels import compiled_kernels_available

SHAPES = [  # (batch, min length, max length, tags)
    (32, 5, 40, 9),
    (32, 5, 40, 18),
    (256, 5, 60, 9),
]


def make_inputs(batch, low, high, num_tags, seed=0):
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(low, high + 1, (batch,), generator=generator)
    lengths[0] = high
    mask = torch.arange(high).unsqueeze(0) < lengths.unsqueeze(1)
    emissions = torch.randn(batch, high, num_tags, generator=generator)
    tags = torch.randint(0, num_tags, (batch, high), generator=generator)
    return emissions, tags, mask


def viterbi_kernel() -> str:
    """Which CPU Viterbi this install decodes with; recorded beside every decode figure."""
    return "compiled (crftag/crf/_compiled.c)" if compiled_kernels_available() else "NumPy loop"


def _seconds(function):
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def median_seconds(function, repeats):
    function()  # warm-up
    return statistics.median(_seconds(function) for _ in range(repeats))


def paired_seconds(first, second, repeats):
    """(median time of first, median time of second, median of the per-pair ratios second /
    first), the two timed alternately after a warm-up so that a slow spell of the machine
    (they come and go on shared hardware) hits both alike."""
    first(), second()  # warm-up
    pairs = [(_seconds(first), _seconds(second)) for _ in range(repeats)]
    return (
        statistics.median(a for a, _ in pairs),
        statistics.median(b for _, b in pairs),
        statistics.median(b / a for a, b in pairs),
    )


def paired(mine, theirs, repeats):
    """:func:`paired_seconds` of crftag and the reference, as the results file names them."""
    mine_s, theirs_s, speedup = paired_seconds(mine, theirs, repeats)
    return {"crftag_s": mine_s, "pytorch_crf_s": theirs_s, "speedup": speedup}


def bench_shape(batch, low, high, num_tags, repeats):
    emissions, tags, mask = make_inputs(batch, low, high, num_tags)
    reference = torchcrf.CRF(num_tags, batch_first=True)
    ours = CRF(num_tags)
    with torch.no_grad():
        ours.transitions.copy_(reference.transitions)
        ours.start_transitions.copy_(reference.start_transitions)
        ours.end_transitions.copy_(reference.end_transitions)
    mask_u8 = mask.to(torch.uint8)
    ours_nll = ours.nll(emissions, tags, mask, reduction="sum")
    reference_nll = -reference(emissions, tags, mask_u8, reduction="sum")
    assert torch.allclose(ours_nll, reference_nll, rtol=1e-4), (ours_nll, reference_nll)
    assert ours.decode(emissions, mask)[0].masked_fill(~mask, -1).tolist() == [
        path + [-1] * (high - len(path)) for path in reference.decode(emissions, mask_u8)
    ]

    def ours_step():
        leaf = emissions.clone().requires_grad_(True)
        ours.nll(leaf, tags, mask, reduction="sum").backward()

    def reference_step():
        leaf = emissions.clone().requires_grad_(True)
        (-reference(leaf, tags, mask_u8, reduction="sum")).backward()

    def ours_decode():
        with torch.no_grad():
            ours.decode(emissions, mask)

    def reference_decode():
        with torch.no_grad():
            reference.decode(emissions, mask_u8)

    def ours_marginals():
        with torch.no_grad():
            ours.marginals(emissions, mask)

    result = {"shape": {"batch": batch, "lengths": [low, high], "tags": num_tags}}
    for name, mine, theirs in (
        ("nll_forward_backward", ours_step, reference_step),
        ("viterbi_decode", ours_decode, reference_decode),
    ):
        result[name] = paired(mine, theirs, repeats)
    # Marginals against our own NLL forward+backward, paired the same way.
    against_nll = paired(ours_marginals, ours_step, repeats)
    result["marginals_s"] = against_nll["crftag_s"]
    result["marginals_nll_s"] = against_nll["pytorch_crf_s"]  # the NLL f+b it alternated with
    result["marginals_over_nll"] = 1.0 / against_nll["speedup"]
    # Decoding emissions that still require grad (a model's output outside no_grad) against
    # detached ones: decoding never needs the graph, so the same kernel should run.
    with_grad = emissions.clone().requires_grad_(True)
    detached_s, grad_s, ratio = paired_seconds(
        lambda: ours.decode(emissions, mask), lambda: ours.decode(with_grad, mask), repeats
    )
    result["decode_requires_grad"] = {"detached_s": detached_s, "requires_grad_s": grad_s}
    result["decode_requires_grad"]["ratio"] = ratio
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    results = [bench_shape(*shape, args.repeats) for shape in SHAPES]
    print(f"CPU Viterbi: {viterbi_kernel()}")
    print(f"{'shape':<22}{'nll f+b speedup':>16}{'decode speedup':>16}{'marginals/nll':>15}")
    for r in results:
        s = r["shape"]
        label = f"B={s['batch']} T<={s['lengths'][1]} K={s['tags']}"
        nll, decode = r["nll_forward_backward"], r["viterbi_decode"]
        print(
            f"{label:<22}{nll['speedup']:>15.2f}x{decode['speedup']:>15.2f}x"
            f"{r['marginals_over_nll']:>14.2f}x"
        )
    if args.json:
        machine = {
            "cpu": platform.processor() or platform.machine(),
            "threads": args.threads,
            "torch": torch.__version__,
            "viterbi_kernel": viterbi_kernel(),
        }
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"machine": machine, "results": results}, handle, indent=2)


if __name__ == "__main__":
    main()
