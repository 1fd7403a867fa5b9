"""The GPU against the CPU, measured in one run on a machine with a CUDA device.

    python benchmarks/gpu.py [--json benchmarks/results/gpu.json] [--skip crf,train,predict]

1. The CRF: log Z forward and backward and Viterbi, the sequential loop (crftag/crf/kernels.py's
   torch steps, viterbi_torch) against the parallel scan (crftag/crf/scan.py), at T = 50 to
   5,000, on the GPU; each timed as the median of repeated calls after a warm-up, synchronised,
   with the two answers compared (log Z's largest relative difference, share of equal paths).
2. Training: one epoch of `crftag train configs/conll03.yaml` on the GPU with bfloat16 autocast
   off and on, and on the CPU with 2 threads, tokens/s and sentences/s from the epoch log.
3. Predict: `predict_files` (read, tag, write CoNLL) on eng.testb's tokens in-process, start-up
   excluded, with the model the GPU run trained, on the GPU (batch 64 and 512) and the CPU.

The corpora are read from ../shared/data, as the config says; the run directories go to
runs/gpu.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from predict_speed import write_tokens  # noqa: E402

from crftag.crf import kernels, scan  # noqa: E402
from crftag.crf.posteriors import path_scores_arrays  # noqa: E402
from crftag.crf.viterbi import viterbi, viterbi_torch  # noqa: E402
from crftag.data.conll import ColumnSpec, read_corpus  # noqa: E402

CONFIG = os.path.join(ROOT, "configs", "conll03.yaml")
TESTB = os.path.join(ROOT, "..", "shared", "data", "conll2003", "eng.testb")
TRAIN = os.path.join(ROOT, "..", "shared", "data", "conll2003", "eng.train")
RUNS = os.path.join(ROOT, "runs", "gpu")
LENGTHS = (4, 8, 16, 32, 50, 100, 200, 500, 1000, 5000)


def timed(function, device, seconds=0.5, at_least=5):
    """Median seconds of one call, after two untimed calls, synchronising the device."""
    for _ in range(2):
        function()
    times = []
    started = time.perf_counter()
    while len(times) < at_least or time.perf_counter() - started < seconds:
        if device.type == "cuda":
            torch.cuda.synchronize()
        begin = time.perf_counter()
        function()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - begin)
        if len(times) >= 200:
            break
    return statistics.median(times)


def crf_case(batch_size, length, num_tags, device):
    """Loop against scan for one shape: seconds and agreement."""
    generator = torch.Generator().manual_seed(length)
    emissions = (3 * torch.randn(batch_size, length, num_tags, generator=generator)).to(device)
    lengths = torch.randint(length // 2, length + 1, (batch_size,), generator=generator)
    lengths[0] = length
    mask = (torch.arange(length).unsqueeze(0) < lengths.unsqueeze(1)).to(device)
    potentials = [
        torch.randn(*shape, generator=generator).to(device)
        for shape in ((num_tags, num_tags), (num_tags,), (num_tags,))
    ]
    leaf = emissions.clone().requires_grad_()
    params = [p.clone().requires_grad_() for p in potentials]

    def loop_nll():
        kernels._LogPartition.apply(leaf, mask, *params).sum().backward()

    def scan_nll():
        scan.log_partition(leaf, mask, *params).sum().backward()

    with torch.no_grad():
        loop_log_z = kernels._LogPartition.apply(emissions, mask, *potentials)
        scan_log_z = scan.log_partition(emissions, mask, *potentials)
        loop_tags, _ = viterbi_torch(emissions, mask, *potentials)
    scan_tags, _ = scan.viterbi(emissions, mask, *potentials)
    return {
        "batch_size": batch_size,
        "length": length,
        "num_tags": num_tags,
        "loop_log_z_s": timed(loop_nll, device),
        "scan_log_z_s": timed(scan_nll, device),
        "loop_viterbi_s": timed(lambda: viterbi_torch(emissions, mask, *potentials), device),
        "scan_viterbi_s": timed(lambda: scan.viterbi(emissions, mask, *potentials), device),
        "log_z_max_relative_difference": float(
            ((scan_log_z - loop_log_z).abs() / loop_log_z.abs()).max()
        ),
        "equal_paths": float((scan_tags == loop_tags).all(1).float().mean()),
        **optimality_gaps(emissions, mask, potentials, loop=loop_tags, scan=scan_tags),
    }


def optimality_gaps(emissions, mask, potentials, **paths):
    """For each method's float32 paths, the largest amount by which its float64 score falls short
    of the float64 Viterbi's best, beside float32's rounding at the largest score: a path that
    differs from another method's but falls short by less than the rounding is as optimal."""
    as_float64 = [tensor.detach().double().cpu() for tensor in (emissions, *potentials)]
    lengths = mask.sum(1).cpu().numpy()
    _, best = viterbi(as_float64[0], mask.cpu(), *as_float64[1:])
    arrays = [tensor.numpy() for tensor in as_float64]
    gaps = {}
    for name, tags in paths.items():
        chosen = path_scores_arrays(arrays[0], lengths, *arrays[1:], tags.cpu().numpy()[:, None])
        gaps[f"{name}_path_shortfall"] = float((best.numpy() - chosen[:, 0]).max())
    gaps["float32_rounding_at_best"] = float(best.abs().max()) * torch.finfo(torch.float32).eps
    return gaps


def crf_section(device):
    cases = []
    for num_tags in (9, 17):
        for batch_size in (1, 32):
            for length in LENGTHS:
                case = crf_case(batch_size, length, num_tags, device)
                print(json.dumps(case), file=sys.stderr, flush=True)
                cases.append(case)
    return cases


# `crftag train` with the CRF's sequential loop on the GPU whatever the length: the rule's
# threshold raised past any sentence before the CLI runs.
LOOP_ONLY = (
    "import sys; from crftag.crf import scan; "
    "scan.MIN_SCAN_LENGTH = scan.MIN_DECODE_SCAN_LENGTH = sys.maxsize; "
    "from crftag.cli import main; main()"
)


def train_once(name, device, extra, threads=None, loop_only=False):
    """One epoch of configs/conll03.yaml; its epoch log's figures."""
    output = os.path.join(RUNS, name)
    command = [
        sys.executable,
        *(["-c", LOOP_ONLY] if loop_only else ["-m", "crftag"]),
        "train",
        CONFIG,
        "--seed",
        "1",
        "-q",
        "--device",
        device,
        "-o",
        output,
        "--overwrite",
        "--set",
        "train.epochs=1",
        *extra,
    ]
    environment = dict(os.environ)
    if threads:
        environment["OMP_NUM_THREADS"] = str(threads)
        command = ["taskset", "-c", ",".join(str(i) for i in range(threads)), *command]
    started = time.perf_counter()
    subprocess.run(command, check=True, env=environment, stdout=subprocess.DEVNULL)
    with open(os.path.join(output, "metrics.json"), encoding="utf-8") as handle:
        metrics = json.load(handle)
    epoch = metrics["history"][0]
    sentences, tokens = corpus_size(TRAIN)
    return {
        "sentences_per_s": epoch["tokens_per_second"] * sentences / tokens,
        "name": name,
        "device": metrics["device"],
        "tokens_per_s": epoch["tokens_per_second"],
        "epoch_s": epoch["seconds"],
        "wall_s": time.perf_counter() - started,
        "dev_after_one_epoch": epoch["dev_score"],
    }


def train_section():
    rows = []
    for name, device, extra, threads, loop_only in (
        ("cuda-fp32", "cuda", [], None, False),
        ("cuda-fp32-crf-loop", "cuda", [], None, True),
        ("cuda-bf16", "cuda", ["--set", "train.amp=true"], None, False),
        ("cpu-2-threads", "cpu", [], 2, False),
        # The recipe's batch of 10 leaves a GPU idle between small kernels; batches of 64 show
        # what it does with more work per step (speed only: the recipe was tuned at 10).
        ("cuda-fp32-batch-64", "cuda", ["--set", "train.batch_size=64"], None, False),
        (
            "cuda-bf16-batch-64",
            "cuda",
            ["--set", "train.batch_size=64", "--set", "train.amp=true"],
            None,
            False,
        ),
        ("cpu-2-threads-batch-64", "cpu", ["--set", "train.batch_size=64"], 2, False),
    ):
        rows.append(train_once(name, device, extra, threads, loop_only))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def corpus_size(path):
    """(sentences, tokens) of a CoNLL-2003 file."""
    sentences = read_corpus(path, ColumnSpec())
    return len(sentences), sum(len(sentence.tokens) for sentence in sentences)


def predict_section(model_dir):
    from crftag.inference.loading import load
    from crftag.inference.streaming import predict_files

    source = os.path.join(RUNS, "testb.tokens")
    sentences = write_tokens(source)
    count = sum(len(tokens) for tokens in sentences)
    rows = []
    for device, batch_size in (("cuda", 64), ("cuda", 512), ("cpu", 64)):
        tagger = load(model_dir, device)
        if device == "cpu":
            torch.set_num_threads(2)

        def run(tagger=tagger, batch_size=batch_size):
            with open(os.devnull, "w") as sink:
                predict_files(
                    tagger,
                    [source],
                    input_format="tokens",
                    output_format="conll",
                    batch_size=batch_size,
                    output=sink,
                )

        seconds = timed(run, torch.device(device), seconds=3, at_least=3)
        rows.append(
            {
                "device": device,
                "batch_size": batch_size,
                "tokens": count,
                "sentences": len(sentences),
                "seconds": seconds,
                "tokens_per_s": count / seconds,
                "sentences_per_s": len(sentences) / seconds,
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default=os.path.join(HERE, "results", "gpu.json"))
    parser.add_argument("--skip", default="", help="comma-separated sections to leave out")
    arguments = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("benchmarks/gpu.py: no CUDA device here")
    skip = set(filter(None, arguments.skip.split(",")))
    os.makedirs(RUNS, exist_ok=True)
    device = torch.device("cuda")
    report = {
        "machine": {
            "gpu": torch.cuda.get_device_name(0),
            "torch": torch.__version__,
            "cpu_cores": os.cpu_count(),
        },
        "compiled_kernels": kernels.compiled_kernels_available(),
    }
    sections = {
        "crf": lambda: crf_section(device),
        "train": train_section,
        "predict": lambda: predict_section(os.path.join(RUNS, "cuda-fp32")),
    }
    for name, measure in sections.items():
        if name in skip:
            continue
        report[name] = measure()
        with open(arguments.json, "w", encoding="utf-8") as handle:  # each section as it ends
            json.dump(report, handle, indent=2)
            handle.write("\n")


if __name__ == "__main__":
    main()
