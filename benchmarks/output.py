"""Where a benchmark writes its results: runs/bench/ by default, benchmarks/results/ on --record.

The files in benchmarks/results/ are the committed measurements that README.md and docs/ quote
(tests/benchmarks/test_quoted_figures.py checks every quotation against them), so a benchmark
run on any machine must not replace them by accident. Every benchmark that writes a results file
follows one convention:

    parser = argparse.ArgumentParser(...)
    output.add_record_option(parser)
    args = parser.parse_args()
    path = output.result_path("speed.json", args.record)   # where to write
    base = output.previous_path("speed.json", args.record)  # rows to keep, if it merges

Without ``--record`` the file goes to runs/bench/NAME (ignored by git); with ``--record`` it
replaces benchmarks/results/NAME, and the docs that quote it are updated in the same commit
(``make bench-... RECORD=1`` passes ``--record``). An explicit output path given on a script's
own command line (``--json PATH``) still wins over both.
"""

from __future__ import annotations

import argparse
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
SCRATCH = os.path.join(ROOT, "runs", "bench")


def add_record_option(parser: argparse.ArgumentParser) -> None:
    """``--record``: replace the committed file in benchmarks/results/ instead of runs/bench/."""
    parser.add_argument(
        "--record",
        action="store_true",
        help="replace the committed benchmarks/results/ file (default: write under runs/bench/); "
        "update the docs that quote it in the same commit",
    )


def results_dir(record: bool) -> str:
    """The folder a run writes its results into, created if missing."""
    folder = RESULTS if record else SCRATCH
    os.makedirs(folder, exist_ok=True)
    return folder


def result_path(name: str, record: bool) -> str:
    """Where a run writes the results file ``name`` (e.g. ``"speed.json"``)."""
    return os.path.join(results_dir(record), name)


def previous_path(name: str, record: bool) -> str:
    """The file whose rows a merging benchmark keeps: the run's own earlier output where one
    exists, else the committed one (so an unrecorded run starts from the recorded rows)."""
    path = os.path.join(RESULTS if record else SCRATCH, name)
    return path if os.path.exists(path) else os.path.join(RESULTS, name)


def merge_entries(name: str, entries: dict, record: bool, json_path: str | None = None) -> str:
    """``entries`` written into the results file ``name`` over the entries it already holds
    (``previous_path``'s), the others kept; ``json_path`` (a script's ``--json``) wins over both
    places. Returns the path written."""
    path = json_path or result_path(name, record)
    previous = json_path or previous_path(name, record)
    results = {}
    if os.path.exists(previous):
        with open(previous, encoding="utf-8") as handle:
            results = json.load(handle)
    results |= entries
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(results, indent=2) + "\n")
    return path
