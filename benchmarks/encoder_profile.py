"""Where an exported encoder model's tagging time goes: the share spent inside ONNX Runtime's
run (the rest is crftag's: tokenising, windows, the CRF's decoding), and ONNX Runtime's own
kernel time by operator type, from its profiler.

    python benchmarks/encoder_profile.py [--model runs/bench-encoder/onnx-int8.onnx]
        [--file data/ner_sample.test.conll] [--runs 2] [--threads 2] [--top 12]

The model is tagged as `crftag predict` tags it (``crftag.load``), the file's sentences once
untimed and then ``--runs`` times, with ONNX Runtime's profiler on for all of them. Prints one
JSON object: the tokens/s, the share of the timed runs' wall time inside ONNX Runtime's run, and
the ``--top`` operator types by their share of the kernel time (the rest summed as "other").
The profiler's own cost slows the runs a little, so the tokens/s here is not a speed to quote
(benchmarks/encoder_speed.py measures those); the shares are what this is for.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from crftag.data.conll import ColumnSpec, read_corpus  # noqa: E402
from crftag.inference.onnx_tagger import inference_options  # noqa: E402


class TimedRunner:
    """An ONNX Runtime InferenceSession whose ``run`` calls are timed, their seconds summed."""

    def __init__(self, inference) -> None:
        self.inference, self.seconds = inference, 0.0

    def run(self, outputs, feeds):
        started = time.perf_counter()
        try:
            return self.inference.run(outputs, feeds)
        finally:
            self.seconds += time.perf_counter() - started


def profiling_runner(path: str, threads: int, folder: str) -> TimedRunner:
    """``path`` loaded as crftag loads it (its InferenceSession options), the profiler on."""
    import onnxruntime

    options = inference_options(onnxruntime, threads)
    options.enable_profiling = True
    options.profile_file_prefix = os.path.join(folder, "profile")
    providers = ["CPUExecutionProvider"]
    return TimedRunner(onnxruntime.InferenceSession(path, options, providers=providers))


def kernel_shares(profile_path: str, top: int) -> dict[str, float]:
    """Each operator type's share of the kernel time in an ONNX Runtime profile, the ``top``
    largest by name and the rest as ``other``."""
    with open(profile_path, encoding="utf-8") as handle:
        events = json.load(handle)
    by_type = collections.Counter()
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            by_type[event["args"]["op_name"]] += event["dur"]
    total = sum(by_type.values()) or 1
    shares = {name: round(dur / total, 4) for name, dur in by_type.most_common(top)}
    rest = total - sum(dur for _, dur in by_type.most_common(top))
    if rest:
        shares["other"] = round(rest / total, 4)
    return shares


def profile(model: str, sentences: list[list[str]], runs: int, threads: int, top: int) -> dict:
    """The tagging's tokens/s, its share inside ONNX Runtime, and the kernel time's shares."""
    import crftag

    tagger = crftag.load(model)
    with tempfile.TemporaryDirectory() as folder:
        runner = profiling_runner(model, threads, folder)
        tagger.runner = runner
        tagger.tag(sentences)  # untimed: first-run costs
        runner.seconds = 0.0
        started = time.perf_counter()
        for _ in range(runs):
            tagger.tag(sentences)
        wall = time.perf_counter() - started
        shares = kernel_shares(runner.inference.end_profiling(), top)
    tokens = runs * sum(map(len, sentences))
    return {
        "model": model,
        "sentences": len(sentences),
        "threads": threads,
        "tokens_per_second": round(tokens / wall),
        "share_in_onnx_runtime": round(runner.seconds / wall, 4),
        "kernel_time_by_operator": shares,
        "load_average": round(os.getloadavg()[0], 2),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="runs/bench-encoder/onnx-int8.onnx")
    parser.add_argument("--file", default="data/ner_sample.test.conll")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--top", type=int, default=12)
    options = parser.parse_args(argv)
    sentences = [list(s.tokens) for s in read_corpus(options.file, ColumnSpec())]
    found = profile(options.model, sentences, options.runs, options.threads, options.top)
    print(json.dumps(found), flush=True)


if __name__ == "__main__":
    main()
