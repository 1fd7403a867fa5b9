"""What `model.char_lm` costs in tagging speed: the sample recipe (configs/sample.yaml)
trained for one epoch without and with each `crftag pretrain` directory given as
`model.char_lm`, each tagging the same text with torch and with its NumPy export, in one run.

    python benchmarks/char_lm_speed.py DIR... [--text FILE]
        [--record] [--json PATH]

Writes runs/bench/char_lm_speed.json; --record replaces benchmarks/results/char_lm_speed.json
(benchmarks/output.py).

FILE holds one tokenized sentence a line (default: the words of data/ner_sample.test.conll).
Each path's two models are timed alternately, `predict_files` in-process (start-up excluded),
after a warm-up; the figures are medians of 3 pairs, as benchmarks/runtime_speed.py times them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

import output  # noqa: E402  (benchmarks/output.py, beside this script)
from crf_kernels import paired_seconds  # noqa: E402
from runtime_speed import tagging_run  # noqa: E402

SAMPLE = os.path.join(ROOT, "data", "ner_sample.test.conll")


def trained(directory: str, pretrained: str | None) -> tuple[str, str]:
    """(run directory, NumPy export) of the sample recipe, one epoch, with ``pretrained``."""
    from crftag.modelfiles.checkpoint import export_arrays, load_model

    name = f"with-{len(os.listdir(directory))}" if pretrained else "without"
    run = os.path.join(directory, name)
    settings = ["--set", "train.epochs=1", "--device", "cpu", "--quiet"]
    if pretrained:
        settings += ["--set", f"model.char_lm={os.path.abspath(pretrained)}"]
    command = [sys.executable, "-m", "crftag", "train", "configs/sample.yaml", "-o", run]
    subprocess.run([*command, *settings], cwd=ROOT, check=True, capture_output=True)
    exported = run + ".npz"
    export_arrays(exported, load_model(run))
    return run, exported


def sentences_file(text: str | None, directory: str) -> tuple[str, int, int]:
    """(file of one sentence a line, sentences, tokens)."""
    from crftag.data.conll import ColumnSpec, read_corpus

    if text is None:
        sentences = [list(s.tokens) for s in read_corpus(SAMPLE, ColumnSpec())]
        text = os.path.join(directory, "sentences.txt")
        with open(text, "w", encoding="utf-8") as handle:
            handle.writelines(" ".join(sentence) + "\n" for sentence in sentences)
    with open(text, encoding="utf-8") as handle:
        lines = [line.split() for line in handle if line.strip()]
    return text, len(lines), sum(map(len, lines))


def measure(directories: list[str], text: str | None) -> dict:
    import torch

    from crftag.inference.loading import load
    from crftag.modelfiles.char_lm_files import load_char_lm

    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory() as directory:
        source, sentences, tokens = sentences_file(text, directory)
        without = trained(directory, None)
        report = {"sentences": sentences, "tokens": tokens, "pretrained": []}
        for pretrained_dir in directories:
            pretrained = load_char_lm(pretrained_dir)
            with_lm = trained(directory, pretrained_dir)
            row = {"key": "char_lm", "hidden_size": pretrained.settings["hidden_size"]}
            # (checkpoint, export) of each: crftag.load runs the one on torch, the other on NumPy
            for name, index in (("torch", 0), ("numpy", 1)):
                plain_s, lm_s, ratio = paired_seconds(
                    tagging_run(load(without[index], "cpu"), source),
                    tagging_run(load(with_lm[index], "cpu"), source),
                    3,
                )
                row[name] = {
                    "tokens_per_s_without": tokens / plain_s,
                    "tokens_per_s_with": tokens / lm_s,
                    "slowdown": ratio,  # seconds with the pretrained model / seconds without
                }
            report["pretrained"].append(row)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directories", nargs="+", help="crftag pretrain directories.")
    parser.add_argument("--text", help="One tokenized sentence a line.")
    parser.add_argument("--json", help="write here instead (default: see --record)")
    output.add_record_option(parser)
    options = parser.parse_args()
    options.json = options.json or output.result_path("char_lm_speed.json", options.record)
    report = measure(options.directories, options.text)
    for row in report["pretrained"]:
        for name in ("torch", "numpy"):
            figures = row[name]
            print(
                f"{row['key']:9}  hidden {row['hidden_size']:4}  {name:6}  without "
                f"{figures['tokens_per_s_without']:9,.0f} tok/s  with "
                f"{figures['tokens_per_s_with']:9,.0f} tok/s  {figures['slowdown']:.2f}x the time"
            )
    with open(options.json, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2)
        handle.write("\n")


if __name__ == "__main__":
    main()
