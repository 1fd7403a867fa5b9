"""Accuracy on the real corpora: train each config with several seeds, test each best-on-dev
model, and report per seed, mean and standard deviation.

    python benchmarks/accuracy.py [--seeds 1 2 3] [--configs configs/conll03.yaml ...]
                                  [--runs runs/accuracy] [--device auto] [--merge]
                                  [--record] [--json PATH] [--results-md PATH]

By default: configs/conll03.yaml and configs/ud_ewt_upos.yaml with seeds 1, 2 and 3, the feature
CRF (configs/conll03_features.yaml) with seed 1, and the CRFsuite baseline on the same split when
python-crfsuite is installed. Writes runs/bench/accuracy.json and prints the accuracy table;
with --record it replaces benchmarks/results/accuracy.json (benchmarks/output.py) and regenerates
benchmarks/RESULTS.md from the results folder (results_table.py).
A run directory that already holds a finished run (metrics.json) is reused, so an
interrupted benchmark continues where it stopped; --merge keeps the JSON's entries for the configs
not named (re-benchmarking one recipe without re-training the others). Hours of CPU time: never
part of `make test`.

The bundled models are not picked from these runs: `make models` trains configs/en-ner.yaml and
configs/en-pos.yaml (the same recipes on train + dev) with one pre-declared seed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import output  # noqa: E402
import results_table  # noqa: E402

DEFAULT_CONFIGS = ["configs/conll03.yaml", "configs/ud_ewt_upos.yaml"]
# Configs trained with one seed only in the default run (minutes, and deterministic enough).
SINGLE_SEED = {"configs/conll03_features.yaml"}


def run_directory(config: str, seed: int, runs: str) -> str:
    name = os.path.splitext(os.path.basename(config))[0]
    return os.path.join(runs, f"{name}-seed{seed}")


def run(config: str, seed: int, runs: str, device: str) -> dict:
    directory = run_directory(config, seed, runs)
    metrics_path = os.path.join(directory, "metrics.json")
    if not os.path.exists(metrics_path):
        command = [
            sys.executable,
            "-m",
            "crftag",
            "train",
            config,
            "-o",
            directory,
            "--seed",
            str(seed),
            "--device",
            device,
            "-q",
        ]
        if os.path.exists(os.path.join(directory, "resume.pt")):
            command = [
                sys.executable,
                "-m",
                "crftag",
                "train",
                "--resume",
                directory,
                "--device",
                device,
                "-q",
            ]
        print(" ".join(command), file=sys.stderr, flush=True)
        subprocess.run(command, check=True, cwd=ROOT)
    with open(metrics_path, encoding="utf-8") as handle:
        metrics = json.load(handle)
    return {
        "seed": seed,
        "dev": metrics["dev"],
        "test": metrics.get("test"),
        "epochs": metrics["epochs"],
        "best_epoch": metrics["best_epoch"],
        "train_seconds": metrics["train_seconds"],
        "tokens_per_second": metrics["tokens_per_second"],
        "device": metrics["device"],
    }


def summarise(values: list[float]) -> dict:
    return {
        "mean": statistics.mean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "min": min(values),
        "max": max(values),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="+", default=[*DEFAULT_CONFIGS, *sorted(SINGLE_SEED)])
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    parser.add_argument("--runs", default=os.path.join(ROOT, "runs", "accuracy"))
    parser.add_argument("--device", default="auto")
    parser.add_argument("--json", help="write here instead (default: see --record)")
    parser.add_argument(
        "--results-md",
        help="Markdown file regenerated from the JSON files beside --json "
        "(default with --record: benchmarks/RESULTS.md; without, none)",
    )
    output.add_record_option(parser)
    parser.add_argument(
        "--merge",
        action="store_true",
        help="keep the existing JSON's entries for configs not named in --configs (and its "
        "CRFsuite baseline), so one recipe can be re-benchmarked without re-training the others",
    )
    args = parser.parse_args()
    previous_json = args.json or output.previous_path("accuracy.json", args.record)
    args.json = args.json or output.result_path("accuracy.json", args.record)
    if args.record and not args.results_md:
        args.results_md = results_table.OUTPUT
    report = {
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "torch": torch.__version__,
        },
        "results": {},
    }
    if args.merge and os.path.exists(previous_json):
        # Earlier entries keep their own per-seed figures; only the configs named now are re-run.
        with open(previous_json, encoding="utf-8") as handle:
            previous = json.load(handle)
        report["results"] = previous.get("results", {})
        if "crfsuite_baseline" in previous:
            report["crfsuite_baseline"] = previous["crfsuite_baseline"]
    for config in args.configs:
        seed_list = args.seeds[:1] if config in SINGLE_SEED else args.seeds
        seeds = [run(config, seed, args.runs, args.device) for seed in seed_list]
        report["results"][config] = {
            "seeds": seeds,
            "dev": summarise([s["dev"] for s in seeds]),
            "test": summarise([s["test"] for s in seeds if s["test"] is not None]),
        }
    if any(config.endswith("conll03_features.yaml") for config in args.configs):
        report["crfsuite_baseline"] = crfsuite_baseline(args.record)
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2)
        handle.write("\n")
    if args.results_md:
        results_table.write(os.path.dirname(os.path.abspath(args.json)), args.results_md)
    print("\n".join(results_table.accuracy_table(report)))


def crfsuite_baseline(record: bool) -> dict | None:
    """benchmarks/crfsuite_baseline.py's result (reused when its JSON exists, like finished
    runs), or None without python-crfsuite."""
    previous = output.previous_path("crfsuite_baseline.json", record)
    if os.path.exists(previous):
        with open(previous, encoding="utf-8") as handle:
            return json.load(handle)
    path = output.result_path("crfsuite_baseline.json", record)
    try:
        import pycrfsuite  # noqa: F401
    except ImportError:
        print("python-crfsuite not installed: no CRFsuite baseline", file=sys.stderr)
        return None
    subprocess.run(
        [sys.executable, os.path.join(HERE, "crfsuite_baseline.py"), "--json", path],
        check=True,
        cwd=ROOT,
    )
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


if __name__ == "__main__":
    main()
