"""Where a training step of a recipe spends its time: torch.profiler over crftag's own
train_step, on the CPU or a CUDA device.

    python benchmarks/gpu_profile.py [CONFIG] [--device cpu|cuda] [--set KEY=VALUE ...]
        [--steps 8] [--rows 25] [--trace runs/bench/trace.json]

(configs/conll03_gpu.yaml on a CPU: ``--set train.amp=false``.)

The run is set up as ``crftag train`` sets it up (start_run: vocabularies, GloVe, the model, the
optimizer); the first batches of epoch 1 are built as the loop builds them (training_batch, then
``Batch.to``) and stepped once untimed, then ``--steps`` of them run under the profiler. The
table of the busiest operations (self time, on the device's own clock for CUDA) goes to stdout,
with the padding the batches carried, the time building a batch took, and the host-device
synchronisations counted.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from crftag.config import load_config  # noqa: E402
from crftag.training.checks import check_config  # noqa: E402
from crftag.training.corpus import read_training_files  # noqa: E402
from crftag.training.setup import start_run  # noqa: E402
from crftag.training.step import epoch_batches, train_step, training_batch  # noqa: E402

DEFAULT_CONFIG = os.path.join(ROOT, "configs", "conll03_gpu.yaml")

# Operations whose presence in a step means the host waited for the device.
SYNC_OPS = ("aten::item", "aten::_local_scalar_dense", "cudaStreamSynchronize", "cudaMemcpy")


def step_batches(config, device: torch.device, count: int):
    """The run as training sets it up, the first ``count`` batches of its first epoch, and the
    seconds building one took (on the CPU, as the training loop builds them)."""
    run = start_run(config, read_training_files(config), device=device, show_progress=False)
    order = epoch_batches(
        run.training,
        config.train.batch_size,
        run.batch_order,
        whole_documents=config.model.document_context,
        sort_documents=config.train.sort_documents,
    )
    started = time.perf_counter()
    batches = [
        training_batch(
            run.training,
            rows,
            document_context=config.model.document_context,
            singletons=run.singletons,
            word_dropout=config.train.word_dropout,
        )
        for rows in order[:count]
    ]
    return run, batches, (time.perf_counter() - started) / len(batches)


def epoch_padding(run, config, sort_documents: bool) -> float:
    """Padded positions over all positions of a whole epoch's (B, T) grids, the epoch's batches
    packed as training packs them, documents sorted by longest sentence or not."""
    import random

    lengths = run.training.lengths
    order = epoch_batches(
        run.training,
        config.train.batch_size,
        random.Random(config.train.seed),
        whole_documents=config.model.document_context,
        sort_documents=sort_documents,
    )
    real = sum(lengths)
    grid = sum(len(rows) * max(lengths[i] for i in rows) for rows in order)
    return 1.0 - real / grid


def padding_share(batches) -> float:
    """Padded positions over all positions of the batches' (B, T) grids."""
    real = sum(int(batch.mask.sum()) for batch in batches)
    total = sum(batch.mask.numel() for batch in batches)
    return 1.0 - real / total


def profile_steps(config, device: torch.device, steps: int, trace: str | None = None) -> dict:
    """Profile ``steps`` training steps after one untimed; the profiler and a summary."""
    run, batches, build_seconds = step_batches(config, device, steps + 1)
    run.model.train()
    train_step(run.network, run.optimizer, batches[0].to(device), config.train)
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
        torch.cuda.synchronize()
    started = time.perf_counter()
    with profile(activities=activities) as profiler:
        for batch in batches[1:]:
            train_step(run.network, run.optimizer, batch.to(device), config.train)
        if device.type == "cuda":
            torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    if trace:
        os.makedirs(os.path.dirname(os.path.abspath(trace)), exist_ok=True)
        profiler.export_chrome_trace(trace)
    events = profiler.key_averages()
    tokens = sum(int(batch.mask.sum()) for batch in batches[1:])
    return {
        "profiler": profiler,
        "device": str(device),
        "steps": steps,
        "sentences_per_step": sum(len(batch.lengths) for batch in batches[1:]) / steps,
        "tokens_per_step": tokens / steps,
        "padding_share": padding_share(batches[1:]),
        "epoch_padding_share": {
            "documents sorted": epoch_padding(run, config, True),
            "documents in random order": epoch_padding(run, config, False),
        },
        "seconds_per_step": seconds / steps,
        "seconds_to_build_a_batch": build_seconds,
        "tokens_per_s_under_profiler": tokens / seconds,
        "syncs_per_step": {
            event.key: event.count / steps for event in events if event.key in SYNC_OPS
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="?", default=DEFAULT_CONFIG)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--rows", type=int, default=25)
    parser.add_argument("--trace", default=None, help="also write a Chrome trace here")
    arguments = parser.parse_args()
    device = torch.device(arguments.device)
    config = check_config(load_config(arguments.config, arguments.overrides))
    summary = profile_steps(config, device, arguments.steps, arguments.trace)
    profiler = summary.pop("profiler")
    sort_by = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
    print(profiler.key_averages().table(sort_by=sort_by, row_limit=arguments.rows))
    for key, value in summary.items():
        print(f"{key}: {value:.4g}" if isinstance(value, float) else f"{key}: {value}")


if __name__ == "__main__":
    main()
